//! JSON as rt-tests and jitterdebugger write it: with `fprintf`, one key per line, and
//! with two defects real files show.
//!
//! * Strings are printed raw: `rt_write_json` (rt-tests `src/lib/rt-utils.c`) writes the
//!   command line as `"cmdline:": "%s"`, so an argument holding a double quote or a
//!   backslash makes the file invalid JSON.
//! * Averages of threads without samples are `0/0` printed with `%.2f`: `-nan` or `nan`.
//!
//! A file that parses as JSON is read as it is. One that does not is repaired line by line
//! (a string value that is not a valid JSON string is re-escaped whole, a `nan` or `inf`
//! value becomes `null`) and parsed again; the repairs are reported. Lines are kept, so
//! error positions stay those of the file.

use super::ImportError;
use serde::de::DeserializeOwned;
use std::io::{BufRead, Read};

/// Largest JSON result read: rt-tests' JSON holds one object per thread and at most a
/// million histogram entries per thread.
const MAX_BYTES: u64 = 256 << 20;

/// Reads the whole input as text.
pub(super) fn read_text(input: impl BufRead, file: &str) -> Result<String, ImportError> {
    let mut bytes = Vec::new();
    input
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ImportError::io(file, None, e))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ImportError::whole(
            file,
            "larger than 256 MiB: not a JSON result of the format named (name the right \
             format, or check the file)",
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        ImportError::at(
            file,
            line,
            "not text (invalid UTF-8): this is not a JSON result of the format named",
        )
    })
}

/// A document parsed, and the repairs it needed (one sentence each, empty for valid JSON).
pub(super) struct Parsed<T> {
    pub(super) value: T,
    pub(super) repairs: Vec<String>,
}

/// Parses `text` as `T`, repairing printf defects when it is not valid JSON.
pub(super) fn parse<T: DeserializeOwned>(
    text: &str,
    file: &str,
    what: &str,
) -> Result<Parsed<T>, ImportError> {
    let error = match serde_json::from_str(text) {
        Ok(value) => {
            return Ok(Parsed {
                value,
                repairs: Vec::new(),
            })
        }
        Err(e) => e,
    };
    if !error.is_syntax() {
        return Err(json_error(file, what, &error));
    }
    let (repaired, repairs) = repair(text);
    if repairs.is_empty() {
        return Err(json_error(file, what, &error));
    }
    match serde_json::from_str(&repaired) {
        Ok(value) => Ok(Parsed { value, repairs }),
        Err(e) => Err(json_error(file, what, &e)),
    }
}

/// The error message for a document that is not the JSON expected.
fn json_error(file: &str, what: &str, error: &serde_json::Error) -> ImportError {
    // serde_json's message ends with " at line L column C"; the line goes in front.
    let message = error.to_string();
    let message = match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    };
    let fix = if error.is_eof() {
        "the file ends early (truncated?): take it again from the tool"
    } else {
        "check that this is a complete, unedited file of the format named"
    };
    let problem = format!("not {what}: {message}; {fix}");
    match error.line() {
        0 => ImportError::whole(file, problem),
        line => ImportError::at(file, line as u64, problem),
    }
}

/// Repairs each `"key": value` line whose value is a raw string or a non-number.
fn repair(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len() + 64);
    let mut repairs = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        match repair_line(body) {
            Some((fixed, what)) => {
                repairs.push(format!("line {}: {what}", i + 1));
                out.push_str(&fixed);
            }
            None => out.push_str(body),
        }
        out.push_str(ending);
    }
    (out, repairs)
}

/// The repaired line and what was done, or `None` when the line needs nothing.
fn repair_line(line: &str) -> Option<(String, String)> {
    let start = line.find('"')?;
    if !line[..start].trim().is_empty() {
        return None;
    }
    let key_end = start + 1 + line[start + 1..].find('"')?;
    let after_key = &line[key_end + 1..];
    let colon = after_key.find(':')?;
    if !after_key[..colon].trim().is_empty() {
        return None;
    }
    let head = &line[..key_end + 1 + colon + 1];
    let key = &line[start + 1..key_end];
    let rest = &after_key[colon + 1..];
    let trimmed = rest.trim();
    let (value, comma) = match trimmed.strip_suffix(',') {
        Some(v) => (v.trim_end(), ","),
        None => (trimmed, ""),
    };
    if matches!(value, "nan" | "-nan" | "NaN" | "-NaN" | "inf" | "-inf") {
        let fixed = format!("{head} null{comma}");
        return Some((fixed, format!("\"{key}\" was {value}, read as no value")));
    }
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    if serde_json::from_str::<String>(value).is_ok() {
        return None;
    }
    let escaped = serde_json::to_string(inner).expect("a str always serialises");
    let fixed = format!("{head} {escaped}{comma}");
    Some((
        fixed,
        format!("the \"{key}\" string holds unescaped characters; read as written"),
    ))
}

/// The 1-based number of the first line at or after line `from` containing `needle`.
pub(super) fn line_of(text: &str, needle: &str, from: usize) -> Option<u64> {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains(needle))
        .map(|(i, _)| i as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn repairs_raw_quotes_and_nan() {
        let text =
            "{\n  \"cmdline:\": \"cyclictest --json=/tmp/a\"b.json -q\",\n  \"avg\": -nan\n}\n";
        let parsed: Parsed<BTreeMap<String, serde_json::Value>> = parse(text, "f", "JSON").unwrap();
        assert_eq!(
            parsed.value["cmdline:"],
            "cyclictest --json=/tmp/a\"b.json -q"
        );
        assert!(parsed.value["avg"].is_null());
        assert_eq!(parsed.repairs.len(), 2);
        assert!(parsed.repairs[0].starts_with("line 2: "));
    }

    #[test]
    fn valid_json_is_read_as_it_is() {
        let text = "{\"a\": \"x\\\\y\", \"b\": \"c\"}";
        let parsed: Parsed<BTreeMap<String, String>> = parse(text, "f", "JSON").unwrap();
        assert_eq!(parsed.value["a"], "x\\y");
        assert!(parsed.repairs.is_empty());
    }

    #[test]
    fn errors_keep_the_files_line() {
        let text = "{\n  \"a\": 1,\n  \"b\": [\n";
        let err = parse::<serde_json::Value>(text, "f.json", "cyclictest JSON")
            .err()
            .unwrap();
        assert_eq!(err.line, Some(4));
        assert!(err
            .to_string()
            .starts_with("f.json:4: not cyclictest JSON: "));
        assert!(err.to_string().contains("truncated"));
    }
}

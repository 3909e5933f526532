//! GNU `getopt_long` as rt-tests' programs call it, to read their command lines back
//! from their JSON as they read them: short options clustered (`-mp95`), values attached
//! or in the next argument, `::` values only attached, long options as `--name=value` or
//! `--name value` and abbreviated to any unique prefix, non-options skipped (GNU
//! permutes them), `--` ending the options. Plus C's `atoi` and rt-tests'
//! `parse_time_string`, which read the values.

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// Never.
    No,
    /// Always.
    Required,
    /// Only attached (`-t2`, `--threads=2`).
    Optional,
}

/// An option `getopt_long` would refuse, as rt-tests' programs would name it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum OptionError {
    /// A short option the program does not have.
    #[error("unknown option -{0}")]
    UnknownShort(char),
    /// A long option the program does not have.
    #[error("unknown option --{0}")]
    UnknownLong(String),
    /// A long option abbreviated to a prefix of several.
    #[error("--{0} is ambiguous")]
    Ambiguous(String),
    /// An option that needs a value, last on the line (`-h`, `--histogram`).
    #[error("{0} needs a value")]
    NeedsValue(String),
    /// A long option without a value given one (`--quiet=1`).
    #[error("--{0} takes no value")]
    TakesNoValue(String),
}

/// A long option: its name, its value, and the short option it acts as.
pub(super) type Long = (&'static str, Arg, char);

/// The options of `args` (without the program name), in order, as (short option,
/// value); the error names what `getopt_long` would refuse.
pub(super) fn options(
    args: &[&str],
    short: &str,
    long: &[Long],
) -> Result<Vec<(char, Option<String>)>, OptionError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        i += 1;
        if arg == "--" {
            break;
        }
        if let Some(name_value) = arg.strip_prefix("--") {
            let (name, inline) = match name_value.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (name_value, None),
            };
            let (_, takes, opt) = long_option(long, name)?;
            let value = match (takes, inline) {
                (Arg::No, Some(_)) => return Err(OptionError::TakesNoValue(name.to_string())),
                (Arg::Required, None) => {
                    let v = args
                        .get(i)
                        .ok_or_else(|| OptionError::NeedsValue(format!("--{name}")))?;
                    i += 1;
                    Some(v.to_string())
                }
                (_, v) => v,
            };
            out.push((opt, value));
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|s| !s.is_empty()) else {
            continue;
        };
        for (at, c) in cluster.char_indices() {
            let spec = short
                .find(c)
                .filter(|_| c != ':')
                .ok_or(OptionError::UnknownShort(c))?;
            let colons = short[spec + 1..]
                .chars()
                .take_while(|&ch| ch == ':')
                .count();
            let rest = &cluster[at + c.len_utf8()..];
            if colons == 0 {
                out.push((c, None));
                continue;
            }
            let value = if !rest.is_empty() {
                Some(rest.to_string())
            } else if colons == 1 {
                let v = args
                    .get(i)
                    .ok_or_else(|| OptionError::NeedsValue(format!("-{c}")))?;
                i += 1;
                Some(v.to_string())
            } else {
                None
            };
            out.push((c, value));
            break;
        }
    }
    Ok(out)
}

/// The long option `name`, or the one it abbreviates uniquely.
fn long_option(long: &[Long], name: &str) -> Result<Long, OptionError> {
    if let Some(exact) = long.iter().find(|l| l.0 == name) {
        return Ok(*exact);
    }
    let mut matches = long.iter().filter(|l| l.0.starts_with(name));
    match (matches.next(), matches.next()) {
        (Some(one), None) if !name.is_empty() => Ok(*one),
        (Some(_), Some(_)) => Err(OptionError::Ambiguous(name.to_string())),
        _ => Err(OptionError::UnknownLong(name.to_string())),
    }
}

/// C's `atoi`: an optional sign and the leading digits; 0 when there are none.
pub(super) fn atoi(text: &str) -> i64 {
    let t = text.trim_start();
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0)
}

/// rt-tests' `parse_time_string`: seconds, or a number with `m`, `h` or `d`.
pub(super) fn parse_time_string(text: &str) -> i64 {
    let n = atoi(text);
    let digits = text.trim_start().trim_start_matches(['-', '+']);
    match digits
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .chars()
        .next()
    {
        Some('m' | 'M') => n * 60,
        Some('h' | 'H') => n * 3_600,
        Some('d' | 'D') => n * 86_400,
        _ => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: &[Long] = &[
        ("histogram", Arg::Required, 'h'),
        ("histofall", Arg::Required, 'H'),
        ("threads", Arg::Optional, 't'),
        ("quiet", Arg::No, 'q'),
    ];

    fn parse(line: &str) -> Result<Vec<(char, Option<String>)>, OptionError> {
        options(&line.split(' ').collect::<Vec<_>>(), "h:H:qmp:t::", LONG)
    }

    #[test]
    fn reads_as_getopt_long_does() {
        let v = |s: &str| Some(s.to_string());
        assert_eq!(
            parse("-mp95 -h 100 file --thr=2 -t -q").unwrap(),
            [
                ('m', None),
                ('p', v("95")),
                ('h', v("100")),
                ('t', v("2")),
                ('t', None),
                ('q', None)
            ]
        );
        assert_eq!(parse("--histogram=5 -- -q").unwrap(), [('h', v("5"))]);
        assert_eq!(parse("-Z"), Err(OptionError::UnknownShort('Z')));
        assert_eq!(parse("--his 5"), Err(OptionError::Ambiguous("his".into())));
        assert_eq!(
            parse("--nosuch"),
            Err(OptionError::UnknownLong("nosuch".into()))
        );
        assert_eq!(parse("-h"), Err(OptionError::NeedsValue("-h".into())));
        assert_eq!(
            parse("--quiet=1").unwrap_err().to_string(),
            "--quiet takes no value"
        );
    }

    #[test]
    fn numbers_as_c_reads_them() {
        assert_eq!(atoi(" 42abc"), 42);
        assert_eq!(atoi("-7"), -7);
        assert_eq!(atoi("x"), 0);
        assert_eq!(parse_time_string("2m"), 120);
        assert_eq!(parse_time_string("1d"), 86_400);
        assert_eq!(parse_time_string("30"), 30);
    }
}

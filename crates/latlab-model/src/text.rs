//! Text for people: text from files made safe to print on a terminal or to put in XML
//! and HTML, and counts with their nouns.
//!
//! Scenario and phase names, load specifications, imported ids, host names and the
//! messages built from them all come from files someone else may have written. Printed
//! raw, a control character in them is an escape sequence that can recolour, retitle,
//! clear or rewrite the terminal, or hide what is printed next to it. Every printer of
//! such text passes it through [`terminal_safe`] (or [`terminal_safe_lines`]).

use std::borrow::Cow;

/// A URL without its password — in the user part (`user:secret@host` becomes
/// `user@host`) or as a `password=` parameter (or another of
/// [`crate::conninfo::SECRETS`]) — for every message and every place it is kept; text
/// that is no URL comes back as it was.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, hosts)) => match user.split_once(':') {
            Some((name, _password)) => format!("{name}@{hosts}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| {
                    let key = p.split_once('=').map_or(*p, |(k, _)| k);
                    !crate::conninfo::SECRETS.contains(&key)
                })
                .collect();
            match kept.is_empty() {
                true => path.to_string(),
                false => format!("{path}?{}", kept.join("&")),
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// A command-line argument with the password of every URL in it removed
/// ([`redact_url`]): `--store=postgres://u:pw@h/db` becomes `--store=postgres://u@h/db`;
/// and of a keyword/value connection string (`host=db password=pw`, also as
/// `--store=host=db password=pw`), its `password` pair.
pub fn redact_argument(arg: &str) -> String {
    let arg = crate::conninfo::without_password(arg).unwrap_or_else(|| arg.to_string());
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg.as_str();
    while let Some(at) = rest.find("://") {
        // The URL starts at its scheme: the letters before "://".
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[at..]
            .find(char::is_whitespace)
            .map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..scheme_start]);
        out.push_str(&redact_url(&rest[scheme_start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Text made safe for XML 1.0 and HTML, in content and in double-quoted attribute values
/// (JUnit XML, SVG, the HTML report): markup characters escaped, line breaks and tabs kept, and the
/// characters XML 1.0 cannot hold at all (other control characters, U+FFFE, U+FFFF;
/// text from imported files may carry them) replaced by U+FFFD.
pub fn xml_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `text` for one line of a terminal: control characters (C0 and C1, among them ESC
/// and CSI) and the marks that reorder text (bidirectional overrides and isolates)
/// become U+FFFD; line breaks and tabs become spaces. Borrowed when nothing changes.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    filter(text, false)
}

/// As [`terminal_safe`], but keeps line breaks (`\n`): for messages of several lines.
pub fn terminal_safe_lines(text: &str) -> Cow<'_, str> {
    filter(text, true)
}

/// `n` with a regular English noun in the number it takes: `1 stream`, `2 streams`,
/// `0 streams`.
pub fn counted(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}

fn filter(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c == '\n' && !keep_newlines) || (c != '\n' && risky(c));
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| match c {
                '\n' if keep_newlines => '\n',
                '\n' | '\r' | '\t' => ' ',
                c if risky(c) => '\u{FFFD}',
                c => c,
            })
            .collect(),
    )
}

fn risky(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_loses_its_password_wherever_it_is_in_an_argument() {
        for (given, kept) in [
            ("postgres://u:pw@h/db", "postgres://u@h/db"),
            (
                "--store=postgresql://u:p%40ss@h:5432/db?sslmode=require",
                "--store=postgresql://u@h:5432/db?sslmode=require",
            ),
            (
                "postgres://h/db?user=u&password=pw&sslmode=disable&sslpassword=k",
                "postgres://h/db?user=u&sslmode=disable",
            ),
            (
                "see https://a:b@x/ and http://c:d@y",
                "see https://a@x/ and http://c@y",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("host=db password=pw user=lab", "host=db user=lab"),
            (
                "--store=service=farm password='a b'",
                "--store=service=farm",
            ),
            ("service=farm", "service=farm"),
            ("/var/lib/latlab/runs.sqlite", "/var/lib/latlab/runs.sqlite"),
            ("-d", "-d"),
        ] {
            assert_eq!(redact_argument(given), kept, "{given}");
        }
    }

    #[test]
    fn xml_escaped_text_holds_markup_and_no_character_xml_refuses() {
        assert_eq!(
            xml_escaped("a<b>&\"c'\td\n\u{1b}[31m\u{7}\u{fffe}"),
            "a&lt;b&gt;&amp;&quot;c'\td\n\u{fffd}[31m\u{fffd}\u{fffd}"
        );
        assert_eq!(xml_escaped("µs ≥ 400"), "µs ≥ 400");
    }

    #[test]
    fn escape_sequences_cannot_reach_the_terminal() {
        assert_eq!(terminal_safe("vm\u{1b}[2J\nx"), "vm\u{FFFD}[2J x");
        assert_eq!(
            terminal_safe("a\u{1b}]0;title\u{7}b\u{9b}31m"),
            "a\u{FFFD}]0;title\u{FFFD}b\u{FFFD}31m"
        );
        assert_eq!(terminal_safe("tab\there\r"), "tab here ");
        assert_eq!(terminal_safe("abc\u{202E}fed"), "abc\u{FFFD}fed");
        assert_eq!(
            terminal_safe_lines("one\u{1b}[K\ntwo"),
            "one\u{FFFD}[K\ntwo"
        );
    }

    #[test]
    fn one_is_singular_every_other_count_plural() {
        assert_eq!(counted(1, "stream"), "1 stream");
        assert_eq!(counted(0, "stream"), "0 streams");
        assert_eq!(counted(2, "run"), "2 runs");
    }

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        let text = "osadl · phase idle, 12.5 µs";
        assert!(matches!(terminal_safe(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(terminal_safe_lines("a\nb"), Cow::Borrowed("a\nb")));
    }
}

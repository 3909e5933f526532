//! How long latlab waits for the PostgreSQL server, so that no server — down, stopped,
//! overloaded, behind a firewall that drops packets, or holding a lock — hangs a rig.
//!
//! Each limit has a default a farm can live with and is overridden the way libpq's are:
//!
//! - **Connecting** (TCP, TLS and authentication together, per host, as libpq's
//!   `connect_timeout`): [`CONNECT_TIMEOUT`]; `connect_timeout=SECONDS` in the URL, else
//!   `PGCONNECT_TIMEOUT`; 0 waits as long as it takes.
//! - **The server's own limits**, sent as start-up options, so the server cancels a
//!   statement and says why: `statement_timeout` ([`STATEMENT_TIMEOUT`]), `lock_timeout`
//!   ([`LOCK_TIMEOUT`]: a table lock held elsewhere delays a run's start by this much
//!   at most) and `idle_in_transaction_session_timeout` ([`IDLE_IN_TRANSACTION_TIMEOUT`]:
//!   a rig stopped inside a transaction releases its locks). Each one the URL's
//!   `options=-c NAME=VALUE` (else `PGOPTIONS`) sets is left as given.
//! - **The answer to one statement**, awaited at most the statement timeout plus
//!   [`ANSWER_MARGIN`]: past that, a server that is alive would have cancelled the
//!   statement and said so; one that did not is not answering (stopped, its host hung,
//!   the network gone while TCP still holds the connection). This is the socket-level
//!   read timeout libpq lacks. With `statement_timeout=0` it waits as long as it takes.

use std::time::Duration;

/// How long connecting to one host may take: a server on the farm's network answers
/// in milliseconds; one that has not after seconds is away.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The server's limit on one statement. latlab's largest statement writes one Run
/// (about half a megabyte for a day-long run on 8 CPUs), which a working server does in
/// well under a second; a run's end waits for a stopped server no longer than this and
/// [`ANSWER_MARGIN`].
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The server's limit on waiting for a lock (a migration elsewhere, `VACUUM FULL`, a
/// `LOCK TABLE`): the run starts into the local store rather than waiting. Shorter
/// than the statement timeout, so that a lock wait ends in its own words.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(3);

/// How long the server lets a session sit idle inside a transaction before ending it,
/// so that a rig stopped or cut off in the middle of one does not hold its locks.
pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// How much longer than the statement timeout latlab awaits an answer: the time to
/// carry a Run's statement and the server's answer over the network.
pub const ANSWER_MARGIN: Duration = Duration::from_secs(2);

/// The server settings latlab sets unless told otherwise, with their defaults.
const SERVER_LIMITS: [(&str, Duration); 3] = [
    ("statement_timeout", STATEMENT_TIMEOUT),
    ("lock_timeout", LOCK_TIMEOUT),
    (
        "idle_in_transaction_session_timeout",
        IDLE_IN_TRANSACTION_TIMEOUT,
    ),
];

/// The limits of one store's connection.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Timeouts {
    /// Connecting to one host; `None`: as long as it takes.
    pub connect: Option<Duration>,
    /// The server's statement timeout; `None`: none (0).
    pub statement: Option<Duration>,
    /// The start-up options to send: the user's, and latlab's limits they leave out.
    pub options: String,
}

impl Timeouts {
    /// The limits, from the URL's `connect_timeout` and `options` when it gives them,
    /// else from the environment `env` looks up (`PGCONNECT_TIMEOUT`, `PGOPTIONS`).
    /// An error says which value is wrong and what to write.
    pub fn resolve(
        url_connect_timeout: Option<&str>,
        url_options: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Timeouts, String> {
        let connect = match url_connect_timeout {
            Some(text) => connect_timeout(text).map_err(|e| format!("connect_timeout={e}"))?,
            None => match env("PGCONNECT_TIMEOUT").filter(|v| !v.is_empty()) {
                Some(text) => {
                    connect_timeout(&text).map_err(|e| format!("PGCONNECT_TIMEOUT={e}"))?
                }
                None => Some(CONNECT_TIMEOUT),
            },
        };
        let (theirs, origin) = match url_options {
            Some(o) => (o.to_string(), "options in the URL"),
            None => (
                env("PGOPTIONS").unwrap_or_default(),
                "PGOPTIONS in the environment",
            ),
        };
        let given = settings_in(&theirs);
        let mut statement = Some(STATEMENT_TIMEOUT);
        if let Some((_, value)) = given.iter().rev().find(|(k, _)| k == "statement_timeout") {
            statement = server_duration(value).map_err(|e| {
                format!("{origin}: statement_timeout={value}: {e} (write e.g. 30s or 1min)")
            })?;
        }
        let mut options: Vec<String> = SERVER_LIMITS
            .iter()
            .filter(|(name, _)| !given.iter().any(|(k, _)| k == name))
            .map(|(name, value)| format!("-c {name}={}ms", value.as_millis()))
            .collect();
        if !theirs.trim().is_empty() {
            options.push(theirs.trim().to_string());
        }
        Ok(Timeouts {
            connect,
            statement,
            options: options.join(" "),
        })
    }

    /// How long the answer to one statement is awaited; `None`: as long as it takes.
    pub fn answer(&self) -> Option<Duration> {
        self.statement.map(|s| s + ANSWER_MARGIN)
    }
}

/// A `connect_timeout` as libpq reads it: whole seconds, 0 or less for no limit, and
/// at least 2 s.
fn connect_timeout(text: &str) -> Result<Option<Duration>, String> {
    let seconds: i64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text} is not a number of seconds (write e.g. 10, or 0 for none)"))?;
    Ok((seconds > 0).then(|| Duration::from_secs(seconds.max(2) as u64)))
}

/// The `NAME=VALUE` settings in a start-up options string (`-c NAME=VALUE`,
/// `-cNAME=VALUE` or `--NAME=VALUE`, a backslash escaping the next character), names
/// in lower case with `_` for `-`, as the server reads them.
fn settings_in(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut settings = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let setting = match word.as_str() {
            "-c" => words.next(),
            w => w
                .strip_prefix("--")
                .or_else(|| w.strip_prefix("-c"))
                .map(str::to_string),
        };
        if let Some((name, value)) = setting.as_deref().and_then(|s| s.split_once('=')) {
            settings.push((name.to_lowercase().replace('-', "_"), value.to_string()));
        }
    }
    settings
}

/// A time setting as the server reads it: a number, in milliseconds or with a unit
/// (`us`, `ms`, `s`, `min`, `h`, `d`); `None` for 0 (no limit).
fn server_duration(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim().trim_matches('\'').trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| "not a duration the server reads".to_string())?;
    let unit_seconds = match unit.trim() {
        "" | "ms" => 1e-3,
        "us" => 1e-6,
        "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        other => return Err(format!("{other} is not a unit the server knows")),
    };
    let seconds = number * unit_seconds;
    Ok((seconds > 0.0).then(|| Duration::from_secs_f64(seconds)))
}

/// `d` for people: `5 s`, `0.5 s`.
pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    match s.fract() == 0.0 {
        true => format!("{s:.0} s"),
        false => format!("{s:.1} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn the_defaults_are_sent_as_start_up_options() {
        let t = Timeouts::resolve(None, None, &none).unwrap();
        assert_eq!(t.connect, Some(CONNECT_TIMEOUT));
        assert_eq!(t.statement, Some(STATEMENT_TIMEOUT));
        assert_eq!(t.answer(), Some(STATEMENT_TIMEOUT + ANSWER_MARGIN));
        assert_eq!(
            t.options,
            "-c statement_timeout=5000ms -c lock_timeout=3000ms \
             -c idle_in_transaction_session_timeout=60000ms"
        );
    }

    #[test]
    fn the_url_then_the_environment_override_each_limit_as_libpq_reads_them() {
        let env = |name: &str| match name {
            "PGCONNECT_TIMEOUT" => Some("1".to_string()),
            "PGOPTIONS" => Some("-c lock_timeout=1s --statement-timeout=1min".to_string()),
            _ => None,
        };
        let t = Timeouts::resolve(None, None, &env).unwrap();
        // libpq's minimum.
        assert_eq!(t.connect, Some(Duration::from_secs(2)));
        assert_eq!(t.statement, Some(Duration::from_secs(60)));
        assert_eq!(
            t.options,
            "-c idle_in_transaction_session_timeout=60000ms \
             -c lock_timeout=1s --statement-timeout=1min"
        );
        // The URL's values win over the environment's.
        let t = Timeouts::resolve(Some("0"), Some("-cstatement_timeout=0"), &env).unwrap();
        assert_eq!(t.connect, None);
        assert_eq!(t.statement, None);
        assert_eq!(t.answer(), None);
        assert!(
            t.options.contains("-c lock_timeout=3000ms"),
            "{}",
            t.options
        );
        let t =
            Timeouts::resolve(None, Some(r"-c statement_timeout=2500 -c x=a\ b"), &none).unwrap();
        assert_eq!(t.statement, Some(Duration::from_millis(2500)));
    }

    #[test]
    fn a_limit_the_server_would_not_read_is_refused_naming_where_it_came_from() {
        let e = Timeouts::resolve(Some("soon"), None, &none).unwrap_err();
        assert!(e.starts_with("connect_timeout=soon is not a number"), "{e}");
        let e =
            Timeouts::resolve(None, Some("-c statement_timeout=5fortnights"), &none).unwrap_err();
        assert!(
            e.starts_with("options in the URL: statement_timeout=5"),
            "{e}"
        );
        assert_eq!(
            server_duration("250us").unwrap(),
            Some(Duration::from_micros(250))
        );
        assert_eq!(
            server_duration("'1.5s'").unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
        assert_eq!(seconds(Duration::from_secs(12)), "12 s");
    }
}

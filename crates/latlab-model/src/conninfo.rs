//! PostgreSQL's connection strings as libpq reads them, in both forms: the URL
//! (`postgres://lab@db:5432/latency?sslmode=require`) and keyword/value pairs
//! (`host=db dbname=latency service=farm`). Both become one list of parameters,
//! decoded, in the order given, so that a store is reached the same way whichever form
//! names it; and a password in either is what [`without_password`] and
//! [`crate::text::redact_argument`] take out before anything is shown or kept.
//!
//! The rules are libpq's (`conninfo_parse` and `conninfo_uri_parse` in
//! src/interfaces/libpq/fe-connect.c): pairs separated by white space, a value in
//! single quotes when it holds spaces, `\` escaping the next character; in a URL,
//! `user:password@`, hosts with ports separated by commas (an IPv6 address in
//! brackets), `/database`, then `?key=value&…`, each part percent-decoded.

/// The keywords of libpq's connection parameters (PostgreSQL 18): text made of pairs
/// of them is a connection string, not a file name.
pub const KEYWORDS: [&str; 50] = [
    "application_name",
    "channel_binding",
    "client_encoding",
    "connect_timeout",
    "dbname",
    "fallback_application_name",
    "gssdelegation",
    "gssencmode",
    "gsslib",
    "host",
    "hostaddr",
    "keepalives",
    "keepalives_count",
    "keepalives_idle",
    "keepalives_interval",
    "krbsrvname",
    "load_balance_hosts",
    "max_protocol_version",
    "min_protocol_version",
    "oauth_client_id",
    "oauth_client_secret",
    "oauth_issuer",
    "oauth_scope",
    "options",
    "passfile",
    "password",
    "port",
    "replication",
    "require_auth",
    "requirepeer",
    "scram_client_key",
    "scram_server_key",
    "service",
    "servicefile",
    "ssl_max_protocol_version",
    "ssl_min_protocol_version",
    "sslcert",
    "sslcertmode",
    "sslcompression",
    "sslcrl",
    "sslcrldir",
    "sslkey",
    "sslkeylogfile",
    "sslmode",
    "sslnegotiation",
    "sslpassword",
    "sslrootcert",
    "sslsni",
    "target_session_attrs",
    "user",
];

/// The keywords whose values are secrets: never shown, never kept.
pub const SECRETS: [&str; 5] = [
    "oauth_client_secret",
    "password",
    "scram_client_key",
    "scram_server_key",
    "sslpassword",
];

/// Parameters in the order given: keyword and decoded value.
pub type Parameters = Vec<(String, String)>;

/// True when `text` is a PostgreSQL URL.
pub fn is_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// True when `text` is meant as a keyword/value connection string: it starts with one
/// of libpq's keywords and `=` (so that `runs=1.sqlite` stays a file name, and
/// `./user=1.sqlite` names a file that `user=1.sqlite` would not). Whether the rest
/// reads is for [`parameters`] to say.
pub fn is_connection_string(text: &str) -> bool {
    let text = text.trim_start();
    let key_end = text
        .find(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or(text.len());
    let (key, rest) = text.split_at(key_end);
    !is_url(text) && rest.trim_start().starts_with('=') && KEYWORDS.contains(&key)
}

/// The parameters of `text`, a URL or a keyword/value connection string; an error
/// says what is wrong in it.
pub fn parameters(text: &str) -> Result<Parameters, String> {
    match is_url(text) {
        true => url_parameters(text),
        false => key_values(text),
    }
}

/// Keyword/value pairs (`host=db port=5432 options='-c a=b'`).
pub fn key_values(text: &str) -> Result<Parameters, String> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!("missing \"=\" after \"{key}\""));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(format!("the value of {key} has no closing quote")),
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                match c {
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        }
        pairs.push((key, value));
    }
}

/// The parameters of a `postgres://` or `postgresql://` URL.
fn url_parameters(url: &str) -> Result<Parameters, String> {
    let rest = url
        .strip_prefix("postgresql://")
        .or_else(|| url.strip_prefix("postgres://"))
        .ok_or("not a postgres:// URL")?;
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let mut out = Parameters::new();
    let hosts = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => {
            let (user, password) = match user_info.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (user_info, None),
            };
            if !user.is_empty() {
                out.push(("user".into(), decoded(user)?));
            }
            if let Some(password) = password {
                out.push(("password".into(), decoded(password)?));
            }
            hosts
        }
        None => authority,
    };
    let (mut names, mut ports) = (Vec::new(), Vec::new());
    for host in hosts.split(',').filter(|_| !hosts.is_empty()) {
        let (name, port) = match host.strip_prefix('[') {
            Some(v6) => {
                let (address, after) = v6
                    .split_once(']')
                    .ok_or_else(|| format!("{host}: an IPv6 address has no closing ]"))?;
                let port = match after {
                    "" => None,
                    _ => Some(after.strip_prefix(':').ok_or_else(|| {
                        format!("{host}: write a port after an IPv6 address as [ADDRESS]:PORT")
                    })?),
                };
                (address.to_string(), port)
            }
            None => match host.split_once(':') {
                Some((name, port)) => (decoded(name)?, Some(port)),
                None => (decoded(host)?, None),
            },
        };
        names.push(name);
        ports.push(decoded(port.unwrap_or(""))?);
    }
    if names.iter().any(|n| !n.is_empty()) {
        out.push(("host".into(), names.join(",")));
    }
    if ports.iter().any(|p| !p.is_empty()) {
        out.push(("port".into(), ports.join(",")));
    }
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let database = path.strip_prefix('/').unwrap_or(path);
    if !database.is_empty() {
        out.push(("dbname".into(), decoded(database)?));
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("the URL's parameter {pair} has no \"=\""))?;
        out.push((decoded(key)?, decoded(value)?));
    }
    Ok(out)
}

/// `text` with its `%XX` escapes decoded.
fn decoded(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{text}: % must be followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text}: the %-escapes are not UTF-8"))
}

/// `pairs` as a keyword/value connection string, each value quoted where it must be
/// (`options='-c a=b'`), so that [`key_values`] reads the same pairs back.
pub fn write(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(key, value)| {
            let plain = !value.is_empty()
                && !value
                    .chars()
                    .any(|c| c.is_whitespace() || matches!(c, '\'' | '\\'));
            match plain {
                true => format!("{key}={value}"),
                false => {
                    let escaped = value.replace('\\', "\\\\").replace('\'', "\\'");
                    format!("{key}='{escaped}'")
                }
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A keyword/value connection string without its passwords and other [`SECRETS`];
/// `None` when `text` is none or has none. One that does not read ends where its
/// first secret's keyword begins.
pub fn without_password(text: &str) -> Option<String> {
    let Ok(pairs) = key_values(text) else {
        let secret_at = text
            .char_indices()
            // Where each word begins.
            .filter(|&(i, c)| {
                !c.is_whitespace()
                    && text[..i]
                        .chars()
                        .next_back()
                        .is_none_or(char::is_whitespace)
            })
            .map(|(i, _)| i)
            .find(|i| {
                SECRETS.iter().any(|key| {
                    text[*i..]
                        .strip_prefix(key)
                        .is_some_and(|rest| rest.trim_start().starts_with('='))
                })
            })?;
        return Some(format!("{} …", text[..secret_at].trim_end()));
    };
    let kept: Parameters = pairs
        .iter()
        .filter(|(key, _)| !SECRETS.contains(&key.as_str()))
        .cloned()
        .collect();
    (kept.len() < pairs.len()).then(|| write(&kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Parameters {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn key_values_read_as_libpq_reads_them() {
        assert_eq!(
            key_values(" host = db  options='-c a=b' password=p\\ w\\'d service=farm ").unwrap(),
            pairs(&[
                ("host", "db"),
                ("options", "-c a=b"),
                ("password", "p w'd"),
                ("service", "farm")
            ])
        );
        assert_eq!(key_values("dbname=''").unwrap(), pairs(&[("dbname", "")]));
        assert!(key_values("host").unwrap_err().contains("\"=\""));
        assert!(key_values("options='-c").unwrap_err().contains("quote"));
    }

    #[test]
    fn a_url_is_its_parameters_decoded() {
        assert_eq!(
            parameters("postgres://lab:p%40ss@db:6543/latency?sslmode=require&options=-c%20x%3Dy")
                .unwrap(),
            pairs(&[
                ("user", "lab"),
                ("password", "p@ss"),
                ("host", "db"),
                ("port", "6543"),
                ("dbname", "latency"),
                ("sslmode", "require"),
                ("options", "-c x=y")
            ])
        );
        assert_eq!(
            parameters("postgresql://a,[::1]:5433,b:5434/db").unwrap(),
            pairs(&[
                ("host", "a,::1,b"),
                ("port", ",5433,5434"),
                ("dbname", "db")
            ])
        );
        assert_eq!(
            parameters("postgresql://%2Fvar%2Frun%2Fpostgresql/db").unwrap(),
            pairs(&[("host", "/var/run/postgresql"), ("dbname", "db")])
        );
        assert_eq!(
            parameters("postgres://?service=farm").unwrap(),
            pairs(&[("service", "farm")])
        );
        assert_eq!(parameters("postgres://").unwrap(), Parameters::new());
        assert!(parameters("postgres://db/x?sslmode").is_err());
        assert!(parameters("postgres://db/x%zz").is_err());
        assert!(parameters("postgres://[::1/x").is_err());
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        let given = pairs(&[
            ("host", "db"),
            ("options", "-c statement_timeout=30s"),
            ("password", "it's \\ odd"),
            ("dbname", ""),
        ]);
        assert_eq!(key_values(&write(&given)).unwrap(), given);
    }

    #[test]
    fn a_connection_string_is_told_from_a_file_name() {
        assert!(is_connection_string("service=farm"));
        assert!(is_connection_string("host=db dbname=latency"));
        assert!(is_connection_string("host=db password"));
        assert!(!is_connection_string("runs=1.sqlite"));
        assert!(!is_connection_string("./user=1.sqlite"));
        assert!(!is_connection_string("/var/lib/latlab/runs.sqlite"));
        assert!(!is_connection_string(""));
        assert!(!is_connection_string("postgres://db?service=farm"));
    }

    #[test]
    fn a_password_is_taken_out() {
        assert_eq!(
            without_password("host=db password='s 3' user=lab").as_deref(),
            Some("host=db user=lab")
        );
        assert_eq!(without_password("service=farm"), None);
        assert_eq!(
            without_password("host=db password = s3 oops").as_deref(),
            Some("host=db …")
        );
        assert_eq!(without_password("not one"), None);
    }
}

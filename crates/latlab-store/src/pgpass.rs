//! The password file of PostgreSQL's clients (`~/.pgpass`, or the file `passfile=` or
//! `PGPASSFILE` names), read as libpq reads it: lines `host:port:database:user:password`, `*`
//! matching anything, `\:` and `\\` escaping, `#` comments, the first match wins, and
//! a file that others may read is ignored (libpq warns and ignores it too).

use std::path::{Path, PathBuf};

/// Where the password file is: `given` (a `passfile=` parameter), else `PGPASSFILE`,
/// else `~/.pgpass`, as the environment `env` says.
pub(crate) fn password_file(
    given: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    given
        .map(str::to_string)
        .or_else(|| env("PGPASSFILE"))
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".pgpass")))
}

/// What a connection is looked up by.
pub(crate) struct Lookup<'a> {
    /// The host name, or `localhost` for a Unix socket (as libpq matches it).
    pub host: &'a str,
    pub port: u16,
    pub database: &'a str,
    pub user: &'a str,
}

/// The password `file` holds for `lookup`, if it holds one and only its owner may read
/// it.
pub(crate) fn password_in(file: &Path, lookup: &Lookup) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    find(&text, lookup)
}

/// The first line of `text` matching `lookup`: its password.
fn find(text: &str, lookup: &Lookup) -> Option<String> {
    let port = lookup.port.to_string();
    let wanted = [lookup.host, port.as_str(), lookup.database, lookup.user];
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(fields)
        .find(|f| (0..4).all(|i| f[i] == "*" || f[i] == wanted[i]))
        .map(|f| f[4].clone())
}

/// A line's five fields, unescaped; `None` for a line of fewer.
fn fields(line: &str) -> Option<[String; 5]> {
    let mut out: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut()?.extend(chars.next()),
            // The password is everything after the fourth colon.
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut()?.push(c),
        }
    }
    out.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_gives_the_password_with_escapes_undone() {
        let text = "# comment\n\
                    db:5432:other:lab:no\n\
                    db:5432:latency:lab:p\\:w\\\\d\n\
                    *:*:*:lab:fallback\n";
        let lookup = |db| Lookup {
            host: "db",
            port: 5432,
            database: db,
            user: "lab",
        };
        assert_eq!(find(text, &lookup("latency")).as_deref(), Some("p:w\\d"));
        assert_eq!(find(text, &lookup("other")).as_deref(), Some("no"));
        assert_eq!(find(text, &lookup("x")).as_deref(), Some("fallback"));
        let stranger = Lookup {
            user: "root",
            ..lookup("latency")
        };
        assert_eq!(find(text, &stranger), None);
        assert_eq!(find("db:5432:latency", &lookup("latency")), None);
    }
}

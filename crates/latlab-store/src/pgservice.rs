//! The connection service file of PostgreSQL's clients (`pg_service.conf`), read as
//! libpq reads it (`parseServiceInfo` and `parseServiceFile` in
//! src/interfaces/libpq/fe-connect.c), so that a farm's rigs and its people name the
//! central store once, as `service=farm`, for latlab and psql alike.
//!
//! The service is looked up in the file `servicefile=` or `PGSERVICEFILE` names (which
//! must then exist), else in `~/.pg_service.conf` when there is one; when that file
//! does not define it, in `PGSYSCONFDIR/pg_service.conf` (without `PGSYSCONFDIR`, in
//! /etc/postgresql-common, where Debian's libpq looks). A file is groups `[name]` of
//! lines `keyword=value` (no spaces around `=`), `#` comments and blank lines; within a
//! group, the first setting of a keyword counts. A keyword libpq does not know, or a
//! nested `service=`, is an error that names the file and the line.

use latlab_model::conninfo::KEYWORDS;
use std::path::{Path, PathBuf};

/// Where the system-wide service file is when `PGSYSCONFDIR` does not say: Debian's
/// libpq (`pg_config --sysconfdir`).
pub(crate) const SYSTEM_DIR: &str = "/etc/postgresql-common";

/// One setting of a service, and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting {
    pub key: String,
    pub value: String,
    pub file: PathBuf,
    pub line: usize,
}

/// The settings of `service`, from `servicefile` (a `servicefile=` parameter) or the
/// files the environment `env` names; an error names the file and says what to do.
pub(crate) fn lookup(
    service: &str,
    servicefile: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Setting>, String> {
    let named = servicefile
        .map(|f| (PathBuf::from(f), "servicefile="))
        .or_else(|| {
            env("PGSERVICEFILE")
                .filter(|f| !f.is_empty())
                .map(|f| (PathBuf::from(f), "PGSERVICEFILE"))
        });
    let user_file = match &named {
        Some((file, _)) => Some(file.clone()),
        None => env("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| PathBuf::from(home).join(".pg_service.conf")),
    };
    let mut searched = Vec::new();
    if let Some(file) = user_file {
        searched.push(file.display().to_string());
        match (std::fs::read_to_string(&file), &named) {
            (Ok(text), _) => {
                if let Some(settings) = settings_in(service, &file, &text)? {
                    return Ok(settings);
                }
            }
            (Err(e), Some((_, by))) => {
                return Err(format!(
                    "the service file {} ({by}) cannot be read: {e}; name one that exists",
                    file.display()
                ))
            }
            // ~/.pg_service.conf need not exist.
            (Err(_), None) => {}
        }
    }
    let dir = env("PGSYSCONFDIR")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| SYSTEM_DIR.to_string());
    let system = PathBuf::from(dir).join("pg_service.conf");
    searched.push(system.display().to_string());
    if let Ok(text) = std::fs::read_to_string(&system) {
        if let Some(settings) = settings_in(service, &system, &text)? {
            return Ok(settings);
        }
    }
    Err(format!(
        "no service [{service}] in {}: define it in one of them (or in the file \
         PGSERVICEFILE names), or name another service",
        searched.join(" or ")
    ))
}

/// The settings of the group `[service]` of `text` (the file `file`); `None` when the
/// file has no such group.
fn settings_in(service: &str, file: &Path, text: &str) -> Result<Option<Vec<Setting>>, String> {
    let mut found: Option<Vec<Setting>> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("{}, line {}", file.display(), n + 1);
        if let Some(group) = line.strip_prefix('[') {
            if found.is_some() {
                break;
            }
            if group
                .strip_prefix(service)
                .is_some_and(|g| g.starts_with(']'))
            {
                found = Some(Vec::new());
            }
            continue;
        }
        let Some(settings) = found.as_mut() else {
            continue;
        };
        // The line itself is not shown: it may hold a password.
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{}: not keyword=value: write one setting a line, as host=db.example",
                at()
            ));
        };
        if key == "service" {
            return Err(format!(
                "{}: a service cannot name another service; give its settings instead",
                at()
            ));
        }
        if !KEYWORDS.contains(&key) {
            return Err(format!(
                "{}: \"{key}\" is not a connection setting (write keyword=value without \
                 spaces around =, with a keyword such as host, port, dbname, user)",
                at()
            ));
        }
        if !settings.iter().any(|s| s.key == key) {
            settings.push(Setting {
                key: key.to_string(),
                value: value.to_string(),
                file: file.to_path_buf(),
                line: n + 1,
            });
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, String)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    fn keys(settings: &[Setting]) -> Vec<(String, String, usize)> {
        settings
            .iter()
            .map(|s| (s.key.clone(), s.value.clone(), s.line))
            .collect()
    }

    #[test]
    fn the_users_file_then_the_systems_define_a_service() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let etc = dir.path().join("etc");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            home.join(".pg_service.conf"),
            "# the farm\n[farmer]\nhost=wrong\n\n  [farm]  \nhost=db\nport=6543\nhost=later\n\
             [other]\nuser=x\n",
        )
        .unwrap();
        std::fs::write(etc.join("pg_service.conf"), "[lab]\ndbname=latency\n").unwrap();
        let vars = [
            ("HOME", home.display().to_string()),
            ("PGSYSCONFDIR", etc.display().to_string()),
        ];
        assert_eq!(
            keys(&lookup("farm", None, &env(&vars)).unwrap()),
            [
                ("host".into(), "db".into(), 6),
                ("port".into(), "6543".into(), 7)
            ]
        );
        assert_eq!(
            keys(&lookup("lab", None, &env(&vars)).unwrap()),
            [("dbname".into(), "latency".into(), 2)]
        );
        let missing = lookup("nowhere", None, &env(&vars)).unwrap_err();
        assert!(
            missing.contains("[nowhere]")
                && missing.contains(".pg_service.conf")
                && missing.contains("etc/pg_service.conf"),
            "{missing}"
        );
        // PGSERVICEFILE replaces ~/.pg_service.conf, and must exist.
        let named = dir.path().join("named.conf");
        std::fs::write(&named, "[farm]\ndbname=named\n").unwrap();
        let mut with_file = vars.to_vec();
        with_file.push(("PGSERVICEFILE", named.display().to_string()));
        assert_eq!(
            keys(&lookup("farm", None, &env(&with_file)).unwrap()),
            [("dbname".into(), "named".into(), 2)]
        );
        with_file.last_mut().unwrap().1 = dir.path().join("none").display().to_string();
        let gone = lookup("farm", None, &env(&with_file)).unwrap_err();
        assert!(
            gone.contains("PGSERVICEFILE") && gone.contains("none"),
            "{gone}"
        );
        // servicefile= before PGSERVICEFILE.
        assert_eq!(
            keys(&lookup("farm", named.to_str(), &env(&vars)).unwrap()),
            [("dbname".into(), "named".into(), 2)]
        );
    }

    #[test]
    fn a_bad_line_is_named_with_its_file_and_number() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.conf");
        let vars = [("PGSERVICEFILE", file.display().to_string())];
        for (text, says) in [
            (
                "[farm]\nhost = db\n",
                "line 2: \"host \" is not a connection setting",
            ),
            ("[farm]\npassword secret\n", "line 2: not keyword=value"),
            (
                "[farm]\nservice=other\n",
                "line 2: a service cannot name another",
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = lookup("farm", None, &env(&vars)).unwrap_err();
            assert!(e.contains(says) && e.contains("s.conf"), "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
        // Lines outside the group are not judged.
        std::fs::write(&file, "[other]\nnonsense\n[farm]\nhost=db\n").unwrap();
        assert!(lookup("farm", None, &env(&vars)).is_ok());
    }
}

//! A store's connection parameters as libpq gathers them: those of its URL or
//! connection string first, then those of its service (`service=`, else `PGSERVICE`;
//! [`crate::pgservice`]) that the location leaves out — the location overrides its
//! service — and only then the environment's defaults ([`super::connect`]).

use crate::pgservice;
use latlab_model::conninfo;
use std::path::PathBuf;

/// The parameters latlab honours: the driver's, and its own (`sslmode`'s
/// verification, `sslrootcert`, `passfile`); `keepalives_retries` is the driver's name
/// for `keepalives_count`, which URLs written for latlab may hold.
const HONOURED: &str = "host hostaddr port dbname user password passfile \
    sslmode sslrootcert sslnegotiation channel_binding \
    connect_timeout tcp_user_timeout keepalives keepalives_idle keepalives_interval \
    keepalives_count keepalives_retries options application_name target_session_attrs \
    load_balance_hosts";

/// Where a parameter came from, for messages.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    Location,
    Service { file: PathBuf, line: usize },
}

/// The parameters, in the order gathered.
#[derive(Debug)]
pub(super) struct Parameters {
    list: Vec<(String, String, Source)>,
}

impl Parameters {
    /// The parameters of `location` and of its service; `env` looks up the
    /// environment (`PGSERVICE`, and where the service files are). An error says what
    /// is wrong and where.
    pub(super) fn gather(
        location: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Parameters, String> {
        let mut given = Parameters {
            list: conninfo::parameters(location)?
                .into_iter()
                .map(|(key, value)| (key, value, Source::Location))
                .collect(),
        };
        let service = given
            .take("service")
            .or_else(|| env("PGSERVICE").filter(|s| !s.is_empty()));
        let servicefile = given.take("servicefile");
        if let Some(service) = service {
            for setting in pgservice::lookup(&service, servicefile.as_deref(), env)? {
                if !given.has(&setting.key) {
                    given.list.push((
                        setting.key,
                        setting.value,
                        Source::Service {
                            file: setting.file,
                            line: setting.line,
                        },
                    ));
                }
            }
        }
        for (key, _, source) in &given.list {
            if !HONOURED.split_whitespace().any(|honoured| honoured == key) {
                let from = match source {
                    Source::Location => "the store's URL or connection string".to_string(),
                    Source::Service { file, line } => {
                        format!("the service file {}, line {line}", file.display())
                    }
                };
                return Err(format!(
                    "{key} (in {from}) is not a setting latlab uses: remove it (latlab \
                     reads host, hostaddr, port, dbname, user, password, passfile, options, \
                     sslmode, sslrootcert, connect_timeout, keepalives… and \
                     target_session_attrs)"
                ));
            }
        }
        Ok(given)
    }

    /// The value of `key`, the first given.
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.list
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, _)| v.as_str())
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Takes `key` out (every time it was given), returning its first value.
    pub(super) fn take(&mut self, key: &str) -> Option<String> {
        let value = self.get(key).map(str::to_string);
        self.list.retain(|(k, _, _)| k != key);
        value
    }

    /// Renames `from` to `to` (a keyword libpq and the driver spell differently).
    pub(super) fn rename(&mut self, from: &str, to: &str) {
        for (key, _, _) in &mut self.list {
            if key == from {
                *key = to.to_string();
            }
        }
    }

    /// The parameters as a keyword/value connection string, for the driver.
    pub(super) fn connection_string(&self) -> String {
        let pairs: Vec<(String, String)> = self
            .list
            .iter()
            .map(|(k, v, _)| (k.clone(), v.clone()))
            .collect();
        conninfo::write(&pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_location_overrides_its_service_and_unknown_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("services.conf");
        std::fs::write(
            &file,
            "[farm]\nhost=db.example\nport=6543\ndbname=latency\nuser=lab\n\
             [certs]\nsslcert=/etc/c.pem\n",
        )
        .unwrap();
        let file_name = file.display().to_string();
        let env = |service: &'static str| {
            let file_name = file_name.clone();
            move |name: &str| match name {
                "PGSERVICEFILE" => Some(file_name.clone()),
                "PGSERVICE" => Some(service.to_string()),
                _ => None,
            }
        };
        let p = Parameters::gather("postgres://me@other/db2?service=farm", &env("")).unwrap();
        assert_eq!(
            p.connection_string(),
            "user=me host=other dbname=db2 port=6543"
        );
        // PGSERVICE when the location names none.
        let p = Parameters::gather("postgres://", &env("farm")).unwrap();
        assert_eq!(p.get("host"), Some("db.example"));
        let p = Parameters::gather("service=farm port=7000", &env("")).unwrap();
        assert_eq!(p.get("port"), Some("7000"));
        assert!(!p.has("service"));
        let e = Parameters::gather("service=certs", &env("")).unwrap_err();
        assert!(
            e.starts_with("sslcert (in the service file") && e.contains("line 7"),
            "{e}"
        );
        let e = Parameters::gather("postgres://db/x?sslkey=k", &env("")).unwrap_err();
        assert!(e.starts_with("sslkey (in the store's URL"), "{e}");
    }
}

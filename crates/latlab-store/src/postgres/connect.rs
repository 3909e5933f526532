//! Reaching the PostgreSQL server: the URL or connection string and its service
//! ([`super::parameters`]; `sslmode` and `sslrootcert`, which the driver does not take),
//! the password from the environment or the password file, the limits on every wait
//! ([`super::timeouts`]), TLS, and the driver's errors as [`StoreError`]s that name the
//! cause and the fix.

use super::link::{Failure, Link, Waiter};
use super::parameters::Parameters;
use super::timeouts::Timeouts;
use crate::pgpass::{self, Lookup};
use crate::StoreError;
use latlab_model::conninfo;
use std::path::PathBuf;
use std::time::Duration;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Config, NoTls};

/// How long an unacknowledged write may last, and a connection be idle, before TCP
/// probes whether the server is still there.
const DEAD_PEER_TIMEOUT: Duration = Duration::from_secs(30);

/// Between TCP keepalive probes, and how many unanswered ones end the connection: an
/// idle connection to a host gone without a word ends within a minute (Linux's own
/// defaults take 11 minutes more).
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_PROBES: u32 = 3;

/// True when `location` names a PostgreSQL store rather than a SQLite file: a
/// `postgres://` URL, or a connection string of libpq's keywords (`service=farm`,
/// `host=db dbname=latency`).
pub fn is_url(location: &str) -> bool {
    conninfo::is_url(location) || conninfo::is_connection_string(location)
}

/// `location` without its password (in a URL's user part or `password=` parameter, or
/// a connection string's `password` pair), for every message and every place it is
/// kept.
pub fn redact(location: &str) -> String {
    match conninfo::is_url(location) {
        true => latlab_model::text::redact_url(location),
        false => conninfo::without_password(location).unwrap_or_else(|| location.to_string()),
    }
}

/// How the connection is secured, from the URL's `sslmode`.
#[derive(Debug, Clone, PartialEq)]
enum Tls {
    /// `disable`, `allow`, `prefer` or none: plain.
    Off,
    /// `require`, `verify-ca`, `verify-full`: TLS, the certificate verified against the
    /// web's roots and these extra ones (`sslrootcert`).
    Verified { root_file: Option<PathBuf> },
}

/// A parsed store URL: the driver's configuration, how to secure it, and how to name
/// it.
pub(super) struct Target {
    config: Config,
    tls: Tls,
    timeouts: Timeouts,
    /// The URL without its password.
    pub(super) location: String,
    /// `host:port`, or the socket.
    pub(super) server: String,
}

impl Target {
    /// The store `location` names — a URL or a connection string, its service, then
    /// the environment — ready to connect to.
    pub(super) fn parse(location: &str) -> Result<Target, StoreError> {
        Target::parse_in(location, &|name| std::env::var(name).ok())
    }

    /// [`Target::parse`] with the environment `env` looks up.
    fn parse_in(given: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, StoreError> {
        let location = redact(given);
        let bad = |reason: String| StoreError::BadLocation {
            given: location.clone(),
            reason,
        };
        let mut parameters = Parameters::gather(given, env).map_err(&bad)?;
        // The driver knows only disable/prefer/require and no root file: take both out.
        let tls = match parameters.take("sslmode").as_deref() {
            None | Some("disable" | "allow" | "prefer") => Tls::Off,
            Some("require" | "verify-ca" | "verify-full") => Tls::Verified {
                root_file: parameters.get("sslrootcert").map(PathBuf::from),
            },
            Some(other) => {
                return Err(bad(format!(
                    "sslmode={other} is not known: write disable, prefer, require, \
                     verify-ca or verify-full"
                )))
            }
        };
        parameters.take("sslrootcert");
        let passfile = parameters.take("passfile");
        // libpq's name; the driver's is keepalives_retries.
        parameters.rename("keepalives_count", "keepalives_retries");
        let mut config: Config = parameters.connection_string().parse().map_err(|e| {
            bad(format!(
                "not a connection latlab can use ({e}); write \
                 postgres://USER@HOST[:PORT]/DATABASE[?sslmode=require]"
            ))
        })?;
        if config.get_hosts().is_empty() {
            config.host_path("/var/run/postgresql");
        }
        if config.get_user().is_none() {
            match env("PGUSER")
                .or_else(|| env("USER"))
                .or_else(|| env("LOGNAME"))
            {
                Some(user) => config.user(&user),
                None => {
                    return Err(bad(
                        "no user: give one in the URL (postgres://USER@HOST/DATABASE)".into(),
                    ))
                }
            };
        }
        let user = config.get_user().unwrap_or_default().to_string();
        if config.get_dbname().is_none() {
            config.dbname(&user);
        }
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let (host, server) = match &config.get_hosts()[0] {
            Host::Tcp(h) => (h.clone(), format!("{h}:{port}")),
            Host::Unix(dir) => (
                "localhost".to_string(),
                format!("{}/.s.PGSQL.{port}", dir.display()),
            ),
        };
        if config.get_password().is_none() {
            let from_env = env("PGPASSWORD").filter(|p| !p.is_empty());
            let from_file = || {
                pgpass::password_file(passfile.as_deref(), env).and_then(|file| {
                    pgpass::password_in(
                        &file,
                        &Lookup {
                            host: &host,
                            port,
                            database: config.get_dbname().unwrap_or_default(),
                            user: &user,
                        },
                    )
                })
            };
            if let Some(password) = from_env.or_else(from_file) {
                config.password(password);
            }
        }
        // Every wait has its limit; a URL's own values are kept.
        let timeouts =
            Timeouts::resolve(parameters.get("connect_timeout"), config.get_options(), env)
                .map_err(|e| bad(format!("{e}; see docs/long-runs-and-farm.md, Timeouts")))?;
        if let Some(connect) = timeouts.connect {
            config.connect_timeout(connect);
        }
        config.options(&timeouts.options);
        // A server gone without a word (a pulled cable, a crashed host) is noticed by
        // TCP too, also on a connection idle between checkpoints.
        if !parameters.has("tcp_user_timeout") {
            config.tcp_user_timeout(DEAD_PEER_TIMEOUT);
        }
        if !parameters.has("keepalives_idle") {
            config.keepalives_idle(DEAD_PEER_TIMEOUT);
        }
        if !parameters.has("keepalives_interval") {
            config.keepalives_interval(KEEPALIVE_INTERVAL);
        }
        if !parameters.has("keepalives_retries") {
            config.keepalives_retries(KEEPALIVE_PROBES);
        }
        config.application_name("latlab");
        if tls != Tls::Off {
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
        }
        Ok(Target {
            config,
            tls,
            timeouts,
            location,
            server,
        })
    }

    /// Connects, within the connect timeout for each host the URL names.
    pub(super) fn connect(&self) -> Result<Link, StoreError> {
        let waiter = Waiter::new(self.timeouts.answer()).map_err(|e| StoreError::Unreachable {
            location: self.location.clone(),
            server: self.server.clone(),
            reason: format!("cannot start the connection's runtime: {e}"),
        })?;
        let hosts = self.config.get_hosts().len().max(1) as u32;
        let limit = self.timeouts.connect.map(|d| d * hosts);
        let opened = match &self.tls {
            Tls::Off => Link::open(waiter, limit, self.config.connect(NoTls)),
            Tls::Verified { root_file } => {
                let tls = tls_connector(root_file.as_deref()).map_err(|reason| {
                    StoreError::BadLocation {
                        given: self.location.clone(),
                        reason,
                    }
                })?;
                Link::open(waiter, limit, self.config.connect(tls))
            }
        };
        opened.map_err(|f| failed(&self.location, &self.server, f))
    }
}

/// A wait that failed as a [`StoreError`] naming the cause and the fix.
pub(super) fn failed(location: &str, server: &str, failure: Failure) -> StoreError {
    match failure {
        Failure::Driver(e) => classify(location, server, e),
        Failure::GaveUp(waited) => StoreError::NotAnswering {
            location: location.to_string(),
            server: server.to_string(),
            waited,
        },
    }
}

/// The TLS set-up: the web's roots, and those of `root_file` (PEM) when given.
fn tls_connector(
    root_file: Option<&std::path::Path>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(file) = root_file {
        let certs = CertificateDer::pem_file_iter(file)
            .map_err(|e| format!("sslrootcert={}: {e}", file.display()))?;
        for cert in certs {
            let cert = cert.map_err(|e| format!("sslrootcert={}: {e}", file.display()))?;
            roots.add(cert).map_err(|e| {
                format!(
                    "sslrootcert={}: not a usable certificate: {e}",
                    file.display()
                )
            })?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// A driver error as a [`StoreError`] naming the cause and the fix.
fn classify(location: &str, server: &str, e: tokio_postgres::Error) -> StoreError {
    let location = location.to_string();
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    let refused = |reason: String, fix: &str| StoreError::Refused {
        location: location.clone(),
        reason,
        fix: fix.to_string(),
    };
    let Some(db) = e.as_db_error() else {
        if reason.starts_with("error performing TLS handshake") {
            return refused(
                reason,
                "check the server's certificate (give its CA with sslrootcert=FILE in the URL) \
                 and that the server has TLS on (ssl = on)",
            );
        }
        if reason.contains("password missing") || reason.starts_with("authentication error") {
            return refused(
                reason,
                "give the password in PGPASSWORD or in ~/.pgpass (or the file PGPASSFILE \
                 names, readable by its owner only)",
            );
        }
        return StoreError::Unreachable {
            location,
            server: server.to_string(),
            reason,
        };
    };
    let reason = db.message().to_string();
    let code = db.code();
    if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    {
        refused(
            reason,
            "check the user and its password (in PGPASSWORD, ~/.pgpass or PGPASSFILE) and the \
             server's pg_hba.conf",
        )
    } else if *code == SqlState::INVALID_CATALOG_NAME {
        refused(
            reason,
            "create the database (createdb) or name another in the URL",
        )
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        refused(
            reason,
            "grant the role the right to create tables in the database's schema, and to read \
             and write table runs",
        )
    } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        StoreError::ReadOnly {
            path: PathBuf::from(location),
            cause: reason,
        }
    } else if *code == SqlState::LOCK_NOT_AVAILABLE {
        StoreError::TimedOut {
            location,
            reason,
            fix: "another session held a lock latlab needs (a migration, VACUUM FULL, \
                  LOCK TABLE: pg_locks and pg_stat_activity name it) longer than lock_timeout"
                .to_string(),
        }
    } else if [
        SqlState::QUERY_CANCELED,
        SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
    ]
    .contains(code)
    {
        StoreError::TimedOut {
            location,
            reason,
            fix: "the server is overloaded, or was told to cancel latlab's statement; \
                  statement_timeout sets how long one may take"
                .to_string(),
        }
    } else if *code == SqlState::DISK_FULL {
        StoreError::Full {
            path: PathBuf::from(location),
        }
    } else if [
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::TOO_MANY_CONNECTIONS,
    ]
    .contains(code)
    {
        StoreError::Unreachable {
            location,
            server: server.to_string(),
            reason,
        }
    } else {
        StoreError::Postgres { location, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            redact("postgres://lab:s3cret@db:5432/latency?sslmode=require"),
            "postgres://lab@db:5432/latency?sslmode=require"
        );
        assert_eq!(
            redact("postgresql://lab:p@ss@db/latency"),
            "postgresql://lab@db/latency"
        );
        assert_eq!(
            redact("postgres://lab@db/latency?password=x&sslmode=disable"),
            "postgres://lab@db/latency?sslmode=disable"
        );
        assert_eq!(redact("postgres://db"), "postgres://db");
    }

    /// An environment of a user `lab`, and nothing else.
    fn bare(name: &str) -> Option<String> {
        (name == "USER").then(|| "lab".to_string())
    }

    #[test]
    fn sslmode_chooses_tls_and_bad_urls_say_what_to_write() {
        let tls = |url: &str| Target::parse_in(url, &bare).map(|t| t.tls);
        assert_eq!(tls("postgres://lab@db/latency").unwrap(), Tls::Off);
        assert_eq!(
            tls("postgres://lab@db/latency?sslmode=prefer").unwrap(),
            Tls::Off
        );
        assert_eq!(
            tls("postgres://lab@db/latency?sslmode=verify-full&sslrootcert=/etc/ca.pem").unwrap(),
            Tls::Verified {
                root_file: Some(PathBuf::from("/etc/ca.pem"))
            }
        );
        let bad = Target::parse_in("postgres://lab:pw@db/latency?sslmode=sometimes", &bare)
            .err()
            .unwrap()
            .to_string();
        assert!(bad.contains("verify-full") && !bad.contains("pw@"), "{bad}");
        let target = Target::parse_in("postgres://lab:pw@db:6543/latency", &bare).unwrap();
        assert_eq!(target.server, "db:6543");
        assert_eq!(target.location, "postgres://lab@db:6543/latency");
    }

    #[test]
    fn a_connection_string_and_a_service_name_the_store_as_a_url_does() {
        let dir = tempfile::tempdir().unwrap();
        let services = dir.path().join("services.conf");
        std::fs::write(
            &services,
            "[farm]\nhost=db.example\nport=6543\ndbname=latency\nuser=lab\npassword=from-service\n\
             sslmode=verify-full\nconnect_timeout=9\n",
        )
        .unwrap();
        let services = services.display().to_string();
        let env = |name: &str| match name {
            "PGSERVICEFILE" => Some(services.clone()),
            "PGPASSWORD" => Some("from-environment".to_string()),
            _ => bare(name),
        };
        let target = Target::parse_in("service=farm", &env).unwrap();
        assert_eq!(target.server, "db.example:6543");
        assert_eq!(target.location, "service=farm");
        assert_eq!(target.config.get_dbname(), Some("latency"));
        // libpq's order: the service's password before PGPASSWORD.
        assert_eq!(target.config.get_password(), Some(&b"from-service"[..]));
        assert_eq!(target.tls, Tls::Verified { root_file: None });
        assert_eq!(
            target.timeouts.connect,
            Some(std::time::Duration::from_secs(9))
        );
        // What the location gives overrides its service.
        let target = Target::parse_in(
            "postgres://me:pw@127.0.0.1/other?service=farm&sslmode=disable",
            &env,
        )
        .unwrap();
        assert_eq!(target.server, "127.0.0.1:6543");
        assert_eq!(target.config.get_user(), Some("me"));
        assert_eq!(target.config.get_dbname(), Some("other"));
        assert_eq!(target.tls, Tls::Off);
        assert_eq!(
            target.location,
            "postgres://me@127.0.0.1/other?service=farm&sslmode=disable"
        );
        let shown = Target::parse_in("host=db password='p w' dbname=x", &bare)
            .unwrap()
            .location;
        assert_eq!(shown, "host=db dbname=x");
        let e = Target::parse_in("service=none", &env)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("no service [none]") && e.contains("services.conf"),
            "{e}"
        );
    }
}

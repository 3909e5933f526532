//! Reaching the PostgreSQL server: the URL (its `sslmode` and `sslrootcert`, which
//! the driver does not take), the password from the environment or the password file,
//! the limits on every wait ([`super::timeouts`]), TLS, and the driver's errors as
//! [`StoreError`]s that name the cause and the fix.

use super::link::{Failure, Link, Waiter};
use super::timeouts::Timeouts;
use crate::pgpass::{self, Lookup};
use crate::StoreError;
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

/// True when `location` is a PostgreSQL URL rather than a path.
pub fn is_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// `url` without its password (in the user part or as a `password=` parameter), for
/// every message and every place it is kept.
pub fn redact(url: &str) -> String {
    latlab_model::text::redact_url(url)
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
    pub(super) fn parse(url: &str) -> Result<Target, StoreError> {
        let location = redact(url);
        let bad = |reason: String| StoreError::BadLocation {
            given: location.clone(),
            reason,
        };
        // The driver knows only disable/prefer/require and no root file: take both out.
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut tls = Tls::Off;
        let mut root_file = None;
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("sslmode", mode)) => {
                    tls = match mode {
                        "disable" | "allow" | "prefer" => Tls::Off,
                        "require" | "verify-ca" | "verify-full" => {
                            Tls::Verified { root_file: None }
                        }
                        other => {
                            return Err(bad(format!(
                                "sslmode={other} is not known: write disable, prefer, require, \
                                 verify-ca or verify-full"
                            )))
                        }
                    }
                }
                Some(("sslrootcert", file)) => root_file = Some(PathBuf::from(file)),
                // libpq's name; the driver's is keepalives_retries.
                Some(("keepalives_count", n)) => rest.push(format!("keepalives_retries={n}")),
                _ => rest.push(pair.to_string()),
            }
        }
        if let Tls::Verified { root_file: slot } = &mut tls {
            *slot = root_file;
        }
        let driver_url = match rest.is_empty() {
            true => base.to_string(),
            false => format!("{base}?{}", rest.join("&")),
        };
        let mut config: Config = driver_url.parse().map_err(|e| {
            bad(format!(
                "not a PostgreSQL URL latlab can use ({e}); write \
                 postgres://USER@HOST[:PORT]/DATABASE[?sslmode=require]"
            ))
        })?;
        if config.get_hosts().is_empty() {
            config.host_path("/var/run/postgresql");
        }
        if config.get_user().is_none() {
            match std::env::var("PGUSER")
                .or_else(|_| std::env::var("USER"))
                .or_else(|_| std::env::var("LOGNAME"))
            {
                Ok(user) => config.user(&user),
                Err(_) => {
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
            let from_env = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty());
            let from_file = || {
                pgpass::password_file().and_then(|file| {
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
        let given = |key: &str| {
            rest.iter()
                .find_map(|p| p.strip_prefix(key)?.strip_prefix('='))
        };
        let timeouts = Timeouts::resolve(given("connect_timeout"), config.get_options(), &|name| {
            std::env::var(name).ok()
        })
        .map_err(|e| bad(format!("{e}; see docs/long-runs-and-farm.md, Timeouts")))?;
        if let Some(connect) = timeouts.connect {
            config.connect_timeout(connect);
        }
        config.options(&timeouts.options);
        // A server gone without a word (a pulled cable, a crashed host) is noticed by
        // TCP too, also on a connection idle between checkpoints.
        if given("tcp_user_timeout").is_none() {
            config.tcp_user_timeout(DEAD_PEER_TIMEOUT);
        }
        if given("keepalives_idle").is_none() {
            config.keepalives_idle(DEAD_PEER_TIMEOUT);
        }
        if given("keepalives_interval").is_none() {
            config.keepalives_interval(KEEPALIVE_INTERVAL);
        }
        if given("keepalives_retries").is_none() {
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

    #[test]
    fn sslmode_chooses_tls_and_bad_urls_say_what_to_write() {
        let tls = |url: &str| Target::parse(url).map(|t| t.tls);
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
        let bad = Target::parse("postgres://lab:pw@db/latency?sslmode=sometimes")
            .err()
            .unwrap()
            .to_string();
        assert!(bad.contains("verify-full") && !bad.contains("pw@"), "{bad}");
        let target = Target::parse("postgres://lab:pw@db:6543/latency").unwrap();
        assert_eq!(target.server, "db:6543");
        assert_eq!(target.location, "postgres://lab@db:6543/latency");
    }
}

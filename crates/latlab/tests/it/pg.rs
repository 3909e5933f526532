//! A temporary PostgreSQL cluster for the tests of the farm store: Debian's
//! `postgresql` binaries, a data directory owned by an unprivileged user (`nobody`
//! when the tests run as root, as PostgreSQL refuses to run as root), listening on
//! 127.0.0.1 at a free port and on a socket in its own directory, with a database
//! `latency` owned by the password-protected role `lab`. Dropping it stops the server
//! at once and removes every file, also when the test panics.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The role's password (the tests' own throw-away cluster).
pub const PASSWORD: &str = "s3cret-farm";

/// A running temporary cluster.
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

/// The directory of Debian's PostgreSQL server binaries, the newest version installed.
fn server_binaries() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
    });
    found.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL's server is needed for this test: apt-get install postgresql \
             (scripts/test does)"
        )
    })
}

/// True when this process runs as root (the server must then run as another user).
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

impl PgCluster {
    /// Creates and starts a cluster.
    pub fn start() -> PgCluster {
        let bin = server_binaries();
        let dir = tempfile::Builder::new()
            .prefix("latlab-pg-")
            .tempdir()
            .expect("a temporary directory");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let cluster = PgCluster {
            dir,
            bin,
            port: free_port(),
        };
        if running_as_root() {
            let status = Command::new("chown")
                .args(["nobody:nogroup"])
                .arg(cluster.dir.path())
                .status()
                .expect("chown runs");
            assert!(status.success(), "chown nobody of the cluster's directory");
        }
        cluster.checked(
            cluster
                .server_command("initdb")
                .args([
                    "--auth=trust",
                    "--username=postgres",
                    "--no-sync",
                    "-E",
                    "UTF8",
                ])
                .arg("-D")
                .arg(cluster.data()),
            "initdb",
        );
        // Password logins over TCP; the socket (its directory is the cluster's own)
        // stays trusted for the test's administration.
        std::fs::write(
            cluster.data().join("pg_hba.conf"),
            "local all all trust\nhost all postgres 127.0.0.1/32 trust\n\
             host all all 127.0.0.1/32 scram-sha-256\n",
        )
        .unwrap();
        cluster.start_server();
        cluster.sql_in(
            "postgres",
            &format!("CREATE ROLE lab LOGIN PASSWORD '{PASSWORD}'"),
        );
        cluster.sql_in("postgres", "CREATE DATABASE latency OWNER lab");
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The socket's directory.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The store's URL with the password in it.
    pub fn url(&self) -> String {
        format!("postgres://lab:{PASSWORD}@127.0.0.1:{}/latency", self.port)
    }

    /// The store's URL without a password (given by PGPASSWORD or a password file).
    pub fn url_without_password(&self) -> String {
        format!("postgres://lab@127.0.0.1:{}/latency", self.port)
    }

    /// A command running the server binary `name` as the cluster's owner.
    fn server_command(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        let mut command = match running_as_root() {
            true => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
                    .arg(program);
                c
            }
            false => Command::new(program),
        };
        command
            .current_dir(self.dir.path())
            .env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE");
        command
    }

    fn checked(&self, command: &mut Command, what: &str) -> Output {
        let out = command
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{what} cannot run: {e}"));
        let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "{what} failed: {}{}\nserver log:\n{log}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Starts the server (again), waiting until it accepts connections.
    pub fn start_server(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.socket_dir().display()
        );
        self.checked(
            self.server_command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-l", "server.log", "-w", "-t", "60", "-o"])
                .arg(options)
                .arg("start"),
            "pg_ctl start",
        );
    }

    /// Stops the server at once, as a crash or a pulled cable would.
    pub fn stop_server(&self) {
        self.checked(
            self.server_command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"]),
            "pg_ctl stop",
        );
    }

    /// Turns TLS on with a server certificate for 127.0.0.1 signed by a CA made here;
    /// returns the CA's certificate (PEM), for `sslrootcert=`.
    pub fn enable_tls(&self) -> PathBuf {
        let dir = self.dir.path();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap_or_else(|e| panic!("openssl is needed: apt-get install openssl ({e})"));
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=latlab test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "data/server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "data/server.crt",
        ]);
        let key = self.data().join("server.key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        if running_as_root() {
            for file in [key, self.data().join("server.crt")] {
                let status = Command::new("chown")
                    .arg("nobody:nogroup")
                    .arg(file)
                    .status()
                    .unwrap();
                assert!(status.success());
            }
        }
        self.sql("ALTER SYSTEM SET ssl = on");
        self.checked(
            self.server_command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-l", "server.log", "-w", "restart", "-m", "fast"]),
            "pg_ctl restart",
        );
        dir.join("ca.pem")
    }

    /// Runs `sql` in the database `latency` as the superuser over the socket; returns
    /// psql's unaligned output.
    pub fn sql(&self, sql: &str) -> String {
        self.sql_in("latency", sql)
    }

    fn sql_in(&self, database: &str, sql: &str) -> String {
        let out = self.checked(
            self.server_command("psql")
                .args([
                    "-X",
                    "-q",
                    "-A",
                    "-t",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-U",
                    "postgres",
                ])
                .arg("-h")
                .arg(self.socket_dir())
                .arg("-p")
                .arg(self.port.to_string())
                .args(["-d", database, "-c", sql]),
            "psql",
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        // Stopped whether or not it runs; the directory goes with the TempDir.
        let _ = self
            .server_command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

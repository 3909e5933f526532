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

    /// Waits (10 s at most) until the store holds a run named `name`: a run kept from
    /// its start.
    pub fn await_row(&self, name: &str) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.sql(&format!("SELECT count(*) FROM runs WHERE name = '{name}'")) != "1" {
            assert!(
                std::time::Instant::now() < until,
                "run {name} not stored at its start in 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The server's processes: the postmaster (`postmaster.pid`'s first line) and
    /// its children (the sessions' backends, its writers).
    fn processes(&self) -> Vec<u32> {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .expect("the server runs (postmaster.pid)");
        let postmaster: u32 = pid_file
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("postmaster.pid starts with the pid");
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // The parent is the second field after the command name's parenthesis.
            let parent = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if parent == Some(postmaster) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Stops every process of the server (SIGSTOP), as a hung server or host would:
    /// its connections stay open and the kernel still acknowledges what is sent, but
    /// nothing answers. The server goes on (SIGCONT) when the guard is dropped, also
    /// when the test panics.
    pub fn freeze(&self) -> Frozen {
        let pids = self.processes();
        // The postmaster first: it then starts no new backend.
        signal(&pids, "-STOP");
        Frozen { pids }
    }

    /// Bytes sent to the server over TCP that it has not read yet (the receive queues
    /// of its sockets in `/proc/net/tcp`): a request it holds unanswered.
    pub fn unread_bytes(&self) -> u64 {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        table
            .lines()
            .skip(1)
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let local_port = fields.get(1)?.rsplit(':').next()?;
                let queues = fields.get(4)?;
                let unread = queues.split(':').nth(1)?;
                (u16::from_str_radix(local_port, 16).ok()? == self.port)
                    .then(|| u64::from_str_radix(unread, 16).ok())
                    .flatten()
            })
            .sum()
    }

    /// Waits (20 s at most) until the server holds a request unread: a write of
    /// latlab's stuck on the frozen server.
    pub fn await_unread_request(&self) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.unread_bytes() == 0 {
            assert!(
                std::time::Instant::now() < until,
                "no request reached the frozen server in 20 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// A psql session of the superuser that runs `sql` (which must end by printing
    /// `ready`) and then stays connected, its transaction open and its locks held,
    /// until the guard is dropped.
    pub fn holding(&self, sql: &str) -> Holding {
        use std::io::{BufRead, Write};
        let mut child = self
            .psql("postgres", "latency")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("psql runs");
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        // Owned by the guard from here on: killed and reaped whatever happens next.
        let mut holding = Holding {
            child,
            _stdin: None,
        };
        writeln!(stdin, "{sql}").expect("psql reads");
        // Kept open: psql ends, and the transaction with it, when its input does.
        holding._stdin = Some(stdin);
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("psql answers");
        assert_eq!(line.trim(), "ready", "psql did not get there: {line}");
        holding
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
        let out = self.checked(self.psql("postgres", database).args(["-c", sql]), "psql");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// psql of `role`, in `database` over the socket (trusted), its output unaligned.
    fn psql(&self, role: &str, database: &str) -> Command {
        let mut command = self.server_command("psql");
        command
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-U", role])
            .arg("-h")
            .arg(self.socket_dir())
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-d", database]);
        command
    }

    /// The rows `sql` returns in the database `latency` to the role `role` (which
    /// logs in over the socket without a password), each column's value as psql
    /// prints it, `None` for NULL; or what the server said when it refused.
    pub fn rows_as(&self, role: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        const FIELD: &str = "\u{1f}";
        const NULL: &str = "\u{1a}";
        let out = self
            .psql(role, "latency")
            .args(["-F", FIELD, "-P", &format!("null={NULL}"), "-c", sql])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("psql cannot run: {e}"));
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|line| !line.is_empty())
            .map(|line| {
                line.split(FIELD)
                    .map(|v| (v != NULL).then(|| v.to_string()))
                    .collect()
            })
            .collect())
    }

    /// [`rows_as`](PgCluster::rows_as) of the superuser, which a query must not fail.
    pub fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        self.rows_as("postgres", sql)
            .unwrap_or_else(|e| panic!("{sql}\nfailed: {e}"))
    }
}

/// `kill SIGNAL PID…` (the processes of the test's own cluster, by pid).
fn signal(pids: &[u32], signal: &str) {
    let _ = Command::new("kill")
        .arg(signal)
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

/// The server's processes, stopped until this is dropped.
pub struct Frozen {
    pids: Vec<u32>,
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal(&self.pids, "-CONT");
    }
}

/// A psql session holding what it took, until dropped.
pub struct Holding {
    child: std::process::Child,
    _stdin: Option<std::process::ChildStdin>,
}

impl Drop for Holding {
    fn drop(&mut self) {
        // The session ends, and its transaction with it.
        let _ = self.child.kill();
        let _ = self.child.wait();
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

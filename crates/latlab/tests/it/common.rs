//! What the integration tests of the `latlab` binary share: running it, measuring with
//! it (one measurement at a time, leaving nothing behind), reading its fixtures and
//! stores.

use assert_cmd::Command;
use latlab_model::run::{Run, RunFormatError, Stream};
use std::cell::Cell;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Once, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// Measurements share two CPUs. Most tests check only what their own run wrote (counts
/// that add up, flags honoured, files their consumers accept) and its own processes:
/// they hold the slot shared, several at once ([`shared`], which [`measurement`] takes).
/// A test that makes a ground truth on a CPU (a spinner, a flood, a stopped task), or
/// checks what is the whole machine's (tracefs settings and instances, IPC objects,
/// `tracing_on`), holds it whole ([`serial`]): then nothing else measures.
static MEASURING: RwLock<()> = RwLock::new(());

/// How this test's thread holds [`MEASURING`].
#[derive(Clone, Copy, PartialEq)]
enum Held {
    Not,
    Shared,
    Whole,
}

thread_local! {
    static HELD: Cell<Held> = const { Cell::new(Held::Not) };
}

/// The measuring slot, held until dropped.
pub struct Slot {
    guard: Option<Guard>,
}

enum Guard {
    Shared {
        _held: RwLockReadGuard<'static, ()>,
    },
    Whole {
        _held: RwLockWriteGuard<'static, ()>,
    },
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.guard.is_some() {
            HELD.set(Held::Not);
        }
    }
}

/// Holds the measuring slot of this test binary whole. A test that already holds it may
/// take it again (as [`measure`] does), so a test holds it across its own snapshot,
/// measurements and checks.
pub fn serial() -> Slot {
    match HELD.get() {
        Held::Whole => Slot { guard: None },
        Held::Shared => panic!("this test holds the measuring slot shared: take serial() first"),
        Held::Not => {
            let guard = MEASURING.write().unwrap_or_else(|e| e.into_inner());
            HELD.set(Held::Whole);
            Slot {
                guard: Some(Guard::Whole { _held: guard }),
            }
        }
    }
}

/// Holds the measuring slot shared with other tests that check only their own runs
/// (see [`MEASURING`]); a test holding it whole keeps it whole.
pub fn shared() -> Slot {
    match HELD.get() {
        Held::Whole | Held::Shared => Slot { guard: None },
        Held::Not => {
            let guard = MEASURING.read().unwrap_or_else(|e| e.into_inner());
            HELD.set(Held::Shared);
            Slot {
                guard: Some(Guard::Shared { _held: guard }),
            }
        }
    }
}

/// The binary under test, its output as wide as it is (no `COLUMNS` from the
/// environment: standard output is a pipe).
pub fn latlab() -> Command {
    let mut command = Command::cargo_bin("latlab").expect("binary built");
    command.env_remove("COLUMNS");
    command
}

/// Its path, for `std::process::Command`.
pub fn latlab_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("latlab")
}

/// Waits until process `pid` catches `signal` (its `SigCgt` in `/proc` has the bit), so
/// that the signal reaches latlab's handler rather than the default action: a run
/// installs its handlers just before it measures. Panics after 20 s, or if it ended.
pub fn await_handler(pid: u32, signal: i32) {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_else(|e| panic!("process {pid} ended before catching signal {signal}: {e}"));
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .expect("a SigCgt line");
        if caught & (1 << (signal - 1)) != 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "process {pid} never caught signal {signal}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until a thread of process `pid` runs at a real-time policy (SCHED_FIFO, RR or
/// DEADLINE): a run's measuring thread takes its policy as it begins to measure. Panics
/// after 20 s, or if the process ended.
pub fn await_measuring(pid: u32) {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap_or_else(|e| panic!("process {pid} ended before measuring: {e}"));
        let real_time = tasks.flatten().any(|task| {
            // The policy is field 41 of stat; the fields after the name's ')' start at 3.
            std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(38))
                    .is_some_and(|policy| matches!(policy, "1" | "2" | "6"))
            })
        });
        if real_time {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "process {pid} never measured"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `program` is on the PATH, or the test panics with the command that installs it.
pub fn needs(program: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()));
    assert!(
        found,
        "{program} is needed for this test: apt-get install {package} (scripts/test does)"
    );
}

/// Output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Where the suite keeps a copy of every Run and comparison latlab wrote for its tests,
/// when set: scripts/test validates them against docs/schema/ after the tests.
pub const KEEP_DIR: &str = "LATLAB_TEST_RUNS_DIR";

/// Keeps `text` for the schema check ([`KEEP_DIR`]) when it is a Run or a comparison
/// latlab wrote. A copy is named by its kind and the hash of its content, so a document
/// read twice is kept once, and written under another name first, so the check never
/// reads half of one.
pub fn keep_for_schema_check(text: &str) {
    use std::hash::{Hash, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static PARTIALS: AtomicU64 = AtomicU64::new(0);
    let Some(dir) = std::env::var_os(KEEP_DIR) else {
        return;
    };
    if !text.trim_start().starts_with('{') {
        return;
    }
    let Ok(serde_json::Value::Object(document)) = serde_json::from_str(text) else {
        return;
    };
    let schema = document.get("schema").and_then(|s| s.as_str());
    let kind = match schema {
        Some(s) if s.starts_with("latlab.run/") => "run",
        Some(s) if s.starts_with("latlab.comparison/") => "comparison",
        _ => return,
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    let name = format!("{kind}-{:016x}.json", hasher.finish());
    let dir = Path::new(&dir);
    let partial = PARTIALS.fetch_add(1, Ordering::Relaxed);
    let partial = dir.join(format!(".{name}.{}-{partial}", std::process::id()));
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, dir.join(&name)))
        .unwrap_or_else(|e| panic!("{KEEP_DIR}={}: cannot keep {name}: {e}", dir.display()));
}

/// A Run latlab wrote, read as [`Run::from_json`] reads it, and kept for the schema
/// check ([`keep_for_schema_check`]).
pub fn written_run(text: &str) -> Result<Run, RunFormatError> {
    keep_for_schema_check(text);
    Run::from_json(text)
}

/// Keeps what latlab wrote to the files `args` named (`--json FILE`, `-o FILE`) for
/// the schema check.
fn keep_files_named_in(args: &[&str]) {
    if std::env::var_os(KEEP_DIR).is_none() {
        return;
    }
    for pair in args.windows(2) {
        if matches!(pair[0], "--json" | "-o" | "--output") && pair[1] != "-" {
            if let Ok(written) = std::fs::read_to_string(pair[1]) {
                keep_for_schema_check(&written);
            }
        }
    }
}

/// `latlab ARGS` as the leader of a process group of its own: every partner it forks
/// shares the group, so [`assert_nothing_left_of`] finds them and nothing another test
/// started.
pub fn latlab_in_own_group() -> std::process::Command {
    adopt_orphans();
    let mut command = std::process::Command::new(latlab_path());
    command.process_group(0);
    command
}

/// Makes this test process the reaper of orphaned descendants: a partner latlab failed
/// to reap then stays, a zombie of ours, where [`assert_nothing_left_of`] finds it,
/// instead of being reaped by init unseen.
fn adopt_orphans() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        latlab_rt::process::become_subreaper().expect("become a subreaper");
    });
}

/// The processes of process group `pgid`, zombies included.
pub fn processes_in_group(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rfind(')')
                    .and_then(|end| stat[end + 1..].split_whitespace().nth(2))
                    .is_some_and(|group| group == pgid.to_string())
            })
        })
        .collect()
}

/// Asserts that nothing of the ended run `leader` (started by [`latlab_in_own_group`])
/// is left — no partner running, none unreaped — then reaps what it left.
pub fn assert_nothing_left_of(leader: u32, what: &str) {
    let left = processes_in_group(leader);
    for pid in &left {
        // SIGKILL by the pid found in the run's own group, so a failure cleans up too.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    std::thread::sleep(Duration::from_millis(if left.is_empty() { 0 } else { 100 }));
    latlab_rt::process::reap_group(leader);
    assert_eq!(left, Vec::<u32>::new(), "{what}: processes left behind");
}

/// What a measuring run produced.
pub struct Measurement {
    /// The exit code (-1 when ended by a signal).
    pub code: i32,
    /// The Run written with `--json`, if any.
    pub run: Option<Run>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `latlab run` with `args` plus quiet/no-store/JSON to a temp file, holding the
/// measuring slot (shared, unless the test holds it whole), and checks that no process
/// of it outlives it.
pub fn measurement(args: &[&str]) -> Measurement {
    let _slot = shared();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut command = latlab_in_own_group();
    command
        .arg("run")
        .args(args)
        .args(["-q", "--no-store", "--json"])
        .arg(&json);
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let leader = child.id();
    let (sender, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    // A measurement here lasts seconds; a hang must fail the test, not stall the suite.
    let Ok(out) = outcome.recv_timeout(Duration::from_secs(120)) else {
        assert_nothing_left_of(leader, "a run that did not end in 120 s");
        panic!("latlab run {args:?} did not end in 120 s");
    };
    let out = out.unwrap();
    assert_nothing_left_of(leader, &format!("latlab run {args:?}"));
    let run = std::fs::read_to_string(&json)
        .ok()
        .map(|json| written_run(&json).expect("the Run parses back into the model"));
    Measurement {
        code: out.status.code().unwrap_or(-1),
        run,
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

/// [`measurement`] of a run that writes its Run: the exit code, the Run and the human
/// output.
pub fn measure(args: &[&str]) -> (i32, Run, String) {
    let m = measurement(args);
    let run = m
        .run
        .unwrap_or_else(|| panic!("no JSON; stderr: {}", m.stderr));
    (m.code, run, m.stdout)
}

/// A file the real tools wrote (see the fixtures' README).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../latlab-formats/tests/fixtures/import")
        .join(name)
}

/// Runs latlab with `args` plus `--store store`; returns (exit code, stdout, stderr).
/// The Runs and comparisons it wrote, on stdout or to a file `args` name, are kept for
/// the schema check.
pub fn with_store(store: &Path, args: &[&str]) -> (i32, String, String) {
    let out = latlab()
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    keep_for_schema_check(&stdout);
    keep_files_named_in(args);
    (out.status.code().unwrap_or(-1), stdout, text(&out.stderr))
}

/// What holds for any measured stream: percentiles in order between min and max, the
/// mean between them, and the histogram and the timeline each holding every sample.
pub fn assert_statistics_ordered(s: &Stream) {
    let st = &s.stats;
    let (min, max) = (st.min_ns.unwrap(), st.max_ns.unwrap());
    let p = |q| {
        st.percentile(q)
            .unwrap()
            .exact()
            .expect("a measured percentile is a value")
    };
    assert!(min <= p(50.0), "min {min:?} > p50");
    assert!(p(50.0) <= p(90.0) && p(90.0) <= p(99.0) && p(99.0) <= p(99.9));
    assert!(p(99.9) <= p(99.99) && p(99.99) <= p(99.999) && p(99.999) <= max);
    let mean = st.mean_ns.unwrap();
    assert!(min.0 as f64 <= mean && mean <= max.0 as f64);
    let hist = s.decode_histogram().unwrap().unwrap();
    assert_eq!(hist.len(), s.samples, "histogram total = samples");
    assert_eq!(s.histogram.as_ref().unwrap().total, s.samples);
    assert_eq!(
        s.timeline.count.iter().sum::<u64>(),
        s.samples,
        "timeline counts add up"
    );
}

/// An empty directory (a tracefs instance a test made or left) removed when dropped,
/// should the test fail before it is gone.
pub struct RmdirOnDrop(pub PathBuf);

impl Drop for RmdirOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Waits (20 s at most) until run `name` in `store` has written its first checkpoint,
/// so that a test ending it early knows it kept something; `outbox` is the run's
/// `LATLAB_OUTBOX`.
pub fn await_checkpoint(store: &str, name: &str, outbox: &Path) {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let out = latlab()
            .env("LATLAB_OUTBOX", outbox)
            .args(["show", name, "--json", "-", "--store", store])
            .output()
            .unwrap();
        let run = written_run(&text(&out.stdout)).ok();
        if run.is_some_and(|r| r.progress.is_some_and(|p| p.checkpoints >= 1)) {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "run {name} wrote no checkpoint in 20 s: {}",
            text(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Clients that hold a connection to a server open without finishing a request, of
/// each kind in turn: connected and silent; half a request sent; a request sent a byte
/// at each [`trickle`](SlowClients::trickle) (what kept a server reading for as long as
/// the client liked when only each read had a time limit); a whole request sent and
/// its answer never read. Closed when dropped.
pub struct SlowClients {
    trickling: Vec<(std::net::TcpStream, usize)>,
    _others: Vec<std::net::TcpStream>,
}

impl SlowClients {
    /// The request a trickling client sends, byte by byte: a header that never ends.
    const TRICKLED: &'static [u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \
        aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    /// Opens `n` slow connections to `address` (`127.0.0.1:PORT`), asking for `path`.
    pub fn open(address: &str, path: &str, n: usize) -> SlowClients {
        use std::io::Write;
        let mut clients = SlowClients {
            trickling: Vec::new(),
            _others: Vec::new(),
        };
        for i in 0..n {
            let mut connection = std::net::TcpStream::connect(address).unwrap();
            match i % 4 {
                0 => {}
                1 => connection.write_all(b"GET /metr").unwrap(),
                2 => {
                    connection.write_all(&Self::TRICKLED[..1]).unwrap();
                    clients.trickling.push((connection, 1));
                    continue;
                }
                _ => write!(
                    connection,
                    "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
                )
                .unwrap(),
            }
            clients._others.push(connection);
        }
        clients
    }

    /// Sends each trickling client's next byte (a server that closed it is no error).
    pub fn trickle(&mut self) {
        use std::io::Write;
        for (connection, sent) in &mut self.trickling {
            if let Some(byte) = Self::TRICKLED.get(*sent) {
                let _ = connection.write_all(std::slice::from_ref(byte));
                *sent += 1;
            }
        }
    }
}

/// The status of the answer to `head`, a request head sent whole to `address`.
pub fn status_of_request(address: &str, head: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let mut connection = std::net::TcpStream::connect(address).unwrap();
    connection
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server may answer and close before it has read all of an oversized head:
    // what it answered first is read all the same.
    let _ = connection.write_all(head);
    let mut answer = Vec::new();
    let _ = connection.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no answer: {answer:?}"))
}

/// A request head of more than 16 KiB (`path` with a long header), which both servers
/// answer 431.
pub fn oversized_head(path: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: {}\r\n\r\n",
        "a".repeat(32 * 1024)
    )
    .into_bytes()
}

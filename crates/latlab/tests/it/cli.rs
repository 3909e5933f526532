//! End-to-end tests of the `latlab` binary: real probes for about a second each,
//! asserting invariants only (counts add up, statistics ordered, no early wakes with
//! absolute sleeps, clean-up), never absolute latencies — these machines are noisy VMs.

use crate::common::{latlab, measure, serial, shared};

use latlab_model::run::{Run, Stream};
use latlab_model::threshold::Status;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn assert_ordered(s: &Stream) {
    crate::common::assert_statistics_ordered(s);
    let max = s.stats.max_ns.unwrap();
    assert!(s
        .spikes
        .top
        .windows(2)
        .all(|w| w[0].value_ns >= w[1].value_ns));
    if let Some(top) = s.spikes.top.first() {
        assert_eq!(top.value_ns, max);
    }
}

/// Absolute-deadline methods: every period of the span is a sample or a missed period.
fn check_absolute(method: &str) {
    // Spinning methods keep the CPU busy, which would starve other tests' runs there.
    let _guard = matches!(method, "spin" | "hybrid").then(serial);
    let (code, run, _) = measure(&["-c", "0", "-p", "1ms", "-d", "1s", "--method", method]);
    assert_eq!(code, 0);
    assert_eq!(run.streams.len(), 1);
    let s = &run.streams[0];
    assert_eq!(s.method.as_deref(), Some(method));
    assert_eq!(s.cpu, Some(0));
    assert!(s.samples > 0);
    assert_eq!(
        s.samples + s.missed_periods.unwrap(),
        1000,
        "{method}: periods elapsed"
    );
    assert_eq!(
        s.early_wakes,
        Some(0),
        "{method}: no early wakes with absolute deadlines"
    );
    assert!(s.stats.min_ns.unwrap().0 >= 0);
    assert!(s.first_sample_ns.is_some());
    assert!(s.drift_ns.is_none());
    assert_ordered(s);
    assert!(!run.interrupted);
}

#[test]
fn abs_counts_every_period() {
    check_absolute("abs");
}

#[test]
fn timerfd_counts_every_period() {
    check_absolute("timerfd");
}

#[test]
fn posix_timer_counts_every_period() {
    check_absolute("posix-timer");
}

#[test]
fn spin_counts_every_period() {
    check_absolute("spin");
}

#[test]
fn hybrid_counts_every_period() {
    check_absolute("hybrid");
}

#[test]
fn rel_reports_drift_and_loses_periods_to_it() {
    let (code, run, _) = measure(&["-c", "1", "-p", "2ms", "-d", "1s", "--method", "rel"]);
    assert_eq!(code, 0);
    let s = &run.streams[0];
    let drift = s.drift_ns.expect("rel reports drift").0;
    assert_eq!(
        s.warm_up_samples, 0,
        "relative sleeps start at the common start too"
    );
    assert!(
        drift >= 0,
        "a relative schedule can only fall behind: {drift}"
    );
    // The schedule slides by the drift, so fewer periods fit in the span.
    let periods = s.samples + s.missed_periods.unwrap();
    assert!(periods <= 500, "{periods}");
    assert!(
        periods as i64 >= (1_000_000_000 - drift) / 2_000_000 - 1,
        "{periods}"
    );
    assert_ordered(s);
}

#[test]
fn every_cpu_by_default_with_fifo_95() {
    let (code, run, _) = measure(&["-d", "1s"]);
    assert_eq!(code, 0);
    let cpus: Vec<Option<usize>> = run.streams.iter().map(|s| s.cpu).collect();
    assert_eq!(cpus.len(), run.host.as_ref().unwrap().cpus_online.unwrap());
    for s in &run.streams {
        assert_eq!(s.policy.unwrap().to_string(), "fifo:95");
        assert_ordered(s);
    }
    assert!(run.conditions.as_ref().unwrap().memory_locked);
    assert!(run.conditions.as_ref().unwrap().realtime_policy);
    assert!(!run.degraded);
}

#[test]
fn the_run_round_trips_through_json() {
    let (_, run, _) = measure(&["-c", "0", "-d", "1s", "--spike", "1us", "--top", "3"]);
    let again = Run::from_json(&run.to_json_pretty()).unwrap();
    assert_eq!(again, run);
    assert_eq!(run.schema, "latlab.run/2");
    assert!(!run.host.as_ref().unwrap().kernel_release.is_empty());
    assert!(!run.host.as_ref().unwrap().preemption.model.is_empty());
    let s = &run.streams[0];
    assert!(s.spikes.top.len() <= 3);
    assert!(s
        .spikes
        .above_threshold
        .iter()
        .all(|sp| sp.value_ns.0 > 1_000));
}

#[test]
fn thresholds_decide_the_exit_code() {
    let (code, run, out) = measure(&["-c", "0", "-d", "1s", "--max", "1ns"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(run.verdict.status, Status::Fail);
    let (code, run, out) = measure(&["-c", "0", "-d", "1s", "--max", "10s", "--p99.9", "10s"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(run.verdict.status, Status::Pass);
    assert_eq!(run.verdict.checks.len(), 2);
}

#[test]
fn warm_up_is_discarded() {
    let (_, run, _) = measure(&["-c", "0", "-p", "1ms", "-d", "1s", "--warm-up", "500ms"]);
    let s = &run.streams[0];
    // 500 deadlines fall in the warm-up; a wake there that skipped some counts fewer.
    assert!(
        s.warm_up_samples >= 1 && s.warm_up_samples <= 500,
        "{}",
        s.warm_up_samples
    );
    assert_eq!(s.samples + s.missed_periods.unwrap(), 1000);
}

#[test]
fn json_to_stdout_keeps_stdout_pure() {
    let _guard = shared();
    let out = latlab()
        .args(["run", "-c", "0", "-d", "1s", "--no-store", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let run = crate::common::written_run(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(run.streams.len(), 1);
    let human = String::from_utf8_lossy(&out.stderr);
    assert!(human.contains("samples"), "{human}");
}

#[test]
fn bad_input_is_a_clear_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing_dir = dir.path().join("no/such/dir/out.json");
    let missing = missing_dir.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["-c", "99"], "--cpus: CPU 99 is not online"),
        (&["-c", "x"], "--cpus"),
        (&["-p", "0"], "--period"),
        (&["-p", "1000"], "no unit"),
        (&["-d", "ten"], "--duration"),
        (&["-P", "f:100"], "1 to 99"),
        (&["-P", "fifo"], "needs a priority"),
        (&["-P", "d:2ms:1ms"], "runtime <= deadline <= period"),
        (&["--method", "nap"], "--method"),
        (&["--json", missing], "--json: cannot write"),
        (&["--max", "fast"], "--max"),
        (&["--threshold", "p101=1us"], "out of range"),
        (&["--no-such-flag"], "unexpected argument"),
    ];
    for (args, needle) in cases {
        let out = latlab()
            .arg("run")
            .args(*args)
            .args(["-d", "1s", "--no-store"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(!missing_dir.exists());
}

#[test]
fn deadline_parameters_the_kernel_refuses_exit_2() {
    let _guard = serial();
    // Two threads asking 99 % of a CPU each exceed the default 95 % admission limit.
    let out = latlab()
        .args([
            "run",
            "-c",
            "0-1",
            "-P",
            "d:990us:1ms",
            "-d",
            "1s",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("SCHED_DEADLINE") || err.contains("deadline"),
        "{err}"
    );
}

#[test]
fn deadline_policy_runs_unpinned_and_says_so() {
    let (code, run, _) = measure(&["-c", "0", "-P", "d:100us:1ms", "-d", "1s"]);
    assert_eq!(code, 0);
    assert_eq!(run.streams[0].cpu, None);
    assert!(run.streams[0]
        .policy
        .unwrap()
        .to_string()
        .starts_with("deadline:"));
    assert!(run.warnings.iter().any(|w| w.code == "deadline-unpinned"));
}

/// Sends `signal` to a 30 s run after a second; it must stop promptly with the summary
/// printed and the file written.
fn stops_on(signal: i32) {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let child = std::process::Command::new(crate::common::latlab_path())
        .args(["run", "-c", "0", "-d", "30s", "-q", "--no-store", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::await_handler(child.id(), signal);
    std::thread::sleep(Duration::from_millis(1200));
    let sent = Instant::now();
    // Signal the process we started, by its pid.
    let rc = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(rc.success());
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?} to stop");
    // Stopped before its 30 s: incomplete, exit 4.
    assert_eq!(out.status.code(), Some(4));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Stopped early"), "{stdout}");
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.interrupted);
    let s = &run.streams[0];
    assert!(s.samples > 500 && s.samples < 5_000, "{}", s.samples);
    assert_ordered(s);
}

#[test]
fn sigint_stops_cleanly_and_writes_everything() {
    stops_on(2);
}

#[test]
fn sigterm_stops_cleanly_and_writes_everything() {
    stops_on(15);
}

#[test]
fn not_permitted_runs_degraded_and_says_so() {
    let have = |tool: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !have("setpriv") || !have("prlimit") {
        panic!("setpriv and prlimit (util-linux) are needed: apt-get install util-linux");
    }
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    // Without CAP_SYS_NICE and CAP_IPC_LOCK, and with a 64 KiB memlock limit, neither
    // SCHED_FIFO nor mlockall is permitted.
    let out = std::process::Command::new("prlimit")
        .args(["--memlock=65536:65536", "--rtprio=0:0", "--"])
        .args([
            "setpriv",
            "--inh-caps=-sys_nice,-ipc_lock",
            "--bounding-set=-sys_nice,-ipc_lock",
            "--",
        ])
        .arg(crate::common::latlab_path())
        .args(["run", "-c", "0", "-d", "1s", "-q", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Measured, and said so; degraded, so not a pass: untrusted, exit 5.
    assert_eq!(
        out.status.code(),
        Some(5),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("DEGRADED"), "{stdout}");
    assert!(stdout.contains("VERDICT: UNTRUSTED"), "{stdout}");
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.degraded);
    assert!(!run.conditions.as_ref().unwrap().memory_locked);
    assert!(!run.conditions.as_ref().unwrap().realtime_policy);
    let codes: Vec<&str> = run.warnings.iter().map(|w| w.code.as_str()).collect();
    assert!(codes.contains(&"not-realtime"), "{codes:?}");
    assert!(codes.contains(&"memory-lock-limited"), "{codes:?}");
    assert_eq!(run.streams[0].policy.unwrap().to_string(), "other:0");
    assert!(run.streams[0].samples > 0);
}

/// Puts tracefs back as it was (the break trace deliberately leaves tracing stopped),
/// also when the test fails.
struct TracefsRestore {
    root: &'static str,
    was_mounted: bool,
    tracing_on: Option<String>,
}

impl TracefsRestore {
    /// Where latlab looks for tracefs, in its order; it mounts at the first when
    /// neither is mounted.
    const ROOTS: [&'static str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

    fn capture() -> Self {
        let mounted = Self::ROOTS
            .into_iter()
            .find(|root| std::path::Path::new(root).join("tracing_on").exists());
        let root = mounted.unwrap_or(Self::ROOTS[0]);
        TracefsRestore {
            root,
            was_mounted: mounted.is_some(),
            tracing_on: std::fs::read_to_string(std::path::Path::new(root).join("tracing_on")).ok(),
        }
    }

    fn tracing_on(&self) -> String {
        std::fs::read_to_string(std::path::Path::new(self.root).join("tracing_on")).unwrap()
    }
}

impl Drop for TracefsRestore {
    fn drop(&mut self) {
        let on = std::path::Path::new(self.root).join("tracing_on");
        if let Some(v) = &self.tracing_on {
            let _ = std::fs::write(&on, v.trim());
        } else if !self.was_mounted && on.exists() {
            let _ = std::process::Command::new("umount").arg(self.root).status();
        }
    }
}

#[test]
fn breaktrace_stops_at_the_first_sample_over_the_limit() {
    // Another break trace between this one and its check would change tracing_on.
    let _guard = serial();
    let restore = TracefsRestore::capture();
    let (code, run, out) = measure(&["-c", "0", "-d", "5s", "-b", "1ns"]);
    assert_eq!(code, 0, "{out}");
    assert!(run.interrupted);
    assert_eq!(run.events.len(), 1, "{:?}", run.events);
    assert_eq!(run.events[0].kind, "breaktrace");
    assert_eq!(run.streams[0].samples, 1);
    assert!(out.contains("break-trace"), "{out}");
    if run.conditions.as_ref().unwrap().breaktrace_armed {
        assert_eq!(
            restore.tracing_on().trim(),
            "0",
            "tracing is stopped at the event"
        );
    }
}

/// A `-b` run killed while armed leaves tracing on (it never got to turn it back):
/// the next run's sweep turns it off, as the killed run found it, and says so — but
/// not while another run's break trace is armed, which keeps tracing on until it ends.
#[test]
fn tracing_left_on_by_a_killed_breaktrace_run_is_turned_off_by_the_next_run() {
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};
    let _guard = serial();
    let restore = TracefsRestore::capture();
    let Some(_) = &restore.tracing_on else {
        panic!("tracefs is needed: mount it at {}", restore.root);
    };
    let on = std::path::Path::new(restore.root).join("tracing_on");
    std::fs::write(&on, "0").unwrap();
    // A 60 s run with a break trace armed, once it has noted what it found.
    let armed = || -> (Child, PathBuf) {
        let child = Command::new(crate::common::latlab_path())
            .args([
                "run",
                "-c",
                "0",
                "-d",
                "60s",
                "-b",
                "10s",
                "-q",
                "--no-store",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let note = PathBuf::from(format!("/dev/shm/latlab-tracing-on-{}", child.id()));
        let until = Instant::now() + Duration::from_secs(20);
        while !(note.exists() && restore.tracing_on().trim() == "1") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(note.exists(), "the armed run noted tracing_on");
        (child, note)
    };
    let short = || {
        let out = latlab()
            .args(["run", "-c", "0", "-d", "100ms", "-q", "--no-store"])
            .output()
            .unwrap();
        assert!(out.status.success());
        crate::common::text(&out.stderr)
    };
    // Ended by pid if the test fails half-way, so no 60 s run outlives it.
    struct Ended(Vec<u32>);
    impl Drop for Ended {
        fn drop(&mut self) {
            for pid in &self.0 {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
    // The killed run found tracing off; another armed after it found it on.
    let (mut killed, killed_note) = armed();
    let mut ended = Ended(vec![killed.id()]);
    let (mut other, other_note) = armed();
    ended.0.push(other.id());
    killed.kill().unwrap();
    killed.wait().unwrap();
    // Reaped: its pid is no longer ours to signal.
    ended.0.retain(|pid| *pid != killed.id());
    let err = short();
    assert_eq!(
        restore.tracing_on().trim(),
        "1",
        "off under an armed break trace: {err}"
    );
    assert!(killed_note.exists(), "the killed run's note waits: {err}");
    // The other ends as asked, setting back what it found (on); then the next sweep
    // sets back what the killed one found.
    crate::common::await_handler(other.id(), libc::SIGINT);
    let _ = Command::new("kill")
        .args(["-INT", &other.id().to_string()])
        .status();
    other.wait().unwrap();
    ended.0.clear();
    assert!(!other_note.exists(), "an ended run's note is removed");
    assert_eq!(restore.tracing_on().trim(), "1");
    let err = short();
    assert_eq!(restore.tracing_on().trim(), "0", "{err}");
    assert!(err.contains("tracing_on set back to 0"), "{err}");
    assert!(
        err.contains(&format!("latlab pid {}", killed.id())),
        "{err}"
    );
    assert!(!killed_note.exists(), "{err}");
}

#[test]
fn runs_are_stored_and_listed() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let out = latlab()
        .args(["run", "-c", "0", "-d", "1s", "-q", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success());
    let saved = String::from_utf8_lossy(&out.stdout);
    assert!(saved.contains("saved in"), "{saved}");
    let list = latlab()
        .args(["runs", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success());
    assert!(text.contains("1 run shown"), "{text}");
}

#[test]
fn a_corrupt_store_is_a_clear_error_before_measuring() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    std::fs::write(
        &store,
        b"this is not a database, it is a text file of some length",
    )
    .unwrap();
    let out = latlab()
        .args(["run", "-c", "0", "-d", "1s", "-q", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a usable latlab run store"), "{err}");
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = std::process::Command::new(crate::common::latlab_path())
        .args(["methods"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_measuring_threads_take_no_page_fault_while_measuring() {
    for method in ["abs", "timerfd", "posix-timer", "rel", "spin", "hybrid"] {
        let (_, run, _) = measure(&["-c", "0-1", "-d", "1s", "--method", method]);
        for s in &run.streams {
            assert_eq!(s.page_faults, Some(0), "{method} on {}", s.label());
        }
        assert!(!run.warnings.iter().any(|w| w.code == "page-faults"));
    }
}

#[test]
fn json_goes_to_pipes_and_devices_too() {
    let _guard = shared();
    let out = latlab()
        .args(["run", "-c", "0", "-d", "1s", "-q", "--no-store"])
        .args(["--json", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_closed_pipe_keeps_the_verdict() {
    let _guard = shared();
    let mut child = std::process::Command::new(crate::common::latlab_path())
        .args(["run", "-c", "0", "-d", "1s", "--max", "1ns", "--no-store"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read the banner's first byte, then go away like `head -c1`.
    let mut first = [0u8; 1];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    assert_eq!(
        child.wait().unwrap().code(),
        Some(1),
        "the failed threshold still counts"
    );
}

#[test]
fn an_argument_that_is_not_unicode_is_a_usage_error_not_a_crash() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"/no/such/\xff/run.json");
    let out = latlab()
        .args(["run", "-c", "0", "-d", "1s", "--no-store", "--json"])
        .arg(bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--json"), "{err}");
}

/// Processes whose command line or working directory lies under `dir`: what a load
/// started there would leave behind.
fn processes_under(dir: &std::path::Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let cwd = std::fs::read_link(entry.path().join("cwd"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if cmdline.contains(&needle) || cwd.starts_with(&needle) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .filter(|p| !p.ends_with("run.json"))
        .collect();
    left.extend(processes_under(dir));
    left
}

#[test]
fn every_load_works_reports_its_rate_stops_and_leaves_nothing() {
    let loads = [
        "cpu",
        "memory:size=8M",
        "disk:size=16M",
        "net:mode=udp",
        "net:mode=icmp",
        "hackbench:groups=2,fds=4",
        "hackbench:groups=1,fds=4,mode=thread,transport=pipe",
        "hackbench:groups=2,fds=4,mode=process,transport=pipe",
        "dirwalk:root=/usr",
        "find:root=/usr,walkers=2",
        "launch",
        "filecopy:size=8M",
        "exec:while :; do :; done",
    ];
    for load in loads {
        let _guard = serial();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        // Half a second: every load's first unit of work takes far less.
        let out = latlab()
            .args([
                "run",
                "-c",
                "1",
                "-d",
                "500ms",
                "-q",
                "--no-store",
                "--load",
                load,
            ])
            .arg("--load-dir")
            .arg(dir.path())
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{load}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let record = &run.phases[0].loads[0];
        assert_eq!(record.spec, load);
        assert!(record.work > 0, "{load}: no work done");
        assert!(record.rate.is_some_and(|r| r > 0.0), "{load}: no rate");
        // Its processes' CPU time, from the kernel: an exec load's command's, which is
        // its work, is part of it.
        let cpu = record
            .cpu_time
            .unwrap_or_else(|| panic!("{load}: no CPU time"));
        let cpu_ns = (cpu.user_ns.0 + cpu.system_ns.0) as u64;
        assert!(cpu_ns > 0, "{load}: {cpu:?}");
        if record.name == "exec" {
            assert!(
                cpu_ns >= record.work,
                "{load}: {cpu:?} < {} ns",
                record.work
            );
        }
        assert_eq!(record.ended, "stopped", "{load}");
        assert!(
            record.stop_ns < latlab_model::Nanos::SECOND,
            "{load}: stopping took {}",
            record.stop_ns
        );
        assert!(stdout.contains("Loads during phase main"), "{stdout}");
        assert_eq!(
            leftovers(dir.path()),
            Vec::<String>::new(),
            "{load} left something"
        );
    }
}

/// Interrupts a run with loads mid-way; everything must stop and vanish.
fn loads_stop_on(signal: i32) {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let child = std::process::Command::new(crate::common::latlab_path())
        .args(["run", "-c", "1", "-d", "30s", "-q", "--no-store"])
        .args([
            "--load",
            "hackbench:groups=2,fds=4",
            "--load",
            "disk:size=16M",
        ])
        .args(["--load", "exec:sleep 300", "--load-dir"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::await_handler(child.id(), signal);
    std::thread::sleep(Duration::from_millis(1500));
    let groups = process_groups_under(dir.path());
    assert_eq!(
        groups.len(),
        3,
        "each of the three loads runs in a group of its own"
    );
    let rc = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(rc.success());
    let out = child.wait_with_output().unwrap();
    // Stopped before its duration: incomplete (exit 4).
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.interrupted);
    assert_eq!(run.phases[0].loads.len(), 3);
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    // Checked by process group too: not one process is left in the loads' groups.
    let alive: Vec<(u32, u32)> = all_processes()
        .into_iter()
        .filter(|(_, pgid)| groups.contains(pgid))
        .collect();
    assert_eq!(alive, vec![], "processes left in the loads' process groups");
}

/// (pid, process group) of every process.
fn all_processes() -> Vec<(u32, u32)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = &stat[stat.rfind(')')? + 2..];
            let pgid = after.split_whitespace().nth(2)?.parse().ok()?;
            Some((pid, pgid))
        })
        .collect()
}

/// The process groups of the loads' workers running under `dir` (each leads its own
/// group, which holds everything the load started).
fn process_groups_under(dir: &std::path::Path) -> Vec<u32> {
    // The workers (latlab __load ...); latlab itself names the directory too.
    let pids: Vec<u32> = processes_under(dir)
        .iter()
        .filter(|line| line.contains("__load"))
        .filter_map(|line| line.split(':').next()?.parse().ok())
        .collect();
    let mut groups: Vec<u32> = all_processes()
        .into_iter()
        .filter(|(pid, _)| pids.contains(pid))
        .map(|(_, pgid)| pgid)
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

#[test]
fn loads_stop_and_vanish_on_sigint() {
    loads_stop_on(2);
}

#[test]
fn loads_stop_and_vanish_on_sigterm() {
    loads_stop_on(15);
}

#[test]
fn a_load_that_dies_early_is_reported_with_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, out) = measure(&[
        "-c",
        "1",
        "-d",
        "1s",
        "--load",
        // Well past the 200 ms within which a command that ends counts as not started.
        "exec:sleep 0.6; exit 3",
        "--load-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let record = &run.phases[0].loads[0];
    assert!(record.ended.starts_with("ended early"), "{}", record.ended);
    assert!(record.ended.contains("exit status: 3"), "{}", record.ended);
    assert!(run.warnings.iter().any(|w| w.code == "load-ended-early"));
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

#[test]
fn loads_that_cannot_start_fail_before_measuring() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        ("disk:size=100000G", "no space for the disk load"),
        ("nosuchload", "unknown load 'nosuchload'"),
        ("memory:colour=blue", "no parameter 'colour'"),
        ("hackbench:mode=fibers", "give process or thread"),
        ("dirwalk:root=/no/such/dir", "not a directory"),
        ("exec:", "needs a command"),
        ("exec:no-such-command-anywhere -j4", "ended at once"),
    ];
    for (load, needle) in cases {
        let out = latlab()
            .args([
                "run",
                "-c",
                "1",
                "-d",
                "1s",
                "-q",
                "--no-store",
                "--load",
                load,
            ])
            .arg("--load-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{load}: {err}");
        assert!(
            err.contains("--load") && err.contains(needle),
            "{load}: {err}"
        );
        assert!(out.stdout.is_empty() || !String::from_utf8_lossy(&out.stdout).contains("samples"));
        assert_eq!(leftovers(dir.path()), Vec::<String>::new(), "{load}");
    }
}

#[test]
fn every_built_in_scenario_runs_shortened_with_results_per_phase() {
    let list = latlab().arg("scenarios").output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout).into_owned();
    let names: Vec<&str> = text
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 7, "{text}");
    for name in names {
        let dir = tempfile::tempdir().unwrap();
        let shown = latlab().args(["scenarios", "show", name]).output().unwrap();
        let toml_text = String::from_utf8(shown.stdout).unwrap();
        let scenario = latlab_model::scenario::Scenario::parse(&toml_text, name).unwrap();
        let (code, run, out) = measure(&[
            name,
            "-c",
            "1",
            "-d",
            "300ms",
            "--load-dir",
            dir.path().to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{name}: {out}");
        assert_eq!(run.scenario.as_deref(), Some(name));
        let phases: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
        let planned: Vec<&str> = scenario.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(phases, planned, "{name}");
        for (phase, planned) in run.phases.iter().zip(&scenario.phases) {
            let streams: Vec<_> = run
                .streams
                .iter()
                .filter(|s| s.phase == phase.name)
                .collect();
            assert_eq!(
                streams.len(),
                planned.threads.unwrap_or(1),
                "{name}/{}",
                phase.name
            );
            assert!(
                streams.iter().all(|s| s.samples > 0),
                "{name}/{}",
                phase.name
            );
            assert_eq!(
                phase.loads.len(),
                planned.loads.len(),
                "{name}/{}",
                phase.name
            );
            assert!(phase
                .loads
                .iter()
                .all(|l| l.work > 0 && l.ended == "stopped"));
        }
        assert_eq!(leftovers(dir.path()), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn scenario_files_run_and_their_mistakes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(
        &file,
        "name = \"mine\"\ndescription = \"two phases\"\n\n[timer]\nperiod = \"2ms\"\n\n\
         [[phase]]\nname = \"quiet\"\nduration = \"300ms\"\n\n\
         [[phase]]\nname = \"busy\"\nperiods = 100\nloads = [\"cpu\"]\n\n\
         [thresholds]\nmax = \"10s\"\n",
    )
    .unwrap();
    let (code, run, out) = measure(&[file.to_str().unwrap(), "-c", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(run.phases.len(), 2);
    assert_eq!(run.verdict.checks.len(), 2);
    let busy = run.streams.iter().find(|s| s.phase == "busy").unwrap();
    assert_eq!(busy.samples + busy.missed_periods.unwrap(), 100);

    let cases: &[(&str, &str)] = &[
        (
            "[[phase]]\nname = \"x\"\nperiodz = 3\n",
            "line 5: unknown field `periodz`",
        ),
        (
            "[[phase]]\nname = \"x\"\nduration = \"5 fortnights\"\n",
            "phase x: duration",
        ),
        (
            "[[phase]]\nname = \"x\"\nloads = [\"nosuch\"]\n",
            "unknown load 'nosuch'",
        ),
        (
            "[timer]\npriority = \"f:200\"\n[[phase]]\nname = \"x\"\n",
            "timer.priority",
        ),
        (
            "[[phase]]\nname = \"x\"\n[thresholds]\np999x = \"1us\"\n",
            "thresholds.p999x",
        ),
        (
            "[[phase]]\nname = \"x\"\nperiods = 0\n",
            "give at least 1 period",
        ),
        (
            "[[phase]]\nname = \"x\"\n[[phase]]\nname = \"y\"\nloads = [\"disk:size=100000G\"]\n",
            "no space for the disk load",
        ),
    ];
    for (body, needle) in cases {
        std::fs::write(
            &file,
            format!("name = \"bad\"\ndescription = \"d\"\n{body}"),
        )
        .unwrap();
        let out = latlab()
            .arg("run")
            .arg(&file)
            .args(["-q", "--no-store"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {err}");
        assert!(err.contains(needle), "{body}: {err}");
    }
    let out = latlab()
        .args(["run", "no-such-scenario", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scenario 'no-such-scenario'"));
}

#[test]
fn stored_runs_are_shown_and_exported_in_every_format() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store_arg = store.to_str().unwrap();
    for max in ["10s", "1ns"] {
        let out = latlab()
            .args([
                "run", "-c", "0-1", "-d", "1s", "-q", "--max", max, "--store", store_arg,
            ])
            .output()
            .unwrap();
        assert!(out.status.code().is_some_and(|c| c <= 1));
    }
    let show = latlab()
        .args(["show", "last", "--store", store_arg])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.status.success() && text.contains("samples") && text.contains("FAIL"),
        "{text}"
    );
    let show = latlab()
        .args(["show", "last~1", "--store", store_arg])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&show.stdout).contains("PASS"));

    let export = |format: &str| {
        let out = latlab()
            .args(["export", "last", "--format", format, "--store", store_arg])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let run = crate::common::written_run(&export("json")).unwrap();
    assert_eq!(run.streams.len(), 2);
    let csv = export("csv");
    assert_eq!(csv.lines().count(), 3);
    assert!(csv.lines().nth(1).unwrap().starts_with(&run.id));
    let hist = export("cyclictest");
    let total_line = hist.lines().find(|l| l.starts_with("# Total:")).unwrap();
    let totals: Vec<u64> = total_line[8..]
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let overflow_line = hist
        .lines()
        .find(|l| l.starts_with("# Histogram Overflows:"))
        .unwrap();
    let overflows: Vec<u64> = overflow_line[22..]
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let max_line = hist
        .lines()
        .find(|l| l.starts_with("# Max Latencies:"))
        .unwrap();
    let maxes: Vec<i64> = max_line[16..]
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    for (i, s) in run.streams.iter().enumerate() {
        assert_eq!(totals[i] + overflows[i], s.samples, "stream {i}");
        assert_eq!(maxes[i], s.stats.max_ns.unwrap().0 / 1_000);
    }
    let metrics = export("openmetrics");
    assert!(metrics.ends_with("# EOF\n"));
    assert!(metrics.contains(&format!("run=\"{}\"", run.id)));
    let junit = export("junit");
    assert!(
        junit.contains("failures=\"2\"") && junit.contains("<failure"),
        "{junit}"
    );

    let bad = latlab()
        .args(["export", "last", "--format", "yaml", "--store", store_arg])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid value 'yaml' for '--format"));
    let missing = latlab()
        .args(["show", "zzz", "--store", store_arg])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no run 'zzz'"));
}

#[test]
fn compare_finds_a_regression_and_an_improvement() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store_arg = store.to_str().unwrap();
    // The same measurement, the second at SCHED_OTHER with 200 µs of timer slack: its
    // wake-ups come about 200 µs late, a change no noise can hide.
    for extra in [
        &["-P", "f:95"][..],
        &["-P", "o:0", "--timer-slack", "200us"][..],
    ] {
        let out = latlab()
            .args(["run", "-c", "1", "-d", "1s", "-q", "--store", store_arg])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    // Different policies: refused, naming the difference, unless forced.
    let unforced = latlab()
        .args(["compare", "last~1", "last", "--store", store_arg])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&unforced.stderr);
    assert_eq!(unforced.status.code(), Some(2), "{err}");
    assert!(err.contains("policy: fifo:95 (base) vs other:0") && err.contains("--force"));
    // The verdicts on p50, which the 200 µs decide; the maximum is one sample, which a
    // host's millisecond preemption of this VM may put in either run.
    let compare = |base: &str, new: &str| {
        latlab()
            .args(["compare", base, new, "--metric", "p50", "--force"])
            .args(["--tolerance", "10%", "--store", store_arg])
            .output()
            .unwrap()
    };
    let worse = compare("last~1", "last");
    let text = String::from_utf8_lossy(&worse.stdout);
    assert_eq!(worse.status.code(), Some(1), "{text}");
    assert!(
        text.contains("p50: base") && text.contains("REGRESSION"),
        "{text}"
    );
    assert!(text.contains("Method: 95 % distribution-free"), "{text}");
    let better = compare("last", "last~1");
    let text = String::from_utf8_lossy(&better.stdout);
    assert_eq!(better.status.code(), Some(0), "{text}");
    assert!(text.contains("improvement"), "{text}");
    let max = latlab()
        .args([
            "compare", "last~1", "last", "--metric", "max", "--force", "--store", store_arg,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&max.stdout);
    assert!(text.contains("max: base"), "{text}");
    let bad = latlab()
        .args([
            "compare", "last", "last~1", "--metric", "p200", "--store", store_arg,
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn cyclictest_habits_measure_the_same_run_and_say_the_latlab_command() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = latlab()
        .args(["cyclictest", "-m", "-p", "80", "-i", "200", "-D", "1", "-q"])
        .args(["--", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("latlab: as `latlab run -d 1s -q -c 0 -p 200us -P f:80 --no-store --json"),
        "{err}"
    );
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &run.streams[0];
    assert_eq!(
        s.policy,
        Some(latlab_model::spec::SchedSpec::Fifo { priority: 80 })
    );
    assert_eq!(s.period_ns, Some(latlab_model::Nanos(200_000)));
    assert_eq!(
        s.samples + s.missed_periods.unwrap(),
        5_000,
        "1 s of 200 µs periods"
    );
    // A flag cyclictest has and latlab does not take is named, exit 2.
    let out = latlab().args(["cyclictest", "-d", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-d: not one of"));
}

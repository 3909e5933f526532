//! latlab as an ordinary user: under any `RLIMIT_MEMLOCK` a run either happens (marked
//! degraded where it fell short, with the fix) or ends with a clear usage error — never
//! a panic or an abort — and leaves nothing behind: no process, no SysV or POSIX IPC
//! object, no temporary directory.
//!
//! Regression: as `nobody` with Debian's default 8 MiB limit, latlab locked its future
//! memory under a limit that could not hold the run, and the run aborted ("memory
//! allocation of 110592 bytes failed"), panicked ("failed to spawn thread") or leaked a
//! SysV queue.

use crate::common::serial;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `nobody` and `nogroup` on Debian.
const NOBODY: u32 = 65534;

/// A memory-lock limit to run under.
#[derive(Debug, Clone, Copy)]
enum Limit {
    /// `prlimit --memlock=BYTES`.
    Bytes(u64),
    /// No limit: `prlimit --memlock=unlimited` where permitted, else `CAP_IPC_LOCK`
    /// (with which the kernel ignores the limit).
    Unlimited,
}

/// A place the unprivileged runs may write to, removed at the end.
struct Sandbox {
    dir: tempfile::TempDir,
    latlab: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        std::fs::create_dir(work.join("tmp")).unwrap();
        if is_root() {
            for path in [work.clone(), work.join("tmp")] {
                std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).unwrap();
            }
        }
        let built = crate::common::latlab_path();
        // `nobody` must be able to execute it: else a copy it may read, removed with
        // the sandbox.
        let latlab = if others_may_execute(&built) {
            built
        } else {
            let copy = dir.path().join("latlab");
            std::fs::copy(&built, &copy).unwrap();
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
            copy
        };
        Sandbox { dir, latlab }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// `latlab run ARGS` as an unprivileged user under `limit`, writing the Run to
    /// `work/run.json` and its loads' files under `work/tmp`.
    fn run(&self, limit: Limit, args: &[&str]) -> Output {
        let json = self.work().join("run.json");
        let _ = std::fs::remove_file(&json);
        let memlock = match limit {
            Limit::Bytes(n) => Some(format!("--memlock={n}:{n}")),
            Limit::Unlimited if can_raise_memlock() => Some("--memlock=unlimited".to_string()),
            Limit::Unlimited => None,
        };
        let mut command = Command::new("prlimit");
        command.args(memlock.as_deref()).arg("--");
        if is_root() {
            command.args([
                "setpriv",
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
            ]);
            if memlock.is_none() {
                command.args(["--inh-caps=+ipc_lock", "--ambient-caps=+ipc_lock"]);
            }
            command.arg("--");
        }
        command
            .arg(&self.latlab)
            .arg("run")
            .args(args)
            .args(["-q", "--no-store", "--no-audit", "--json"])
            .arg(&json)
            .env("TMPDIR", self.work().join("tmp"))
            .current_dir(self.work())
            .output()
            .expect("prlimit and setpriv (util-linux) are needed: apt-get install util-linux")
    }
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn can_raise_memlock() -> bool {
    Command::new("prlimit")
        .args(["--memlock=unlimited", "--", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every directory on the way is searchable, and the file readable and executable, by
/// others.
fn others_may_execute(path: &Path) -> bool {
    let file_ok = std::fs::metadata(path).is_ok_and(|m| m.mode() & 0o005 == 0o005);
    file_ok
        && path
            .ancestors()
            .skip(1)
            .all(|dir| std::fs::metadata(dir).is_ok_and(|m| m.mode() & 0o001 != 0))
}

/// What an unprivileged run could leave behind: IPC objects and POSIX shared files
/// owned by `nobody`, and processes whose command line names the sandbox.
#[derive(Debug, PartialEq, Eq)]
struct Traces {
    ipc: Vec<String>,
    posix: Vec<String>,
    files: Vec<String>,
}

fn traces(sandbox: &Sandbox) -> Traces {
    let mut ipc = Vec::new();
    for kind in ["-q", "-s", "-m"] {
        let out = Command::new("ipcs").arg(kind).output().expect("ipcs");
        ipc.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.split_whitespace().nth(2) == Some("nobody"))
                .map(|l| format!("{kind} {l}")),
        );
    }
    let owned_by_nobody = |dir: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.metadata().is_ok_and(|m| m.uid() == NOBODY))
            .map(|e| e.path().display().to_string())
            .collect()
    };
    let mut posix = owned_by_nobody("/dev/shm");
    posix.extend(owned_by_nobody("/dev/mqueue"));
    let files = std::fs::read_dir(sandbox.work().join("tmp"))
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .collect();
    Traces { ipc, posix, files }
}

/// Processes whose command line names the sandbox (latlab, its load workers, its
/// forked partners).
fn processes_of(sandbox: &Sandbox) -> Vec<i32> {
    let needle = sandbox.dir.path().to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect()
}

/// Waits up to 2 s for the sandbox's processes to go; ends any that stay (by pid) and
/// returns them.
fn lingering(sandbox: &Sandbox) -> Vec<i32> {
    let since = Instant::now();
    loop {
        let left = processes_of(sandbox);
        if left.is_empty() {
            return left;
        }
        if since.elapsed() > Duration::from_secs(2) {
            for pid in &left {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Checks one run: a run or a clear usage error, the memory lock's outcome said, and
/// nothing left behind.
fn check_run(sandbox: &Sandbox, limit: Limit, args: &[&str]) {
    let before = traces(sandbox);
    let out = sandbox.run(limit, args);
    let what = format!("{limit:?} {args:?}");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let left = lingering(sandbox);
    assert!(
        left.is_empty(),
        "{what}: processes left behind: {left:?}\n{text}"
    );
    assert_eq!(traces(sandbox), before, "{what}: left behind\n{text}");
    match out.status.code() {
        // Measured; degraded without real-time priority or locked memory (untrusted).
        Some(0 | 5) => {}
        Some(2) => {
            assert!(!text.contains("panicked"), "{what}:\n{text}");
            assert!(
                text.contains("error"),
                "{what}: exit 2 without a message:\n{text}"
            );
            return;
        }
        code => panic!("{what}: exit {code:?} (signal {:?}):\n{text}", {
            use std::os::unix::process::ExitStatusExt;
            out.status.signal()
        }),
    }
    let json = std::fs::read_to_string(sandbox.work().join("run.json"))
        .unwrap_or_else(|e| panic!("{what}: no Run written ({e}):\n{text}"));
    let run = crate::common::written_run(&json).unwrap();
    assert!(!run.streams.is_empty(), "{what}: nothing measured");
    let limited = run
        .warnings
        .iter()
        .find(|w| w.code == "memory-lock-limited");
    match limit {
        Limit::Bytes(_) => {
            let warning = limited.unwrap_or_else(|| {
                panic!("{what}: no memory-lock-limited warning: {:?}", run.warnings)
            });
            assert!(warning.degrades && run.degraded, "{what}: not degraded");
            for fix in ["ulimit -l", "limits.d", "CAP_IPC_LOCK"] {
                assert!(warning.message.contains(fix), "{what}: {}", warning.message);
            }
            assert!(text.contains("DEGRADED"), "{what}:\n{text}");
            assert!(!run.conditions.as_ref().unwrap().memory_locked, "{what}");
        }
        Limit::Unlimited => {
            assert!(limited.is_none(), "{what}: {:?}", run.warnings);
            assert!(
                run.conditions.as_ref().unwrap().memory_locked,
                "{what}: {:?}",
                run.warnings
            );
        }
    }
}

#[test]
fn an_unprivileged_user_under_any_memlock_limit_gets_a_run_and_leaves_nothing_behind() {
    let _guard = serial();
    let sandbox = Sandbox::new();
    // The timer probe with a load; then every probe whose partner can be a forked
    // process, as process and (msg) as thread, each a phase of its own.
    let timer_and_load: &[&str] = &["-c", "0", "-d", "300ms", "--load", "cpu"];
    let partners: &[&str] = &[
        "-c",
        "0",
        "-d",
        "200ms",
        "--probe",
        "preempt:task=process",
        "--probe",
        "switch:task=process",
        "--probe",
        "msg",
        "--probe",
        "msg:task=process",
        "--probe",
        "msg:transport=posix-mq,task=process",
        "--probe",
        "sem:kind=sysv,task=process",
        "--probe",
        "sem:kind=posix,task=process",
        "--probe",
        "pi:task=process",
        "--probe",
        "signal:kind=queue,task=process",
    ];
    for limit in [
        Limit::Bytes(64 << 10),
        Limit::Bytes(8 << 20),
        Limit::Unlimited,
    ] {
        check_run(&sandbox, limit, timer_and_load);
        check_run(&sandbox, limit, partners);
    }
}

//! Regression: under a finite `RLIMIT_MEMLOCK` that held what was mapped at the start but
//! not what came later, the memory lock reached into the future, and the next thread or
//! allocation failed (latlab aborted as an ordinary user with Debian's 8 MiB limit).
//!
//! The test runs itself again as an unprivileged user (no `CAP_IPC_LOCK`, so the limit
//! binds). That child lowers its limit to what it maps now plus a little, locks as latlab
//! does when it must map 4 MiB more, then starts a thread on a 2 MiB stack and fills a
//! 3 MiB buffer. A plain `main` (no test harness) keeps the child small and
//! single-threaded, so what it maps is known before it locks.

use latlab_rt::memory::{LockReach, LockRoom, LockScope, MemoryLock};
use std::process::Command;

const CHILD: &str = "LATLAB_MEMLOCK_LIMIT_CHILD";
const MAPPED_LATER: u64 = 4 << 20;

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
    } else {
        parent();
        println!("later_threads_start_under_a_memlock_limit: ok");
    }
}

fn parent() {
    let exe = std::env::current_exe().expect("the test's own path");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // As root, become `nobody` (all capabilities dropped) from a copy it may execute.
    let copy = root.then(|| copy_for_nobody(&exe));
    let mut command = match &copy {
        Some((_dir, path)) => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
                .arg(path);
            c
        }
        None => Command::new(&exe),
    };
    let out = command
        .env(CHILD, "1")
        .output()
        .expect("run the child (setpriv is in util-linux)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "the child failed:\n{text}");
    assert!(text.contains("reach=Current filled=3145728"), "{text}");
}

/// A copy of `exe` in a fresh directory `nobody` may enter (removed with the guard).
fn copy_for_nobody(exe: &std::path::Path) -> (TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir(std::env::temp_dir().join(format!("latlab-memlock-{}", std::process::id())));
    std::fs::create_dir(&dir.0).expect("create a temp dir");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.0.join("child");
    std::fs::copy(exe, &path).expect("copy the test binary");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn child() {
    let start = LockRoom::of_this_process();
    assert!(
        start.binding_limit().is_some() || start.limit.is_none(),
        "the child must not have CAP_IPC_LOCK: {start:?}"
    );
    // Room for what is mapped now and 1 MiB more: not for the 4 MiB that follow.
    let limit = start.mapped + (1 << 20);
    let rlimit = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: setrlimit reads one valid rlimit; lowering a limit is always permitted.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rlimit) } != 0 {
        panic!(
            "cannot set RLIMIT_MEMLOCK to {limit} bytes ({}): the hard limit is lower; \
             raise it (ulimit -Hl) to run this test",
            std::io::Error::last_os_error()
        );
    }
    let room = LockRoom::of_this_process();
    let reach = room
        .reach(MAPPED_LATER)
        .expect("what is mapped now fits the limit");
    let _lock = MemoryLock::lock(LockScope::Touched, reach).expect("lock what is mapped now");
    // What a run does after locking: start a thread, fill a buffer.
    let filled = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let buffer = vec![1u8; 3 << 20];
            buffer.iter().map(|&b| u64::from(b)).sum::<u64>()
        })
        .expect("start a thread after locking")
        .join()
        .expect("the thread ends");
    assert_eq!(reach, LockReach::Current);
    println!("reach={reach:?} filled={filled}");
}

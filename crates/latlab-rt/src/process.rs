//! Process groups and children: how latlab ends the loads it starts, by id, never by
//! name, and how it tells a dead process's leftovers from a live one's.

use crate::RtError;
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

/// Sends `signal` to every process in process group `pgid`.
pub fn signal_group(pgid: u32, signal: i32) -> Result<(), RtError> {
    let pgid = i32::try_from(pgid).map_err(|_| {
        RtError::new(
            "signal a process group",
            std::io::Error::from_raw_os_error(libc::EINVAL),
        )
    })?;
    if pgid <= 1 {
        // 0 and 1 would address our own group or every process: never.
        return Err(RtError::new(
            format!("signal process group {pgid}"),
            std::io::Error::from_raw_os_error(libc::EINVAL),
        ));
    }
    // SAFETY: kill with a negative pid addresses one process group; no memory is passed.
    if unsafe { libc::kill(-pgid, signal) } != 0 {
        return Err(RtError::last(format!("signal process group {pgid}")));
    }
    Ok(())
}

/// Sends `signal` to `child` unless it has ended (then nothing is sent: its pid may
/// name another process once reaped). Returns whether it was sent.
pub fn signal_child(child: &mut std::process::Child, signal: i32) -> Result<bool, RtError> {
    if child
        .try_wait()
        .map_err(|e| RtError::new("wait for a child", e))?
        .is_some()
    {
        return Ok(false);
    }
    let pid = i32::try_from(child.id()).map_err(|_| {
        RtError::new(
            "signal a child",
            std::io::Error::from_raw_os_error(libc::EINVAL),
        )
    })?;
    // SAFETY: the child has not been reaped (try_wait just found it running, and only
    // its owner, who holds it mutably, reaps it), so `pid` names it; no memory passed.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(RtError::last(format!("signal process {pid}")));
    }
    Ok(true)
}

/// True while any process of group `pgid` exists (zombies included).
pub fn group_exists(pgid: u32) -> bool {
    match signal_group(pgid, 0) {
        Ok(()) => true,
        Err(e) => e.errno() == Some(libc::EPERM),
    }
}

/// Terminates the calling process's children when latlab dies: the kernel sends
/// `signal` to this process when its parent exits (`PR_SET_PDEATHSIG`).
pub fn die_with_parent(signal: i32) -> Result<(), RtError> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number, no pointers.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(RtError::last("set the parent-death signal"));
    }
    Ok(())
}

/// Names the calling thread `name` (its `comm`, what `ps`, `top` and trace events
/// show), cut to the kernel's 15 bytes.
pub fn set_name(name: &str) -> Result<(), RtError> {
    let mut bytes: Vec<u8> = name.bytes().filter(|&b| b != 0).take(15).collect();
    bytes.push(0);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes, which
    // `bytes` is, alive for the call.
    if unsafe { libc::prctl(libc::PR_SET_NAME, bytes.as_ptr() as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(RtError::last("set the thread's name"));
    }
    Ok(())
}

/// Makes the calling process the reaper of its orphaned descendants
/// (`PR_SET_CHILD_SUBREAPER`), so the processes of a load that outlive their parent
/// can still be waited for, by their process group.
pub fn become_subreaper() -> Result<(), RtError> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes a flag, no pointers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(RtError::last("become a child subreaper"));
    }
    Ok(())
}

/// True while process `pid` runs: it exists and has not ended (a zombie, which only
/// waits for its parent to reap it, has ended). A process we may not signal is running.
pub fn is_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; no memory is passed.
    if unsafe { libc::kill(pid, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    {
        return false;
    }
    let state = stat_fields(&format!("/proc/{pid}/stat")).and_then(|f| f.into_iter().next());
    !matches!(state.as_deref(), Some("Z" | "X"))
}

/// True while thread `tid` of process `pid` runs. A process whose main thread has
/// ended (`pthread_exit` in `main`: a zombie leader) still runs its other threads.
pub fn is_thread_alive(pid: u32, tid: u32) -> bool {
    match stat_fields(&format!("/proc/{pid}/task/{tid}/stat")) {
        Some(fields) => !matches!(fields.first().map(String::as_str), Some("Z" | "X")),
        None => false,
    }
}

/// The fields of a `/proc/…/stat` file after the command name (which may hold spaces
/// and parentheses): the state (field 3) first, so field N is at N − 3.
fn stat_fields(path: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(path).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// The kernel's id of this boot (`/proc/sys/kernel/random/boot_id`), new at every
/// boot; `None` where it cannot be read.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat` field 22):
/// with its pid, it names one process even after the pid is reused.
pub fn start_ticks(pid: u32) -> Option<u64> {
    stat_fields(&format!("/proc/{pid}/stat"))?
        .get(19)?
        .parse()
        .ok()
}

/// The user ids process `pid` runs as: real, effective, saved and filesystem
/// (`/proc/PID/status`); `None` when it runs no more or cannot be read.
pub fn uids(pid: u32) -> Option<[u32; 4]> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(|id| id.parse::<u32>().ok());
    let mut next = || ids.next().flatten();
    Some([next()?, next()?, next()?, next()?])
}

/// True while the process that was `pid` and started at `started` (ticks since boot,
/// [`start_ticks`]; `None`: unknown) runs: a pid reused by another process is not it.
pub fn is_same_process_alive(pid: u32, started: Option<u64>) -> bool {
    is_alive(pid) && started.is_none_or(|t| start_ticks(pid) == Some(t))
}

/// True while thread `tid` of the process that was `pid` and started at `started`
/// runs ([`is_same_process_alive`], judged by the thread: its process may be a zombie
/// leader whose other threads run on).
pub fn is_same_thread_alive(pid: u32, tid: u32, started: Option<u64>) -> bool {
    is_thread_alive(pid, tid) && started.is_none_or(|t| start_ticks(pid) == Some(t))
}

/// What a latlab process that no longer runs left in a directory: an entry named after
/// its owner's pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The entry.
    pub path: std::path::PathBuf,
    /// The pid its name gives.
    pub owner: u32,
}

/// The entries of `dir` that a latlab which no longer runs left behind: those whose
/// name gives an owner pid (`owner_of`) that is not running ([`is_alive`]), that
/// belong to this user, and whose own type (not a link's target) is what latlab made
/// there (`made`). The one rule for every sweep of what a killed latlab left.
pub fn leftovers(
    dir: &std::path::Path,
    owner_of: impl Fn(&str) -> Option<u32>,
    made: impl Fn(&std::fs::FileType) -> bool,
) -> Vec<Leftover> {
    leftovers_where(dir, owner_of, made, |_, owner| !is_alive(owner))
}

/// [`leftovers`], with what makes an entry's owner gone given by `gone(path, owner)`
/// (for entries that name more than a pid).
pub fn leftovers_where(
    dir: &std::path::Path,
    owner_of: impl Fn(&str) -> Option<u32>,
    made: impl Fn(&std::fs::FileType) -> bool,
    gone: impl Fn(&std::path::Path, u32) -> bool,
) -> Vec<Leftover> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = effective_uid();
    entries
        .flatten()
        .filter_map(|entry| {
            let owner = entry.file_name().to_str().and_then(&owner_of)?;
            let meta = std::fs::symlink_metadata(entry.path()).ok()?;
            let path = entry.path();
            (made(&meta.file_type()) && meta.uid() == me && gone(&path, owner))
                .then_some(Leftover { path, owner })
        })
        .collect()
}

/// Marks every process a load starts, and what they start in turn (the environment
/// is inherited): `<latlab pid>:<its start ticks>`. A process whose mark names a latlab
/// that no longer runs outlived a killed run, and the next run's sweep ends it
/// ([`end_orphaned_loads`]) — even one that left the load's process group and session.
pub const LOAD_OWNER_ENV: &str = "LATLAB_LOAD_OF";

/// This process's [`LOAD_OWNER_ENV`] mark.
pub fn load_owner_mark() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", start_ticks(pid).unwrap_or(0))
}

/// Ends (SIGKILL) the processes of this user marked ([`LOAD_OWNER_ENV`]) by a latlab
/// that no longer runs; says which. Each is held by a pidfd while its mark is read and
/// it is signalled, so a pid reused meanwhile is never hit. A process that cleared its
/// environment is not found.
pub fn end_orphaned_loads() -> Vec<String> {
    let me = std::process::id();
    let uid = effective_uid();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut ended = Vec::new();
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
    {
        if pid == me {
            continue;
        }
        // SAFETY: pidfd_open takes a pid and flags; the descriptor is owned below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) };
        if fd < 0 {
            continue;
        }
        // SAFETY: a descriptor pidfd_open just returned, owned from here on.
        let pidfd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int) };
        let Some((owner, started)) = load_owner_of(pid) else {
            continue;
        };
        let mine = uids(pid).is_some_and(|ids| ids[1] == uid);
        if !mine || owner == me || is_same_process_alive(owner, (started != 0).then_some(started)) {
            continue;
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        // SAFETY: pidfd_send_signal on a pidfd we hold, no siginfo, no flags.
        let sent = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if sent == 0 {
            ended.push(format!(
                "process {pid} ({}) of a load of latlab pid {owner}",
                comm.trim()
            ));
        }
    }
    ended
}

/// The latlab a process's [`LOAD_OWNER_ENV`] mark names: its pid and start ticks.
fn load_owner_of(pid: u32) -> Option<(u32, u64)> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{LOAD_OWNER_ENV}=");
    let mark = environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(key.as_bytes()))?;
    let (owner, started) = std::str::from_utf8(mark).ok()?.split_once(':')?;
    Some((owner.parse().ok()?, started.parse().ok()?))
}

/// The effective user id of the calling process: whose leftovers it may clear.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The pids of the calling process's children (every thread's), from
/// `/proc/self/task/*/children`. A child found here cannot be another process by the
/// time it is signalled: its pid stays taken until this process reaps it.
pub fn children() -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Reaps every exited child without blocking; returns how many were reaped.
pub fn reap_children() -> usize {
    let mut reaped = 0;
    loop {
        let mut status = 0;
        // SAFETY: waitpid for any child, non-blocking, valid pointer.
        if unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } <= 0 {
            return reaped;
        }
        reaped += 1;
    }
}

/// Ends every descendant of a subreaper ([`become_subreaper`]): SIGTERM to each child,
/// then SIGKILL to what is left after `grace`, reaping as they go, until no child is
/// left. A descendant whose parent dies is re-parented to this process, so it is found
/// on the next round, whatever process group or session it moved to. Gives up after
/// `grace` plus two seconds (a child that survives SIGKILL is stuck in the kernel).
/// Returns how many children were ended.
pub fn end_children(grace: Duration) -> usize {
    let started = Instant::now();
    let mut ended = 0;
    let mut asked = std::collections::HashSet::new();
    loop {
        ended += reap_children();
        let children = children();
        if children.is_empty() || started.elapsed() > grace + Duration::from_secs(2) {
            return ended;
        }
        let signal = if started.elapsed() < grace {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        for pid in children {
            if signal == libc::SIGKILL || asked.insert(pid) {
                // SAFETY: `pid` is an unreaped child of ours, so it names that process;
                // kill passes no memory.
                unsafe { libc::kill(pid as i32, signal) };
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps every exited child in process group `pgid` without blocking; returns how
/// many were reaped.
pub fn reap_group(pgid: u32) -> usize {
    let Ok(pgid) = i32::try_from(pgid) else {
        return 0;
    };
    if pgid <= 1 {
        return 0;
    }
    let mut reaped = 0;
    loop {
        let mut status = 0;
        // SAFETY: waitpid for any child in the group, non-blocking, valid pointer.
        let rc = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if rc <= 0 {
            return reaped;
        }
        reaped += 1;
    }
}

/// Raises the soft limit on open files to the hard limit (loads such as hackbench
/// open many descriptors).
pub fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit; raising the soft limit up to
    // the hard limit needs no privilege.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[cfg(test)]
mod identity_tests {
    use super::*;

    #[test]
    fn a_thread_is_alive_until_it_ends() {
        let me = std::process::id();
        let (tx, rx) = std::sync::mpsc::channel();
        let (end_tx, end_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let tid = crate::sched::gettid() as u32;
            tx.send(tid).unwrap();
            end_rx.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        assert!(is_thread_alive(me, tid));
        assert!(is_same_thread_alive(me, tid, start_ticks(me)));
        assert!(!is_same_thread_alive(
            me,
            tid,
            start_ticks(me).map(|t| t + 1)
        ));
        end_tx.send(()).unwrap();
        thread.join().unwrap();
        // join returns once the kernel clears the thread's id, a moment before its
        // /proc entry goes.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while is_thread_alive(me, tid) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!is_thread_alive(me, tid));
    }

    #[test]
    fn this_process_is_alive_with_its_start_time_and_not_with_another() {
        let me = std::process::id();
        let started = start_ticks(me).expect("our own /proc/PID/stat");
        assert!(is_same_process_alive(me, Some(started)));
        assert!(is_same_process_alive(me, None));
        assert!(
            !is_same_process_alive(me, Some(started + 1)),
            "a reused pid"
        );
        let boot = boot_id().expect("the kernel's boot id");
        assert_eq!(boot.len(), 36, "{boot}");
    }
}

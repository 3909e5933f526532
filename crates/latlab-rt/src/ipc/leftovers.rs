//! What a killed latlab leaves of its SysV objects, and how the next one removes it.
//!
//! A SysV queue or semaphore set outlives the process that made it, and one created
//! `IPC_PRIVATE` carries no sign of its owner. So each process keeps a record of the
//! objects it holds in a file named after its pid, `latlab-sysv-<pid>` in `/dev/shm`
//! (which, like the objects, does not survive a reboot), one line per object:
//! `msg ID CTIME` or `sem ID CTIME`. An object leaves the record when it is removed, and
//! the file with its last object. [`sweep_stale`] removes the objects of records whose
//! process is gone — only if the object still has the identity recorded (same kind, id,
//! creator and creation time), so an id the kernel has since given to someone else is
//! never touched.

use crate::process;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The kind of a SysV object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A message queue (`msgget`).
    Queue,
    /// A semaphore set (`semget`).
    Semaphores,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Queue => "msg",
            Kind::Semaphores => "sem",
        }
    }

    fn from_word(word: &str) -> Option<Kind> {
        match word {
            "msg" => Some(Kind::Queue),
            "sem" => Some(Kind::Semaphores),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Queue => "SysV message queue",
            Kind::Semaphores => "SysV semaphore set",
        }
    }
}

/// One object of the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    kind: Kind,
    id: i32,
    ctime: i64,
}

/// What this process holds, as written in its record.
static HELD: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Where records live: `/dev/shm` where it is a directory, else the temporary one.
fn record_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

const PREFIX: &str = "latlab-sysv-";

/// The object's creator, key and last change time, or `None` if it is gone.
fn identity(kind: Kind, id: i32) -> Option<(u32, i32, i64)> {
    match kind {
        Kind::Queue => {
            // SAFETY: a zeroed msqid_ds is valid; IPC_STAT fills it.
            let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
            // SAFETY: IPC_STAT writes into the valid msqid_ds.
            if unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) } != 0 {
                return None;
            }
            Some((ds.msg_perm.cuid, ds.msg_perm.__key, ds.msg_ctime))
        }
        Kind::Semaphores => {
            // SAFETY: a zeroed semid_ds is valid; IPC_STAT fills it.
            let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
            // SAFETY: IPC_STAT takes a pointer to a semid_ds (the semun's buf).
            if unsafe { libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) } != 0 {
                return None;
            }
            Some((ds.sem_perm.cuid, ds.sem_perm.__key, ds.sem_ctime))
        }
    }
}

fn remove(kind: Kind, id: i32) -> bool {
    // SAFETY: IPC_RMID on an id whose identity the caller checked; no memory passed.
    let rc = unsafe {
        match kind {
            Kind::Queue => libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()),
            Kind::Semaphores => libc::semctl(id, 0, libc::IPC_RMID),
        }
    };
    rc == 0
}

/// Rewrites this process's record with `held` (removes it when empty). Best effort: a
/// record that cannot be written only means a killed run's object cannot be swept.
fn write_record(held: &[Entry]) {
    let path = record_dir().join(format!("{PREFIX}{}", std::process::id()));
    if held.is_empty() {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let text: String = held
        .iter()
        .map(|e| format!("{} {} {}\n", e.kind.word(), e.id, e.ctime))
        .collect();
    // Not through a link someone planted; private to the user.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path);
    if let Ok(mut file) = file {
        let _ = file.write_all(text.as_bytes());
    }
}

/// Adds a freshly created object to this process's record.
pub(super) fn record(kind: Kind, id: i32) {
    let Some((_, _, ctime)) = identity(kind, id) else {
        return;
    };
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    held.push(Entry { kind, id, ctime });
    write_record(&held);
}

/// Takes a removed object out of this process's record.
pub(super) fn forget(kind: Kind, id: i32) {
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    held.retain(|e| !(e.kind == kind && e.id == id));
    write_record(&held);
}

/// Removes the SysV objects that latlab processes which no longer run left behind
/// (killed before they could clean up), and their records; only this user's. Returns
/// what was removed, in words.
pub fn sweep_stale() -> Vec<String> {
    let me = process::effective_uid();
    let owner_of = |name: &str| name.strip_prefix(PREFIX)?.parse::<u32>().ok();
    let mut removed = Vec::new();
    for left in process::leftovers(&record_dir(), owner_of, |t| t.is_file()) {
        let owner = left.owner;
        let text = std::fs::read_to_string(&left.path).unwrap_or_default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(kind), Some(id), Some(ctime)) = (
                words.next().and_then(Kind::from_word),
                words.next().and_then(|w| w.parse::<i32>().ok()),
                words.next().and_then(|w| w.parse::<i64>().ok()),
            ) else {
                continue;
            };
            let same = identity(kind, id).is_some_and(|(cuid, key, found)| {
                cuid == me && key == libc::IPC_PRIVATE && found == ctime
            });
            if same && remove(kind, id) {
                removed.push(format!("{} {id} (of latlab pid {owner})", kind.describe()));
            }
        }
        let _ = std::fs::remove_file(&left.path);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that names no process: a child that ran and was reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    }

    fn new_queue() -> i32 {
        // SAFETY: msgget with IPC_PRIVATE creates a new queue; no pointers.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        assert!(id >= 0, "msgget: {}", std::io::Error::last_os_error());
        id
    }

    #[test]
    fn only_objects_still_as_recorded_of_ended_processes_are_swept() {
        // A sweep of another test would take this one's record of a dead pid.
        let _serial = crate::ipc::tests::serial();
        let owner = dead_pid();
        let (left, reused) = (new_queue(), new_queue());
        let (_, _, ctime) = identity(Kind::Queue, left).unwrap();
        // `reused` stands for an id the kernel gave to another object since: its
        // recorded creation time does not match.
        let record = record_dir().join(format!("{PREFIX}{owner}"));
        std::fs::write(
            &record,
            format!("msg {left} {ctime}\nmsg {reused} 1\nsem junk\n"),
        )
        .unwrap();
        let removed = if process::is_alive(owner) {
            Vec::new() // the pid was taken again at once: nothing is swept, rightly
        } else {
            sweep_stale()
        };
        let left_gone = identity(Kind::Queue, left).is_none();
        let reused_kept = identity(Kind::Queue, reused).is_some();
        for id in [left, reused] {
            remove(Kind::Queue, id);
        }
        let _ = std::fs::remove_file(&record);
        if process::is_alive(owner) {
            return;
        }
        assert!(left_gone, "the ended process's queue stays: {removed:?}");
        assert!(
            reused_kept,
            "a queue that is not the recorded one was removed"
        );
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert!(!record.exists());
    }

    #[test]
    fn a_live_process_keeps_its_objects_and_its_record() {
        // Another test's objects recorded under this pid would be this record.
        let _serial = crate::ipc::tests::serial();
        let id = new_queue();
        record(Kind::Queue, id);
        let mine = record_dir().join(format!("{PREFIX}{}", std::process::id()));
        let recorded = std::fs::read_to_string(&mine).unwrap_or_default();
        sweep_stale();
        let kept = identity(Kind::Queue, id).is_some();
        remove(Kind::Queue, id);
        forget(Kind::Queue, id);
        assert!(recorded.contains(&format!("msg {id} ")), "{recorded}");
        assert!(kept, "a live process's queue was swept");
        assert!(!mine.exists(), "the record outlived its last object");
    }
}

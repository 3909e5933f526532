//! A reader of a task's page believes nothing it has not checked: pages it must refuse
//! (another user's, a pid reused, a FIFO, writable by others), and a page that changes
//! under it (truncated, overwritten) ending its reading without a signal.

use super::shm::{self, Identity, Publisher, ReadError, Reader, SnapshotError};
use crate::sched;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// A published page of this thread's, with `cycles` cycles woken 20 µs late.
fn published(cycles: u64) -> Publisher {
    let page = Publisher::create(&Identity {
        tid: sched::gettid(),
        period_ns: 1_000_000,
        policy: (libc::SCHED_FIFO as u32, 80),
        name: "trusted".to_string(),
        ..Identity::default()
    })
    .unwrap();
    let c = &page.header().counters;
    let r = Ordering::Relaxed;
    c.first_due_ns.store(1_000_000, r);
    c.last_due_ns.store(cycles as i64 * 1_000_000, r);
    c.cycles.store(cycles, r);
    for m in [&c.wake_min_ns, &c.wake_max_ns] {
        m.store(20_000, r);
    }
    c.wake_sum_ns.store(cycles as i64 * 20_000, r);
    for m in [&c.compute_min_ns, &c.compute_max_ns, &c.compute_sum_ns] {
        m.store(0, r);
    }
    page.wake_counts()[super::hdr::index_of(20_000)].store(cycles, r);
    page.compute_counts()[0].store(cycles, r);
    page
}

/// A copy of `page`'s file under another thread id's name of this process, which the
/// caller changes; removed when dropped.
struct Copy(PathBuf);

impl Copy {
    fn of(page: &Publisher, tid: u32) -> Copy {
        let to = shm::path_of(std::process::id(), tid as i32);
        std::fs::copy(page.path().unwrap(), &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
        Copy(to)
    }

    /// The page's own file, its task gone: changed, it faults no mapping.
    fn unmapped(page: Publisher) -> Copy {
        let own = page.path().unwrap().to_path_buf();
        let copy = own.with_extension("copy");
        std::fs::copy(&own, &copy).unwrap();
        drop(page);
        std::fs::rename(&copy, &own).unwrap();
        Copy(own)
    }

    fn write_word(&self, offset: usize, word: u64) {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.0)
            .unwrap();
        file.write_all_at(&word.to_ne_bytes(), offset as u64)
            .unwrap();
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn untrusted(path: &Path) -> String {
    match Reader::open(path) {
        Err(ReadError::Untrusted { why, .. }) => why,
        other => panic!("{} was not refused as untrusted: {other:?}", path.display()),
    }
}

#[test]
fn a_page_of_its_own_process_is_read() {
    let page = published(10);
    let mut reader = Reader::open(page.path().unwrap()).unwrap();
    let s = reader.snapshot().unwrap();
    assert_eq!((s.name.as_str(), s.counters.cycles), ("trusted", 10));
    assert_eq!(
        std::fs::metadata(page.path().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600,
        "a page is its owner's alone"
    );
}

/// With a mapping, a truncated page killed the reader with SIGBUS. (A copy of the
/// page is truncated: the task's own mapping would fault in the task.)
#[test]
fn a_page_truncated_while_read_ends_the_reading_without_a_signal() {
    let page = published(10);
    let copy = Copy::unmapped(page);
    let mut reader = Reader::open(&copy.0).unwrap();
    assert!(reader.snapshot().is_ok());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&copy.0)
        .unwrap()
        .set_len(0)
        .unwrap();
    assert!(
        matches!(reader.snapshot(), Err(SnapshotError::Lost(ref why)) if why.contains("truncated")),
        "a truncated page must be lost"
    );
    assert!(reader.has_ended());
}

#[test]
fn a_fifo_at_a_pages_path_is_refused_at_once() {
    let path = shm::path_of(std::process::id(), i32::MAX - 7);
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let why = untrusted(&path);
    std::fs::remove_file(&path).unwrap();
    assert!(why.contains("not a regular file"), "{why}");
}

#[test]
fn a_page_others_may_write_is_refused() {
    let page = published(10);
    let copy = Copy::of(&page, i32::MAX as u32 - 8);
    std::fs::set_permissions(&copy.0, std::fs::Permissions::from_mode(0o622)).unwrap();
    assert!(untrusted(&copy.0).contains("other than its owner"));
}

#[test]
fn a_page_naming_another_thread_or_an_earlier_process_is_refused() {
    let page = published(10);
    // Its header names this thread; its file name another.
    let copy = Copy::of(&page, i32::MAX as u32 - 9);
    assert!(untrusted(&copy.0).contains("its name says"));
    // Its own name, but written by a process that started at another time: the pid
    // was reused, or the page is forged.
    drop(copy);
    let copy = Copy::unmapped(page);
    copy.write_word(std::mem::offset_of!(shm::Header, pid_start_ticks), 12_345);
    assert!(untrusted(&copy.0).contains("pid was reused"));
}

/// Another user can create a file at a page's path (`/dev/shm` is writable by all):
/// root's reader must not take it for the task's.
#[test]
fn a_page_another_user_made_is_refused() {
    if crate::process::effective_uid() != 0 {
        panic!("this test gives a page to another user: run it as root (scripts/test does)");
    }
    let page = published(10);
    let copy = Copy::unmapped(page);
    std::os::unix::fs::chown(&copy.0, Some(65_534), Some(65_534)).unwrap();
    assert!(untrusted(&copy.0).contains("another user made it"));
}

#[test]
fn a_page_overwritten_while_read_is_invalid_not_believed() {
    let page = published(10);
    let mut reader = Reader::open(page.path().unwrap()).unwrap();
    assert!(reader.snapshot().is_ok());
    // Counts that go down: another writer, not the task.
    page.header().counters.cycles.store(5, Ordering::Relaxed);
    assert!(matches!(reader.snapshot(), Err(SnapshotError::Invalid(_))));
}

#[test]
fn a_page_mid_update_for_longer_than_the_patience_is_stalled() {
    let page = published(10);
    let mut reader = Reader::open(page.path().unwrap())
        .unwrap()
        .with_patience(std::time::Duration::from_millis(5));
    page.header().seq.store(1, Ordering::Relaxed);
    assert_eq!(reader.snapshot().unwrap_err(), SnapshotError::Stalled);
    page.header().seq.store(2, Ordering::Relaxed);
    assert!(reader.snapshot().is_ok());
}

#[test]
fn text_from_a_page_cannot_move_the_cursor() {
    let page = published(10);
    let name = &page.header().name;
    let escape = u64::from_le_bytes(*b"\x1b[2J\x1b[Hx");
    name[0].store(escape, Ordering::Relaxed);
    let s = Reader::open(page.path().unwrap())
        .unwrap()
        .snapshot()
        .unwrap();
    assert!(!s.name.contains('\u{1b}'), "{:?}", s.name);
    assert!(s.name.contains('\u{fffd}'), "{:?}", s.name);
}

//! The shared-memory page a periodic task publishes its statistics in, for
//! `latlab attach` to read live from another process.
//!
//! One file per task, `/dev/shm/latlab-<pid>-<tid>`, created when the task starts and
//! removed when it ends ([`Publisher`]'s drop); a file whose process is gone (killed)
//! is removed by [`sweep`]. The layout is versioned ([`VERSION`]); all fields are
//! atomics written by the task alone:
//!
//! - the identity (pid, its start time, tid, period, policy, CPU, name, warnings) is
//!   written before [`MAGIC`], which is stored last with release ordering: a reader
//!   that sees the magic sees the identity;
//! - the counters and extremes are under a sequence lock: odd while the task writes
//!   them, so a reader retries a copy taken while it changed;
//! - the two histograms' counts ([`hdr`] layout) follow the header and change in the
//!   same updates as the counters, under the same lock: a reader's copy of counters
//!   and counts is of one cycle, so the counts add up to the cycles.
//!
//! The page is created 0600; a [`Reader`] trusts none of it before checking whose it
//! is (a regular file of a user the process runs as, naming that process and its
//! start time), copies it with `pread` (a truncated page is an error, not a SIGBUS),
//! and [`check`]s every copy: a forged page is refused, never believed.

use crate::periodic::hdr;
use crate::RtError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `LATLABPT` as a little-endian word.
pub const MAGIC: u64 = u64::from_le_bytes(*b"LATLABPT");
/// The layout's version; a reader refuses any other.
pub const VERSION: u32 = 1;
/// The largest samples kept per histogram.
pub const TOP: usize = 16;
/// Bytes of the task's name.
pub const NAME_BYTES: usize = 64;
/// Bytes of the set-up's warnings (what was degraded and how to fix it).
pub const WARNING_BYTES: usize = 1024;

/// The task's state.
pub const STATE_RUNNING: u32 = 1;
/// The task has ended: the counts are final.
pub const STATE_ENDED: u32 = 2;

/// One of the largest samples.
#[repr(C)]
#[derive(Debug, Default)]
pub struct TopEntry {
    /// The sample (ns).
    pub value_ns: AtomicI64,
    /// The cycle it was taken in (0-based).
    pub cycle: AtomicU64,
    /// When it was due (CLOCK_MONOTONIC ns).
    pub due_ns: AtomicI64,
}

/// The counters under the sequence lock.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Counters {
    /// Cycles run (each with a wake-up latency and a compute time sample).
    pub cycles: AtomicU64,
    /// Periods that passed without a cycle (skipped after an overrun).
    pub missed: AtomicU64,
    /// Overruns: cycles whose step ended after the next deadline.
    pub overruns: AtomicU64,
    /// Cycles run late to catch up after an overrun.
    pub caught_up: AtomicU64,
    /// The first deadline (CLOCK_MONOTONIC ns), set when the loop starts: periods
    /// count from it, so a first wake-up periods late counts those as missed.
    pub first_due_ns: AtomicI64,
    /// The last deadline passed: the last cycle's, or after an overrun the last one
    /// it skipped (cycles + missed counts the periods from the first to it).
    pub last_due_ns: AtomicI64,
    /// When the last step ended.
    pub last_end_ns: AtomicI64,
    /// Wake-up latency: least, largest, sum (ns).
    pub wake_min_ns: AtomicI64,
    /// See `wake_min_ns`.
    pub wake_max_ns: AtomicI64,
    /// See `wake_min_ns`.
    pub wake_sum_ns: AtomicI64,
    /// Compute time (wake-up to the end of the step): least, largest, sum (ns).
    pub compute_min_ns: AtomicI64,
    /// See `compute_min_ns`.
    pub compute_max_ns: AtomicI64,
    /// See `compute_min_ns`.
    pub compute_sum_ns: AtomicI64,
    /// Samples above the histograms' highest value, counted at it.
    pub wake_clamped: AtomicU64,
    /// See `wake_clamped`.
    pub compute_clamped: AtomicU64,
    /// The hybrid method's spin margin in use (ns); 0 for the other methods, and for a
    /// margin to be learned until it is.
    pub margin_ns: AtomicI64,
    /// The largest wake-up latencies.
    pub wake_top: [TopEntry; TOP],
    /// The largest compute times.
    pub compute_top: [TopEntry; TOP],
}

/// The header of the page.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    /// [`MAGIC`], stored last at creation.
    pub magic: AtomicU64,
    /// [`VERSION`].
    pub version: AtomicU32,
    /// Bytes of this header; the histograms follow it.
    pub header_bytes: AtomicU32,
    /// Counts per histogram ([`hdr::LEN`]).
    pub hist_len: AtomicU32,
    /// [`STATE_RUNNING`] or [`STATE_ENDED`].
    pub state: AtomicU32,
    /// The process.
    pub pid: AtomicU32,
    /// The thread running the loop.
    pub tid: AtomicU32,
    /// The process's start time (clock ticks after boot, `/proc/PID/stat` field 22):
    /// a pid reused by another process is not taken for the task.
    pub pid_start_ticks: AtomicU64,
    /// The period (ns).
    pub period_ns: AtomicU64,
    /// The CPU the loop is pinned to, -1 when not pinned.
    pub cpu: AtomicI64,
    /// The policy in force: 0 other, 1 fifo, 2 rr, 6 deadline (the kernel's numbers).
    pub policy: AtomicU32,
    /// Its priority (fifo/rr), its nice value as an i32's bits (other/batch), 0
    /// otherwise.
    pub priority: AtomicU32,
    /// The wait method: 0 abs, 1 timerfd, 2 hybrid.
    pub method: AtomicU32,
    /// The overrun policy: 0 skip, 1 catch up, 2 handler.
    pub overrun_policy: AtomicU32,
    /// 1 when memory is locked.
    pub memory_locked: AtomicU32,
    /// Reserved, 0.
    pub reserved: AtomicU32,
    /// The task's name, UTF-8, NUL-padded.
    pub name: [AtomicU64; NAME_BYTES / 8],
    /// The set-up's warnings, one per line, UTF-8, NUL-padded.
    pub warnings: [AtomicU64; WARNING_BYTES / 8],
    /// The sequence lock over `counters`: odd while they change.
    pub seq: AtomicU64,
    /// Counters and extremes.
    pub counters: Counters,
}

/// Bytes of the whole page.
pub fn page_bytes() -> usize {
    std::mem::size_of::<Header>() + 2 * hdr::LEN * std::mem::size_of::<AtomicU64>()
}

/// The page's path for a task: `/dev/shm/latlab-<pid>-<tid>`.
pub fn path_of(pid: u32, tid: i32) -> PathBuf {
    PathBuf::from(format!("/dev/shm/latlab-{pid}-{tid}"))
}

/// The task's mapping of its page (shared and read-write), or its private copy.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is only accessed through atomics.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn map(fd: libc::c_int, len: usize, writable: bool, what: &str) -> Result<Mapping, RtError> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a shared mapping of `len` bytes of the open file `fd`; MAP_FAILED is
        // checked.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        if ptr == libc::MAP_FAILED {
            return Err(RtError::last(format!("map {what}")));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    fn anonymous(len: usize) -> Result<Mapping, RtError> {
        // SAFETY: an anonymous private read-write mapping; MAP_FAILED is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(RtError::last("map memory for the statistics"));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping is at least a Header long (checked at creation and when
        // opened), page-aligned, and Header is atomics only, valid for any bytes.
        unsafe { &*(self.ptr as *const Header) }
    }

    fn counts(&self, which: usize) -> &[AtomicU64] {
        let offset = std::mem::size_of::<Header>() + which * hdr::LEN * 8;
        // SAFETY: the mapping holds the header and two histograms of hdr::LEN counts
        // (checked as for `header`); the offset is 8-byte aligned (Header's size is a
        // multiple of 8) and AtomicU64 is valid for any bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.add(offset) as *const AtomicU64, hdr::LEN) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `map` mapped; no reference outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

fn open_fd(path: &Path, flags: libc::c_int) -> Result<libc::c_int, RtError> {
    let what = format!("open {}", path.display());
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|e| RtError::new(what.clone(), std::io::Error::other(e)))?;
    // SAFETY: a NUL-terminated path; the mode is used only with O_CREAT: the page is
    // its owner's alone to read (an attaching reader is its user or root).
    let fd = unsafe { libc::open(c_path.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    if fd < 0 {
        return Err(RtError::last(what));
    }
    Ok(fd)
}

fn close(fd: libc::c_int) {
    // SAFETY: closes a descriptor this module opened.
    unsafe { libc::close(fd) };
}

/// The task's side: creates the page, writes it, removes it when dropped.
pub struct Publisher {
    map: Mapping,
    /// `None` for a page kept in private memory (not published).
    path: Option<PathBuf>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("path", &self.path)
            .finish()
    }
}

/// What a task says about itself when it starts publishing.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    /// The thread running the loop.
    pub tid: i32,
    /// The period (ns).
    pub period_ns: u64,
    /// The CPU pinned to, if any.
    pub cpu: Option<usize>,
    /// The kernel's policy number and priority.
    pub policy: (u32, u32),
    /// 0 abs, 1 timerfd, 2 hybrid.
    pub method: u32,
    /// 0 skip, 1 catch up, 2 handler.
    pub overrun_policy: u32,
    /// Memory locked.
    pub memory_locked: bool,
    /// The task's name.
    pub name: String,
    /// The set-up's warnings.
    pub warnings: Vec<String>,
}

impl Publisher {
    /// Creates `/dev/shm/latlab-<pid>-<tid>` (replacing a leftover of a dead task
    /// with the same ids) and writes `identity`; every page is touched, so the loop
    /// takes no page fault in it.
    pub fn create(identity: &Identity) -> Result<Publisher, RtError> {
        let pid = std::process::id();
        let path = path_of(pid, identity.tid);
        let _ = std::fs::remove_file(&path);
        let fd = open_fd(&path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)?;
        let len = page_bytes();
        // SAFETY: sizes the file this module just created.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let e = RtError::last(format!("size {}", path.display()));
            close(fd);
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        let map = Mapping::map(fd, len, true, &path.display().to_string());
        close(fd);
        let map = match map {
            Ok(map) => map,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        let publisher = Publisher {
            map,
            path: Some(path),
        };
        publisher.write_identity(pid, identity);
        Ok(publisher)
    }

    /// The same page in private memory: for a task that does not publish (or cannot),
    /// so that it keeps its statistics the same way.
    pub fn private(identity: &Identity) -> Result<Publisher, RtError> {
        let publisher = Publisher {
            map: Mapping::anonymous(page_bytes())?,
            path: None,
        };
        publisher.write_identity(std::process::id(), identity);
        Ok(publisher)
    }

    /// A copy of the page, as a reader takes it. The task's own thread writes it, so
    /// when that thread asks, no update is in flight: only that thread may ask (another
    /// could wait for ever on a page stuck mid-update; readers use [`Reader::snapshot`]).
    pub(crate) fn snapshot(&self) -> Snapshot {
        loop {
            if let Some(snapshot) = snapshot_of(&self.map) {
                return snapshot;
            }
        }
    }

    fn write_identity(&self, pid: u32, id: &Identity) {
        let h = self.map.header();
        let r = Ordering::Relaxed;
        h.version.store(VERSION, r);
        h.header_bytes
            .store(std::mem::size_of::<Header>() as u32, r);
        h.hist_len.store(hdr::LEN as u32, r);
        h.state.store(STATE_RUNNING, r);
        h.pid.store(pid, r);
        h.tid.store(id.tid as u32, r);
        h.pid_start_ticks
            .store(crate::process::start_ticks(pid).unwrap_or(0), r);
        h.period_ns.store(id.period_ns, r);
        h.cpu.store(id.cpu.map_or(-1, |c| c as i64), r);
        h.policy.store(id.policy.0, r);
        h.priority.store(id.policy.1, r);
        h.method.store(id.method, r);
        h.overrun_policy.store(id.overrun_policy, r);
        h.memory_locked.store(u32::from(id.memory_locked), r);
        store_text(&h.name, &id.name);
        store_text(&h.warnings, &id.warnings.join("\n"));
        let c = &h.counters;
        c.wake_min_ns.store(i64::MAX, r);
        c.compute_min_ns.store(i64::MAX, r);
        c.wake_max_ns.store(i64::MIN, r);
        c.compute_max_ns.store(i64::MIN, r);
        for top in c.wake_top.iter().chain(&c.compute_top) {
            top.value_ns.store(i64::MIN, r);
        }
        // Touch every page of the histograms: the loop must not fault on them. They do
        // not start on a page boundary, so one count in every 512 (a page's worth) can
        // miss the last page: its last count is touched too.
        for which in 0..2 {
            let counts = self.map.counts(which);
            for count in counts.iter().step_by(512).chain(counts.last()) {
                count.store(0, r);
            }
        }
        h.magic.store(MAGIC, Ordering::Release);
    }

    /// The header, for the task to write its counters.
    #[inline(always)]
    pub fn header(&self) -> &Header {
        self.map.header()
    }

    /// The wake-up latency histogram's counts.
    #[inline(always)]
    pub fn wake_counts(&self) -> &[AtomicU64] {
        self.map.counts(0)
    }

    /// The compute time histogram's counts.
    #[inline(always)]
    pub fn compute_counts(&self) -> &[AtomicU64] {
        self.map.counts(1)
    }

    /// The page's path (`None` when not published).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

impl Publisher {
    /// Marks the task ended: its counts are final.
    pub fn end(&self) {
        self.header().state.store(STATE_ENDED, Ordering::Release);
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.end();
        // A reader that mapped the page keeps it (and its final counts) until it
        // unmaps; the name goes now.
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn store_text(words: &[AtomicU64], text: &str) {
    let bytes = text.as_bytes();
    let max = words.len() * 8 - 1; // room for a NUL
    let mut end = bytes.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    for (i, word) in words.iter().enumerate() {
        let mut chunk = [0u8; 8];
        for (j, b) in chunk.iter_mut().enumerate() {
            if let Some(&byte) = bytes[..end].get(i * 8 + j) {
                *b = byte;
            }
        }
        word.store(u64::from_le_bytes(chunk), Ordering::Relaxed);
    }
}

fn load_text(words: &[AtomicU64]) -> String {
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
        .take_while(|b| *b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One of the largest samples, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Top {
    /// The sample (ns).
    pub value_ns: i64,
    /// The cycle (0-based).
    pub cycle: u64,
    /// When it was due (CLOCK_MONOTONIC ns).
    pub due_ns: i64,
}

/// A consistent copy of the counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountersCopy {
    /// See [`Counters::cycles`].
    pub cycles: u64,
    /// See [`Counters::missed`].
    pub missed: u64,
    /// See [`Counters::overruns`].
    pub overruns: u64,
    /// See [`Counters::caught_up`].
    pub caught_up: u64,
    /// See [`Counters::first_due_ns`].
    pub first_due_ns: i64,
    /// See [`Counters::last_due_ns`].
    pub last_due_ns: i64,
    /// See [`Counters::last_end_ns`].
    pub last_end_ns: i64,
    /// Least wake-up latency, `None` before the first cycle.
    pub wake_min_ns: Option<i64>,
    /// Largest wake-up latency.
    pub wake_max_ns: Option<i64>,
    /// Sum of wake-up latencies.
    pub wake_sum_ns: i64,
    /// Least compute time.
    pub compute_min_ns: Option<i64>,
    /// Largest compute time.
    pub compute_max_ns: Option<i64>,
    /// Sum of compute times.
    pub compute_sum_ns: i64,
    /// See [`Counters::wake_clamped`].
    pub wake_clamped: u64,
    /// See [`Counters::compute_clamped`].
    pub compute_clamped: u64,
    /// The hybrid method's spin margin in use; `None` for the other methods and for
    /// a margin to be learned that is not learned yet (the page's 0).
    pub margin_ns: Option<i64>,
    /// The largest wake-up latencies, largest first.
    pub wake_top: Vec<Top>,
    /// The largest compute times, largest first.
    pub compute_top: Vec<Top>,
}

/// A task's page as a reader sees it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The process.
    pub pid: u32,
    /// Its start time in clock ticks after boot (0 when it could not be read).
    pub pid_start_ticks: u64,
    /// The loop's thread.
    pub tid: u32,
    /// The period (ns).
    pub period_ns: u64,
    /// The CPU pinned to.
    pub cpu: Option<usize>,
    /// The kernel's policy number.
    pub policy: u32,
    /// Its priority (fifo/rr), or its nice value as an i32's bits (other/batch).
    pub priority: u32,
    /// 0 abs, 1 timerfd, 2 hybrid.
    pub method: u32,
    /// 0 skip, 1 catch up, 2 handler.
    pub overrun_policy: u32,
    /// Memory locked.
    pub memory_locked: bool,
    /// The task's name.
    pub name: String,
    /// The set-up's warnings.
    pub warnings: Vec<String>,
    /// The task has ended (its counts are final).
    pub ended: bool,
    /// The counters.
    pub counters: CountersCopy,
    /// Wake-up latency counts ([`hdr`] layout).
    pub wake_counts: Vec<u64>,
    /// Compute time counts.
    pub compute_counts: Vec<u64>,
}

/// A reader of a task's page: a file it trusts only after checking whose it is, and
/// reads by copying (`pread`), never by mapping, so a page truncated or replaced
/// while it reads is an error, not a SIGBUS.
pub struct Reader {
    file: std::fs::File,
    path: PathBuf,
    /// The header's bytes, as last copied.
    header: HeaderCopy,
    /// How long an update in flight may last before the page counts as stalled.
    patience: Duration,
    /// The snapshot taken before: the next must be of the same task, and count on
    /// from it.
    previous: Option<Snapshot>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("path", &self.path).finish()
    }
}

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No such page, or it cannot be opened.
    #[error(transparent)]
    Open(#[from] RtError),
    /// Not a page of this layout: too short, another magic or version.
    #[error("{path} is not a latlab periodic task's page of layout version {VERSION}: {why}")]
    Layout {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A page whose origin cannot be trusted: another user's file, a pid reused, not a
    /// regular file.
    #[error("{path} is not trusted: {why}")]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// Why a snapshot could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// The page stayed mid-update longer than the reader's patience: its writer is
    /// stopped, or died while updating it.
    #[error(
        "the page stayed mid-update: its task is stopped (SIGSTOP, a debugger) or died writing it"
    )]
    Stalled,
    /// The page can no longer be read (truncated, or an I/O error).
    #[error("the page can no longer be read: {0}")]
    Lost(String),
    /// The page holds what no task writes: counts that do not add up, fields out of
    /// range, another task's identity.
    #[error("the page holds what no latlab task writes: {0}")]
    Invalid(String),
}

impl Reader {
    /// Opens the page at `path` (`/dev/shm/latlab-<pid>-<tid>`) and checks, before
    /// believing anything in it: a regular file (a FIFO would block, a device lie), not
    /// writable by others than its owner, owned by a user process `pid` runs as, of
    /// this layout, naming the pid and tid its name gives, and written by the process
    /// that runs under that pid now (its start time).
    pub fn open(path: &Path) -> Result<Reader, ReadError> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let untrusted = |why: String| ReadError::Untrusted {
            path: path.to_path_buf(),
            why,
        };
        let layout = |why: String| ReadError::Layout {
            path: path.to_path_buf(),
            why,
        };
        let (pid, tid) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(page_ids)
            .ok_or_else(|| untrusted("its name is not latlab-<pid>-<tid>".to_string()))?;
        // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| RtError::new(format!("open {}", path.display()), e))?;
        let meta = file
            .metadata()
            .map_err(|e| RtError::new(format!("stat {}", path.display()), e))?;
        if !meta.file_type().is_file() {
            return Err(untrusted(
                "not a regular file (a FIFO, device or socket): a task's page is a file"
                    .to_string(),
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(untrusted(format!(
                "users other than its owner may write it (mode {:o}): a task's page is \
                 written by its task alone",
                meta.mode() & 0o7777
            )));
        }
        let Some(uids) = crate::process::uids(pid) else {
            return Err(untrusted(format!("process {pid} runs no more")));
        };
        if !uids.contains(&meta.uid()) {
            return Err(untrusted(format!(
                "it belongs to uid {}, but process {pid} runs as uid {}: another user made \
                 it, and only the task's own user can",
                meta.uid(),
                uids[1]
            )));
        }
        if (meta.len() as usize) < page_bytes() {
            return Err(layout(format!(
                "{} bytes, the layout has {}",
                meta.len(),
                page_bytes()
            )));
        }
        let mut reader = Reader {
            file,
            path: path.to_path_buf(),
            header: HeaderCopy::new(),
            patience: STALLED,
            previous: None,
        };
        reader.read_header().map_err(|e| layout(e.to_string()))?;
        let h = reader.header.header();
        let r = Ordering::Relaxed;
        if h.magic.load(r) != MAGIC {
            return Err(layout(
                "no magic (not written yet, or not such a page)".into(),
            ));
        }
        let version = h.version.load(r);
        if version != VERSION
            || h.hist_len.load(r) as usize != hdr::LEN
            || h.header_bytes.load(r) as usize != std::mem::size_of::<Header>()
        {
            return Err(layout(format!("layout version {version}")));
        }
        let (says_pid, says_tid) = (h.pid.load(r), h.tid.load(r));
        if (says_pid, says_tid) != (pid, tid) {
            return Err(untrusted(format!(
                "it says it is process {says_pid}'s thread {says_tid}, but its name says \
                 {pid}'s thread {tid}"
            )));
        }
        let started = h.pid_start_ticks.load(r);
        let now = crate::process::start_ticks(pid);
        if started == 0 || now != Some(started) {
            return Err(untrusted(format!(
                "it was written by a process {pid} that started at tick {started}, but \
                 the process {pid} running now started at tick {}: it is an earlier \
                 process's page (the pid was reused), or forged",
                now.map_or("unknown".to_string(), |t| t.to_string())
            )));
        }
        Ok(reader)
    }

    /// How long [`Reader::snapshot`] waits for an update in flight (default
    /// [`STALLED`]).
    pub fn with_patience(mut self, patience: Duration) -> Reader {
        self.patience = patience;
        self
    }

    /// The page's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A consistent copy of the page (identity, counters and counts of the same cycle),
    /// checked ([`check`]), and of the same task as the one before, counting on from it.
    pub fn snapshot(&mut self) -> Result<Snapshot, SnapshotError> {
        let began = Instant::now();
        let snapshot = loop {
            if began.elapsed() > self.patience {
                return Err(SnapshotError::Stalled);
            }
            let before = self.read_seq()?;
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            self.read_header()?;
            let mut snapshot = identity_of(self.header.header());
            snapshot.counters = copy_counters(&self.header.header().counters);
            let file = &self.file;
            copy_counts(&mut snapshot, |which, first, into| {
                let offset = std::mem::size_of::<Header>() + (which * hdr::LEN + first) * 8;
                read_words(file, offset, into)
            })?;
            if self.read_seq()? == before {
                break snapshot;
            }
        };
        check(&snapshot).map_err(SnapshotError::Invalid)?;
        if let Some(previous) = &self.previous {
            same_task(previous, &snapshot).map_err(SnapshotError::Invalid)?;
        }
        self.previous = Some(snapshot.clone());
        Ok(snapshot)
    }

    /// True once the task has ended (its counts are final), or its page cannot be read.
    pub fn has_ended(&self) -> bool {
        let mut state = [0u8; 4];
        let offset = std::mem::offset_of!(Header, state) as u64;
        match std::os::unix::fs::FileExt::read_exact_at(&self.file, &mut state, offset) {
            Ok(()) => u32::from_ne_bytes(state) == STATE_ENDED,
            Err(_) => true,
        }
    }

    fn read_seq(&self) -> Result<u64, SnapshotError> {
        let mut seq = [0u64];
        read_words(&self.file, std::mem::offset_of!(Header, seq), &mut seq)?;
        Ok(seq[0])
    }

    fn read_header(&mut self) -> Result<(), SnapshotError> {
        read_words(&self.file, 0, self.header.words_mut())
    }
}

/// Reads `into.len()` words at byte `offset` of `file`, as the task wrote them (native
/// byte order).
fn read_words(file: &std::fs::File, offset: usize, into: &mut [u64]) -> Result<(), SnapshotError> {
    let mut bytes = vec![0u8; into.len() * 8];
    std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, offset as u64).map_err(|e| {
        SnapshotError::Lost(match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "it was truncated".to_string(),
            _ => e.to_string(),
        })
    })?;
    for (word, chunk) in into.iter_mut().zip(bytes.chunks_exact(8)) {
        *word = u64::from_ne_bytes(chunk.try_into().expect("chunks of 8"));
    }
    Ok(())
}

/// A private copy of a page's header, word-aligned so it can be read as a [`Header`].
struct HeaderCopy(Box<[u64]>);

const _: () = assert!(std::mem::size_of::<Header>().is_multiple_of(8));
const _: () = assert!(std::mem::align_of::<Header>() <= std::mem::align_of::<u64>());

impl HeaderCopy {
    fn new() -> HeaderCopy {
        HeaderCopy(vec![0; std::mem::size_of::<Header>() / 8].into_boxed_slice())
    }

    fn words_mut(&mut self) -> &mut [u64] {
        &mut self.0
    }

    fn header(&self) -> &Header {
        // SAFETY: the copy is exactly a Header long and aligned for it (asserted
        // above); Header is atomics only, valid for any bytes, and the copy is only
        // written through `words_mut`, which needs `&mut self`.
        unsafe { &*(self.0.as_ptr() as *const Header) }
    }
}

/// How long a reader waits for an update in flight to end before it gives up: an
/// update takes under a microsecond, unless its writer was stopped or killed in it.
pub const STALLED: Duration = Duration::from_millis(100);

/// The task's own consistent copy of its live page.
fn snapshot_of(map: &Mapping) -> Option<Snapshot> {
    let h = map.header();
    let began = Instant::now();
    loop {
        if began.elapsed() > STALLED {
            return None;
        }
        let before = h.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let mut snapshot = identity_of(h);
        snapshot.counters = copy_counters(&h.counters);
        let copied: Result<(), SnapshotError> = copy_counts(&mut snapshot, |which, first, into| {
            for (to, from) in into.iter_mut().zip(&map.counts(which)[first..]) {
                *to = from.load(Ordering::Relaxed);
            }
            Ok(())
        });
        copied.ok()?;
        fence(Ordering::Acquire);
        if h.seq.load(Ordering::Relaxed) == before {
            return Some(snapshot);
        }
    }
}

/// A snapshot's identity and state, from a header; no counters or counts yet.
fn identity_of(h: &Header) -> Snapshot {
    let r = Ordering::Relaxed;
    Snapshot {
        pid: h.pid.load(r),
        pid_start_ticks: h.pid_start_ticks.load(r),
        tid: h.tid.load(r),
        period_ns: h.period_ns.load(r),
        cpu: usize::try_from(h.cpu.load(r)).ok(),
        policy: h.policy.load(r),
        priority: h.priority.load(r),
        method: h.method.load(r),
        overrun_policy: h.overrun_policy.load(r),
        memory_locked: h.memory_locked.load(r) != 0,
        name: printable(&load_text(&h.name)),
        warnings: load_text(&h.warnings)
            .lines()
            .map(printable)
            .filter(|l| !l.is_empty())
            .collect(),
        ended: h.state.load(Ordering::Acquire) == STATE_ENDED,
        ..Snapshot::default()
    }
}

/// Copies the counts a snapshot's counters say can be above 0: those from the least
/// to the largest value (a whole histogram takes hundreds of µs to copy in a debug
/// build, longer than a short period). `copy(which, first, into)` fills `into` with
/// histogram `which`'s counts from index `first`.
fn copy_counts(
    snapshot: &mut Snapshot,
    mut copy: impl FnMut(usize, usize, &mut [u64]) -> Result<(), SnapshotError>,
) -> Result<(), SnapshotError> {
    let c = &snapshot.counters;
    let spans = [
        (c.wake_min_ns, c.wake_max_ns),
        (c.compute_min_ns, c.compute_max_ns),
    ];
    snapshot.wake_counts = vec![0; hdr::LEN];
    snapshot.compute_counts = vec![0; hdr::LEN];
    for (which, span) in spans.into_iter().enumerate() {
        let (Some(least), Some(largest)) = span else {
            continue;
        };
        // A copy torn by an update may have them the wrong way round; it is retried.
        let first = hdr::index_of(hdr::clamp(least).0);
        let last = hdr::index_of(hdr::clamp(largest).0).max(first);
        let counts = match which {
            0 => &mut snapshot.wake_counts,
            _ => &mut snapshot.compute_counts,
        };
        copy(which, first, &mut counts[first..=last])?;
    }
    Ok(())
}

/// Text from a page as it may be shown: control characters (terminal escapes, line
/// breaks) and the invisible ones that reorder or hide text become U+FFFD.
fn printable(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    text.chars()
        .map(|c| if hidden(c) { '\u{fffd}' } else { c })
        .collect()
}

/// The longest period a task may have (the runtime's own limit).
const PERIOD_MAX_NS: u64 = 3_600_000_000_000;
/// The kernel's highest CPU number a task can be pinned to (`CPU_SETSIZE`).
const CPU_MAX: usize = 1024;

/// What a page written by a latlab task always holds, whatever instant it was copied
/// at; `Err` names the first field that breaks it. A page that passes makes a Run that
/// reads back whole: counts that add up to the cycles, extremes in order, a mean
/// between them, the largest samples within the extremes and the deadlines passed.
pub fn check(s: &Snapshot) -> Result<(), String> {
    let c = &s.counters;
    if !(1_000..=PERIOD_MAX_NS).contains(&s.period_ns) {
        return Err(format!("period {} ns is outside 1 µs … 1 h", s.period_ns));
    }
    if s.cpu.is_some_and(|cpu| cpu >= CPU_MAX) {
        return Err(format!("CPU {} does not exist", s.cpu.unwrap_or(0)));
    }
    if !matches!(s.policy, 0 | 1 | 2 | 3 | 5 | 6) {
        return Err(format!("policy {} is not one of the kernel's", s.policy));
    }
    let priority = s.priority as i32;
    let in_range = match s.policy {
        // The nice value.
        0 | 3 => (-20..=19).contains(&priority),
        1 | 2 => (1..=99).contains(&priority),
        _ => priority == 0,
    };
    if !in_range {
        return Err(format!(
            "priority {priority} is not one policy {} has",
            s.policy
        ));
    }
    if s.method > 2 || s.overrun_policy > 2 {
        return Err(format!(
            "wait method {} or overrun policy {} is unknown",
            s.method, s.overrun_policy
        ));
    }
    let period = s.period_ns as i128;
    let span = i128::from(c.last_due_ns) - i128::from(c.first_due_ns);
    if span < 0 || span % period != 0 {
        return Err(format!(
            "the last deadline {} is not a whole number of periods after the first {}",
            c.last_due_ns, c.first_due_ns
        ));
    }
    // Each deadline passed is a cycle or missed; an update that ran a late deadline
    // may not have counted the ones after it yet.
    let periods = span / period + 1;
    let counted = i128::from(c.cycles) + i128::from(c.missed);
    if counted > periods {
        return Err(format!(
            "{} cycles and {} missed, but only {periods} deadlines passed",
            c.cycles, c.missed
        ));
    }
    let started = counted > 0;
    if started && (c.first_due_ns <= 0 || c.last_due_ns > i64::MAX - PERIOD_MAX_NS as i64) {
        return Err("a deadline outside the monotonic clock's range".to_string());
    }
    if c.margin_ns.is_some_and(|m| m as u64 >= s.period_ns) {
        return Err("a spin margin of a period or more".to_string());
    }
    let streams = [
        (
            "wake-up",
            (c.wake_min_ns, c.wake_max_ns, c.wake_sum_ns),
            &s.wake_counts,
            c.wake_clamped,
            &c.wake_top,
        ),
        (
            "compute",
            (c.compute_min_ns, c.compute_max_ns, c.compute_sum_ns),
            &s.compute_counts,
            c.compute_clamped,
            &c.compute_top,
        ),
    ];
    for (what, (min, max, sum), counts, clamped, top) in streams {
        let counted: u128 = counts.iter().map(|&n| u128::from(n)).sum();
        if counted != u128::from(c.cycles) {
            return Err(format!(
                "the {what} histogram counts {counted} samples, the cycles are {}",
                c.cycles
            ));
        }
        if clamped > c.cycles {
            return Err(format!("more {what} samples clamped than cycles"));
        }
        let (min, max) = match (c.cycles, min, max) {
            (0, None, None) if sum == 0 && top.is_empty() => continue,
            (1.., Some(min), Some(max)) if min <= max => (min, max),
            _ => {
                return Err(format!(
                    "the {what} extremes do not fit {} cycles",
                    c.cycles
                ))
            }
        };
        let n = i128::from(c.cycles);
        if !(i128::from(min) * n..=i128::from(max) * n).contains(&i128::from(sum)) {
            return Err(format!("the {what} sum is not between the extremes"));
        }
        let outside = |t: &Top| {
            t.value_ns < min
                || t.value_ns > max
                || t.due_ns < c.first_due_ns
                || t.due_ns > c.last_due_ns
        };
        if top.len() > TOP || top.iter().any(outside) {
            return Err(format!(
                "a largest {what} sample outside the extremes or the deadlines passed"
            ));
        }
    }
    Ok(())
}

/// Whether `later` is a later copy of the same task's page as `earlier`: the same
/// identity and first deadline (once its loop started), and counts that only grew.
fn same_task(earlier: &Snapshot, later: &Snapshot) -> Result<(), String> {
    let identity = |s: &Snapshot| {
        (
            (s.pid, s.pid_start_ticks, s.tid),
            (s.period_ns, s.cpu),
            (s.policy, s.priority, s.method, s.overrun_policy),
        )
    };
    let started = earlier.counters.cycles + earlier.counters.missed > 0;
    let moved = started && earlier.counters.first_due_ns != later.counters.first_due_ns;
    if identity(earlier) != identity(later) || moved {
        return Err("it now names another task or setting than before".to_string());
    }
    let (was, now) = (&earlier.counters, &later.counters);
    if now.cycles < was.cycles || now.missed < was.missed || now.overruns < was.overruns {
        return Err("its counts went down".to_string());
    }
    Ok(())
}

/// The counters as they are; the caller checks the sequence number around the copy.
fn copy_counters(c: &Counters) -> CountersCopy {
    let r = Ordering::Relaxed;
    let known = |v: i64, none: i64| (v != none).then_some(v);
    let tops = |entries: &[TopEntry]| {
        let mut tops: Vec<Top> = entries
            .iter()
            .map(|t| Top {
                value_ns: t.value_ns.load(r),
                cycle: t.cycle.load(r),
                due_ns: t.due_ns.load(r),
            })
            .filter(|t| t.value_ns != i64::MIN)
            .collect();
        tops.sort_by(|a, b| b.value_ns.cmp(&a.value_ns).then(a.cycle.cmp(&b.cycle)));
        tops
    };
    CountersCopy {
        cycles: c.cycles.load(r),
        missed: c.missed.load(r),
        overruns: c.overruns.load(r),
        caught_up: c.caught_up.load(r),
        first_due_ns: c.first_due_ns.load(r),
        last_due_ns: c.last_due_ns.load(r),
        last_end_ns: c.last_end_ns.load(r),
        wake_min_ns: known(c.wake_min_ns.load(r), i64::MAX),
        wake_max_ns: known(c.wake_max_ns.load(r), i64::MIN),
        wake_sum_ns: c.wake_sum_ns.load(r),
        compute_min_ns: known(c.compute_min_ns.load(r), i64::MAX),
        compute_max_ns: known(c.compute_max_ns.load(r), i64::MIN),
        compute_sum_ns: c.compute_sum_ns.load(r),
        wake_clamped: c.wake_clamped.load(r),
        compute_clamped: c.compute_clamped.load(r),
        margin_ns: Some(c.margin_ns.load(r)).filter(|m| *m > 0),
        wake_top: tops(&c.wake_top),
        compute_top: tops(&c.compute_top),
    }
}

/// The process and thread a page's file name (`latlab-<pid>-<tid>`) names.
pub fn page_ids(name: &str) -> Option<(u32, u32)> {
    let (pid, tid) = name.strip_prefix("latlab-")?.split_once('-')?;
    Some((pid.parse().ok()?, tid.parse().ok()?))
}

/// The pages of process `pid`'s tasks, newest tid last.
pub fn pages_of(pid: u32) -> Vec<PathBuf> {
    let mut pages: Vec<(u32, PathBuf)> = std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let (of, tid) = page_ids(entry.file_name().to_str()?)?;
            (of == pid).then(|| (tid, entry.path()))
        })
        .collect();
    pages.sort();
    pages.into_iter().map(|(_, path)| path).collect()
}

/// The process start time a page of this layout holds, read without trusting it more:
/// for the sweep, which only asks whether the page's writer is gone.
fn written_start_ticks(path: &Path) -> Option<u64> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.file_type().is_file() {
        return None;
    }
    let word = |offset: usize| {
        let mut bytes = [0u8; 8];
        file.read_exact_at(&mut bytes, offset as u64).ok()?;
        Some(u64::from_ne_bytes(bytes))
    };
    (word(std::mem::offset_of!(Header, magic))? == MAGIC)
        .then(|| word(std::mem::offset_of!(Header, pid_start_ticks)))
        .flatten()
}

/// Removes the pages whose thread is gone (or whose process is another under a
/// reused pid), of this user ([`crate::process::leftovers`]'s rule); returns the paths
/// removed.
pub fn sweep() -> Vec<PathBuf> {
    let gone = |path: &Path, pid: u32| {
        let Some((_, tid)) = path.file_name().and_then(|n| n.to_str()).and_then(page_ids) else {
            return false;
        };
        let started = written_start_ticks(path).filter(|t| *t != 0);
        !crate::process::is_same_thread_alive(pid, tid, started)
    };
    crate::process::leftovers_where(
        Path::new("/dev/shm"),
        |name| page_ids(name).map(|(pid, _)| pid),
        |kind| kind.is_file(),
        gone,
    )
    .into_iter()
    .filter(|left| std::fs::remove_file(&left.path).is_ok())
    .map(|left| left.path)
    .collect()
}

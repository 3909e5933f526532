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

/// A mapped page (shared, read-write for the task, read-only for a reader).
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
    // SAFETY: a NUL-terminated path; the mode is used only with O_CREAT.
    let fd = unsafe { libc::open(c_path.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
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

/// A reader's mapping of a task's page.
pub struct Reader {
    map: Mapping,
    path: PathBuf,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("path", &self.path).finish()
    }
}

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No such page, or it cannot be opened or mapped.
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
}

impl Reader {
    /// Maps the page at `path` read-only.
    pub fn open(path: &Path) -> Result<Reader, ReadError> {
        let fd = open_fd(path, libc::O_RDONLY)?;
        let layout = |why: String| ReadError::Layout {
            path: path.to_path_buf(),
            why,
        };
        let len = std::fs::metadata(path)
            .map(|m| m.len() as usize)
            .unwrap_or(0);
        if len < page_bytes() {
            close(fd);
            return Err(layout(format!(
                "{len} bytes, the layout has {}",
                page_bytes()
            )));
        }
        let map = Mapping::map(fd, page_bytes(), false, &path.display().to_string());
        close(fd);
        let reader = Reader {
            map: map?,
            path: path.to_path_buf(),
        };
        let h = reader.map.header();
        if h.magic.load(Ordering::Acquire) != MAGIC {
            return Err(layout(
                "no magic (not written yet, or not such a page)".into(),
            ));
        }
        let version = h.version.load(Ordering::Relaxed);
        if version != VERSION
            || h.hist_len.load(Ordering::Relaxed) as usize != hdr::LEN
            || h.header_bytes.load(Ordering::Relaxed) as usize != std::mem::size_of::<Header>()
        {
            return Err(layout(format!("layout version {version}")));
        }
        Ok(reader)
    }

    /// The page's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A consistent copy of the page: identity, counters and counts of the same
    /// cycle. `None` when the page stayed mid-update for [`STALLED`]: its writer
    /// died or was stopped while updating it.
    pub fn snapshot(&self) -> Option<Snapshot> {
        snapshot_of(&self.map)
    }

    /// True once the task has ended (its counts are final).
    pub fn has_ended(&self) -> bool {
        self.map.header().state.load(Ordering::Acquire) == STATE_ENDED
    }
}

/// How long a reader waits for an update in flight to end before it gives up: an
/// update takes under a microsecond, unless its writer was stopped or killed in it.
pub const STALLED: Duration = Duration::from_millis(100);

fn snapshot_of(map: &Mapping) -> Option<Snapshot> {
    let h = map.header();
    let r = Ordering::Relaxed;
    let mut wake_counts = vec![0; hdr::LEN];
    let mut compute_counts = vec![0; hdr::LEN];
    let began = Instant::now();
    let counters = loop {
        if began.elapsed() > STALLED {
            return None;
        }
        wake_counts.fill(0);
        compute_counts.fill(0);
        let before = h.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let counters = copy_counters(&h.counters);
        // The counts change in the same updates as the counters, so a copy taken
        // between two equal even sequence numbers is of one cycle: its total is
        // the cycles counted. Only the counts from the least to the largest value
        // can be above 0, so only they are copied (a whole histogram takes
        // hundreds of µs to copy in a debug build, longer than a short period).
        let spans = [
            (counters.wake_min_ns, counters.wake_max_ns),
            (counters.compute_min_ns, counters.compute_max_ns),
        ];
        for (which, (copy, span)) in [&mut wake_counts, &mut compute_counts]
            .into_iter()
            .zip(spans)
            .enumerate()
        {
            let (Some(least), Some(largest)) = span else {
                continue;
            };
            // A copy torn by an update may have them the wrong way round; it is
            // retried below.
            let first = hdr::index_of(hdr::clamp(least).0);
            let last = hdr::index_of(hdr::clamp(largest).0).max(first);
            for (to, from) in copy[first..=last]
                .iter_mut()
                .zip(&map.counts(which)[first..])
            {
                *to = from.load(r);
            }
        }
        fence(Ordering::Acquire);
        if h.seq.load(Ordering::Relaxed) == before {
            break counters;
        }
    };
    let cpu = h.cpu.load(r);
    Some(Snapshot {
        pid: h.pid.load(r),
        pid_start_ticks: h.pid_start_ticks.load(r),
        tid: h.tid.load(r),
        period_ns: h.period_ns.load(r),
        cpu: usize::try_from(cpu).ok(),
        policy: h.policy.load(r),
        priority: h.priority.load(r),
        method: h.method.load(r),
        overrun_policy: h.overrun_policy.load(r),
        memory_locked: h.memory_locked.load(r) != 0,
        name: load_text(&h.name),
        warnings: load_text(&h.warnings)
            .lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect(),
        ended: h.state.load(Ordering::Acquire) == STATE_ENDED,
        counters,
        wake_counts,
        compute_counts,
    })
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

/// Removes the pages whose thread is gone (or whose process is another under a
/// reused pid), of this user ([`crate::process::leftovers`]'s rule); returns the paths
/// removed.
pub fn sweep() -> Vec<PathBuf> {
    let gone = |path: &Path, pid: u32| {
        let Some((_, tid)) = path.file_name().and_then(|n| n.to_str()).and_then(page_ids) else {
            return false;
        };
        let started = Reader::open(path)
            .ok()
            .map(|r| r.map.header().pid_start_ticks.load(Ordering::Relaxed))
            .filter(|t| *t != 0);
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

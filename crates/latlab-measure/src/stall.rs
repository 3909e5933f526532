//! What held measuring threads off their CPUs, from what the kernel says while it
//! happens — so that a late wake-up is blamed only on what was seen.
//!
//! A wake-up many periods late has many possible holders: RT throttling (real-time
//! tasks of a CPU used up `sched_rt_runtime_us` of a `sched_rt_period_us` and are
//! stopped for the rest), a task of higher priority, latlab itself stopped (`SIGSTOP`,
//! Ctrl-Z), the whole machine held (a paused VM), the host running something else on
//! the vCPU. Their lateness looks alike; the evidence does not:
//!
//! - while a measuring thread has taken no sample for several of its usual intervals,
//!   the coordinating thread (off the measured CPUs) reads the scheduler's state
//!   (`/sys/kernel/debug/sched/debug`, `/proc/sched_debug` before 5.13): whether the
//!   CPU's real-time tasks are throttled (`rt_throttled`) and which task runs there;
//! - the kernel log says `sched: RT throttling activated` when it first throttles;
//! - a `SIGCONT` tells latlab it was stopped;
//! - the coordinating thread itself held as long as the measuring ones means the whole
//!   machine (or process) was held, which throttling of real-time tasks cannot do;
//! - steal time (`/proc/stat`) is the host's own count of time it took a vCPU.
//!
//! [`MissedCause::of`] names the cause the evidence supports, and none it does not.

use crate::facts::FactReader;
use crate::live::LiveStats;
use latlab_model::run::Stream;
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use std::fmt;
use std::time::{Duration, Instant};

/// A measuring thread is held when it has taken no sample for this many of its own
/// usual intervals between samples...
const HELD_INTERVALS: u32 = 4;
/// ...and between two polls of the coordinating thread (20 ms apart): the time since
/// the first poll that saw its last sample, so it was held at least this long.
/// Shorter holds are a period too short, not a holder worth naming.
const HELD_AT_LEAST: Duration = Duration::from_millis(15);
/// At most this many reads of the scheduler's state per phase: each takes the
/// scheduler's locks briefly, and a run held for minutes needs no more evidence.
const SCHED_READS: usize = 64;
/// The coordinating thread sleeps 20 ms between polls: a sleep this long means it was
/// held too.
const COORDINATOR_HELD: Duration = Duration::from_millis(200);

/// What the scheduler's debug file says of one CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSched {
    /// The CPU.
    pub cpu: usize,
    /// Its real-time tasks are throttled (`rt_throttled: 1`).
    pub rt_throttled: bool,
    /// The task running there (`>R` in the task list), when listed.
    pub current: Option<SchedTask>,
}

/// A task as the scheduler's debug file lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedTask {
    /// Its name.
    pub comm: String,
    /// Its thread id.
    pub pid: i64,
    /// Its kernel priority (0–99 real-time, 99 − rtprio; 100–139 normal).
    pub prio: i64,
}

impl fmt::Display for SchedTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} ({})",
            self.comm,
            self.pid,
            latlab_model::explain::priority_words(self.prio)
        )
    }
}

/// Parses the scheduler's debug file: per CPU, `rt_throttled` of its root `rt_rq` and
/// the current task of its task list (`>R`). The list's columns differ between
/// kernels (6.1: `S task PID tree-key switches prio ...`; 6.18: `S task PID vruntime
/// eligible deadline slice sum-exec switches prio ...`), so `prio` is found by the
/// header; the name is the right-aligned 15 characters after the state.
pub fn parse_sched_debug(text: &str) -> Vec<CpuSched> {
    let mut cpus: Vec<CpuSched> = Vec::new();
    let mut in_root_rt_rq = false;
    let mut prio_column: Option<usize> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cpu#") {
            let number = rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap_or("");
            if let Ok(cpu) = number.parse() {
                cpus.push(CpuSched {
                    cpu,
                    rt_throttled: false,
                    current: None,
                });
            }
            in_root_rt_rq = false;
            prio_column = None;
            continue;
        }
        let Some(this) = cpus.last_mut() else {
            continue;
        };
        if line.starts_with("rt_rq[") {
            // `rt_rq[1]:/` (or `rt_rq[1]:` on kernels without RT group scheduling):
            // the CPU's own, not a group's.
            let group = line.split_once(':').map_or("", |(_, g)| g.trim());
            in_root_rt_rq = group.is_empty() || group == "/";
            continue;
        }
        if line.ends_with(':') && !line.starts_with(' ') {
            in_root_rt_rq = false;
        }
        if in_root_rt_rq {
            if let Some(value) = line.trim().strip_prefix(".rt_throttled") {
                let value = value.trim().trim_start_matches(':').trim();
                this.rt_throttled = value.parse::<u64>().is_ok_and(|v| v > 0);
            }
            continue;
        }
        if line.trim_start().starts_with("S ") && line.contains(" task ") {
            // Flags of one letter (EEVDF's `eligible` E/N, a custom slice's S, which
            // has no heading) are left out of the columns counted.
            let header: Vec<&str> = line
                .split_whitespace()
                .filter(|&h| h != "eligible")
                .collect();
            prio_column = header
                .iter()
                .position(|&h| h == "prio")
                .and_then(|p| p.checked_sub(2));
            continue;
        }
        if let (Some(column), Some(rest)) = (prio_column, line.strip_prefix('>')) {
            this.current = current_task(rest, column);
        }
    }
    cpus
}

/// The current task's line after its `>`: the state, the name right-aligned in 15
/// characters, then the columns (`prio` at `prio_column` counted from the PID).
fn current_task(rest: &str, prio_column: usize) -> Option<SchedTask> {
    let after_state = rest.get(2..)?;
    let (comm, columns) = match after_state.get(..15) {
        Some(comm) if after_state.len() > 15 => (comm.trim(), &after_state[15..]),
        _ => {
            let trimmed = after_state.trim_start();
            let end = trimmed.find(' ')?;
            (&trimmed[..end], &trimmed[end..])
        }
    };
    let columns: Vec<&str> = columns
        .split_whitespace()
        .filter(|c| !(c.len() == 1 && c.bytes().all(|b| b.is_ascii_alphabetic())))
        .collect();
    Some(SchedTask {
        comm: comm.to_string(),
        pid: columns.first()?.parse().ok()?,
        prio: columns.get(prio_column)?.parse().ok()?,
    })
}

/// The scheduler's debug file, where this kernel keeps it; `None` when neither place
/// is readable (debugfs not mounted, or not root).
pub fn read_sched_debug(files: &FactReader) -> Option<String> {
    files
        .read("/sys/kernel/debug/sched/debug")
        .or_else(|| files.read("/proc/sched_debug"))
}

/// Each CPU's steal time (`/proc/stat`, the 8th figure of a `cpuN` line, in clock
/// ticks), in ns.
fn steal_ns(files: &FactReader) -> Vec<(usize, i64)> {
    let Some(stat) = files.read("/proc/stat") else {
        return Vec::new();
    };
    // USER_HZ is 100 on every architecture Linux exports /proc/stat on.
    const NS_PER_TICK: i64 = 10_000_000;
    stat.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("cpu")?;
            let mut fields = rest.split_whitespace();
            let cpu = fields.next()?.parse().ok()?;
            let steal: i64 = fields.nth(7)?.parse().ok()?;
            Some((cpu, steal * NS_PER_TICK))
        })
        .collect()
}

/// The kernel log (`/dev/kmsg`) from a point on: what it says of RT throttling after.
/// The kernel says so once per boot, so silence after an earlier message proves
/// nothing; a message after the point does. Records are read from where the log
/// ended when opened, not by their time stamps: those are the scheduler's clock,
/// which drifts from the monotonic one over a long uptime.
#[derive(Debug)]
struct KernelLog {
    file: std::fs::File,
}

impl KernelLog {
    /// The log from now on; `None` when it is not readable.
    fn from_now() -> Option<KernelLog> {
        use std::io::{Seek, SeekFrom};
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        file.seek(SeekFrom::End(0)).ok()?;
        Some(KernelLog { file })
    }

    /// Whether a record the kernel wrote since says it throttled real-time tasks;
    /// `None` when that cannot be told: records were overwritten before they were read,
    /// or the log could not be read to its end.
    fn says_throttled(&mut self) -> Option<bool> {
        use std::io::{ErrorKind, Read};
        let mut record = vec![0u8; 8192];
        let mut lost = false;
        // One record per read, until EAGAIN (the end); at most a buffer's worth.
        for _ in 0..100_000 {
            let n = match self.file.read(&mut record) {
                Ok(0) => return (!lost).then_some(false),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return (!lost).then_some(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // EPIPE: records were overwritten while reading; go on with the next.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {
                    lost = true;
                    continue;
                }
                Err(_) => return None,
            };
            if kernel_says_throttled(&String::from_utf8_lossy(&record[..n])) {
                return Some(true);
            }
        }
        None
    }
}

/// Whether `record`, one of `/dev/kmsg` (`priority,sequence,microseconds,flags;message`),
/// is the kernel's own saying it throttled real-time tasks. The priority's facility
/// (priority >> 3) is 0 only for the kernel: what user space writes there is at least
/// LOG_USER, and cannot pass for it.
fn kernel_says_throttled(record: &str) -> bool {
    let Some((prefix, message)) = record.split_once(';') else {
        return false;
    };
    let kernel = prefix
        .split(',')
        .next()
        .and_then(|p| p.trim().parse::<u32>().ok())
        .is_some_and(|priority| priority >> 3 == 0);
    kernel && message.contains("RT throttling activated")
}

/// What [`StallWatch`] saw during one phase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StallEvidence {
    /// The measured CPUs the kernel showed with real-time tasks throttled.
    pub throttled_cpus: Vec<usize>,
    /// The kernel log reported RT throttling during the phase (`None`: the log was not
    /// readable).
    pub throttled_in_log: Option<bool>,
    /// Tasks seen running on a measured CPU while its measuring thread was held (not
    /// latlab's own), with the CPU.
    pub in_the_way: Vec<(usize, SchedTask)>,
    /// How many times the scheduler's state was read during holds.
    pub sched_reads: usize,
    /// The scheduler's state was wanted during a hold but not readable (debugfs not
    /// mounted, or not root).
    pub sched_unreadable: bool,
    /// Times latlab was stopped and continued (`SIGCONT`).
    pub stops: u64,
    /// The longest the coordinating thread (off the measured CPUs) was itself held.
    pub whole_held: Option<Nanos>,
    /// The most steal time (the host's count) a measured CPU had during the phase.
    pub steal: Option<Nanos>,
    /// The longest a measuring thread was seen held.
    pub longest_held: Option<Nanos>,
}

impl StallEvidence {
    /// Adds a later phase's evidence.
    pub fn merge(&mut self, other: StallEvidence) {
        for cpu in other.throttled_cpus {
            if !self.throttled_cpus.contains(&cpu) {
                self.throttled_cpus.push(cpu);
            }
        }
        self.throttled_in_log = match (self.throttled_in_log, other.throttled_in_log) {
            (None, b) => b,
            (a, None) => a,
            (Some(a), Some(b)) => Some(a || b),
        };
        for seen in other.in_the_way {
            if !self.in_the_way.contains(&seen) {
                self.in_the_way.push(seen);
            }
        }
        self.sched_reads += other.sched_reads;
        self.sched_unreadable |= other.sched_unreadable;
        self.stops += other.stops;
        self.whole_held = self.whole_held.max(other.whole_held);
        self.steal = self.steal.max(other.steal);
        self.longest_held = self.longest_held.max(other.longest_held);
    }
}

/// One measuring thread as the watch follows it.
#[derive(Debug)]
struct Followed {
    cpu: Option<usize>,
    samples: u64,
    since: Instant,
    /// The current hold has been looked at (the scheduler's state read).
    looked: bool,
}

/// Follows the measuring threads from the coordinating thread while they measure.
#[derive(Debug)]
pub struct StallWatch {
    /// Whether the threads' samples say when they were held: not when the kernel
    /// measures and a reader hands its samples over in bursts.
    follow: bool,
    files: FactReader,
    /// debugfs, mounted at the first look if it was not (`None` until then; an error
    /// when it could not be).
    debugfs: Option<Result<latlab_rt::trace::DebugfsMount, ()>>,
    own_pid: u32,
    threads: Vec<Followed>,
    started: Instant,
    /// The kernel log from the start on (`None`: not readable).
    log: Option<KernelLog>,
    continues_at_start: u64,
    steal_at_start: Vec<(usize, i64)>,
    evidence: StallEvidence,
}

impl StallWatch {
    /// Starts following one measuring thread per entry of `cpus` (`None`: not pinned);
    /// unless `follow`, only the process's stops, its own holds and steal time.
    pub fn start(cpus: &[Option<usize>], follow: bool) -> StallWatch {
        StallWatch::reading(FactReader::system(), cpus, follow, true)
    }

    /// [`start`](Self::start), reading `files`; mounting debugfs if `mount` and the
    /// scheduler's file is not there.
    fn reading(files: FactReader, cpus: &[Option<usize>], follow: bool, mount: bool) -> StallWatch {
        let now = Instant::now();
        StallWatch {
            follow,
            steal_at_start: steal_ns(&files),
            files,
            debugfs: (!mount).then_some(Err(())),
            own_pid: std::process::id(),
            threads: cpus
                .iter()
                .map(|&cpu| Followed {
                    cpu,
                    samples: 0,
                    since: now,
                    looked: false,
                })
                .collect(),
            started: now,
            log: KernelLog::from_now(),
            continues_at_start: latlab_rt::signal::continues(),
            evidence: StallEvidence::default(),
        }
    }

    /// Looks at the threads once (called every poll of the coordinating thread, with
    /// how long its sleep before took: a sleep far longer than asked is the machine
    /// held; the coordinator's own work between sleeps is not).
    pub fn poll(&mut self, live: &[LiveStats], slept: Duration) {
        let now = Instant::now();
        if slept >= COORDINATOR_HELD {
            let held = Nanos(slept.as_nanos() as i64);
            self.evidence.whole_held = self.evidence.whole_held.max(Some(held));
        }
        if !self.follow {
            return;
        }
        let mut held_cpus = Vec::new();
        for (thread, stats) in self.threads.iter_mut().zip(live) {
            let samples = stats.samples();
            if samples != thread.samples || stats.is_finished() {
                thread.looked = false;
                thread.samples = samples;
                thread.since = now;
                continue;
            }
            // Too few samples yet to know the thread's usual interval.
            if samples < 4 {
                continue;
            }
            let usual = (now - self.started) / samples.min(u32::MAX as u64) as u32;
            let held_for = now - thread.since;
            if held_for < (usual * HELD_INTERVALS).max(HELD_AT_LEAST) {
                continue;
            }
            let held = Nanos(held_for.as_nanos() as i64);
            self.evidence.longest_held = self.evidence.longest_held.max(Some(held));
            if !thread.looked {
                held_cpus.extend(thread.cpu);
            }
        }
        if !held_cpus.is_empty() && self.evidence.sched_reads < SCHED_READS {
            self.look(&held_cpus);
        }
    }

    /// Reads the scheduler's state of `cpus`, whose measuring threads are held.
    fn look(&mut self, cpus: &[usize]) {
        let mut text = read_sched_debug(&self.files);
        if text.is_none() && self.debugfs.is_none() {
            // Unmounted again when the watch ends (latlab leaves the system as found).
            self.debugfs = Some(latlab_rt::trace::DebugfsMount::ensure().map_err(|_| ()));
            text = read_sched_debug(&self.files);
        }
        let Some(text) = text else {
            self.evidence.sched_unreadable = true;
            return;
        };
        self.evidence.sched_reads += 1;
        for state in parse_sched_debug(&text) {
            if !cpus.contains(&state.cpu) {
                continue;
            }
            if state.rt_throttled && !self.evidence.throttled_cpus.contains(&state.cpu) {
                self.evidence.throttled_cpus.push(state.cpu);
            }
            if let Some(task) = state.current.filter(|t| !self.is_own(t.pid)) {
                let seen = (state.cpu, task);
                if !self.evidence.in_the_way.contains(&seen) {
                    self.evidence.in_the_way.push(seen);
                }
            }
        }
        // One look per hold, unless it showed nothing: a later one may catch the
        // throttling that began after it.
        let found = !self.evidence.throttled_cpus.is_empty();
        for thread in &mut self.threads {
            if thread.cpu.is_some_and(|c| cpus.contains(&c)) {
                thread.looked = found || thread.looked;
            }
        }
    }

    /// Whether thread `pid` is one of latlab's own (idle, pid 0, is nobody's).
    fn is_own(&self, pid: i64) -> bool {
        pid == 0
            || u32::try_from(pid).is_ok_and(|pid| {
                self.files
                    .exists(&format!("/proc/{}/task/{pid}", self.own_pid))
            })
    }

    /// What was seen, with the kernel log and steal time over the whole phase.
    pub fn finish(mut self) -> StallEvidence {
        self.evidence.stops = latlab_rt::signal::continues() - self.continues_at_start;
        self.evidence.throttled_in_log = self.log.as_mut().and_then(KernelLog::says_throttled);
        let measured: Vec<usize> = self.threads.iter().filter_map(|t| t.cpu).collect();
        let steal_now = steal_ns(&self.files);
        self.evidence.steal = steal_now
            .iter()
            .filter(|(cpu, _)| measured.contains(cpu))
            .filter_map(|(cpu, now)| {
                let before = self.steal_at_start.iter().find(|(c, _)| c == cpu)?.1;
                Some(Nanos(now - before))
            })
            .max();
        self.evidence
    }
}

/// RT throttling (`kernel.sched_rt_runtime_us`): real-time tasks together may run
/// `runtime` of every `period` on a CPU; once they have, all are stopped for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtThrottling {
    /// CPU time real-time tasks may use per period.
    pub runtime: Nanos,
    /// The throttling period.
    pub period: Nanos,
}

impl RtThrottling {
    /// Reads the sysctls; `None` when throttling is off (`-1`, or a runtime as long as
    /// the period) or they cannot be read.
    pub fn read(files: &FactReader) -> Option<RtThrottling> {
        let micros = |name: &str| {
            files
                .read(&format!("/proc/sys/kernel/{name}"))?
                .parse::<i64>()
                .ok()
        };
        let runtime = micros("sched_rt_runtime_us")?;
        let period = micros("sched_rt_period_us")?;
        (0..period).contains(&runtime).then(|| RtThrottling {
            runtime: Nanos(runtime * 1_000),
            period: Nanos(period * 1_000),
        })
    }
}

/// Why periods passed without a wake-up: only what the evidence shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MissedCause {
    /// No measuring thread was seen held for long: the wake-ups themselves came too
    /// late for the period.
    PeriodTooShort,
    /// latlab itself was stopped and continued (`SIGSTOP`, Ctrl-Z, a debugger).
    Stopped {
        /// How many times.
        times: u64,
    },
    /// The kernel said it throttled real-time tasks on a measured CPU.
    RtThrottling {
        /// The limits in force, when readable.
        throttling: Option<RtThrottling>,
        /// The CPUs the scheduler showed throttled (empty: the kernel log said it).
        cpus: Vec<usize>,
        /// Tasks seen running there while a measuring thread waited.
        in_the_way: Vec<(usize, SchedTask)>,
        /// The latest wake-up.
        latest: Nanos,
    },
    /// A SCHED_DEADLINE measuring thread used up its runtime.
    DeadlineBudget {
        /// Runtime per period.
        runtime: Nanos,
        /// Its period.
        period: Nanos,
        /// The latest wake-up of the threads it applied to.
        latest: Nanos,
    },
    /// Other tasks ran on a measured CPU while its measuring thread waited.
    InTheWay {
        /// The tasks, with their CPU.
        tasks: Vec<(usize, SchedTask)>,
        /// The latest wake-up.
        latest: Nanos,
    },
    /// Every thread of latlab was held at once, the one on a CPU not measured too: the
    /// machine was held (a paused VM, the host), not one CPU's tasks.
    MachineHeld {
        /// The longest the coordinating thread was held.
        held: Nanos,
        /// Steal time the host counted on a measured CPU.
        steal: Option<Nanos>,
    },
    /// The host took the measured vCPUs for about as long (steal time).
    HostPreemption {
        /// Steal time the host counted on a measured CPU.
        steal: Nanos,
        /// The latest wake-up.
        latest: Nanos,
    },
    /// Threads were held for long, and nothing seen says by what.
    Unknown {
        /// The latest wake-up.
        latest: Nanos,
        /// How many looks at the scheduler's state found no throttling (0: it was
        /// not readable).
        looks: usize,
    },
}

impl MissedCause {
    /// The cause the evidence supports for streams that missed periods.
    pub fn of<'a>(
        streams: impl Iterator<Item = &'a Stream> + Clone,
        evidence: &StallEvidence,
        throttling: Option<RtThrottling>,
    ) -> MissedCause {
        let latest = streams
            .clone()
            .filter_map(|s| s.stats.max_ns)
            .max()
            .unwrap_or_default();
        let cpus: Vec<usize> = streams.clone().filter_map(|s| s.cpu).collect();
        let here = |cpu: &usize| cpus.is_empty() || cpus.contains(cpu);
        if evidence.stops > 0 {
            return MissedCause::Stopped {
                times: evidence.stops,
            };
        }
        let throttled: Vec<usize> = evidence
            .throttled_cpus
            .iter()
            .copied()
            .filter(here)
            .collect();
        let in_the_way: Vec<(usize, SchedTask)> = evidence
            .in_the_way
            .iter()
            .filter(|(cpu, _)| here(cpu))
            .cloned()
            .collect();
        if !throttled.is_empty() || evidence.throttled_in_log == Some(true) {
            return MissedCause::RtThrottling {
                throttling,
                cpus: throttled,
                in_the_way,
                latest,
            };
        }
        for s in streams {
            if let Some(SchedSpec::Deadline {
                runtime_ns,
                period_ns,
                ..
            }) = s.policy
            {
                // A budget-stopped thread wakes about as late as the rest of its period.
                let stopped_for = (period_ns.0 - runtime_ns.0) / 2;
                if runtime_ns < period_ns && s.stats.max_ns.is_some_and(|m| m.0 >= stopped_for) {
                    return MissedCause::DeadlineBudget {
                        runtime: runtime_ns,
                        period: period_ns,
                        latest,
                    };
                }
            }
        }
        if !in_the_way.is_empty() {
            return MissedCause::InTheWay {
                tasks: in_the_way,
                latest,
            };
        }
        // The coordinating thread held about as long as the measuring ones.
        if let Some(held) = evidence.whole_held.filter(|h| h.0 * 2 >= latest.0) {
            return MissedCause::MachineHeld {
                held,
                steal: evidence.steal.filter(|s| s.0 > 0),
            };
        }
        if let Some(steal) = evidence.steal.filter(|s| s.0 * 2 >= latest.0 && s.0 > 0) {
            return MissedCause::HostPreemption { steal, latest };
        }
        if evidence.longest_held.is_some() {
            return MissedCause::Unknown {
                latest,
                looks: evidence.sched_reads,
            };
        }
        MissedCause::PeriodTooShort
    }
}

/// `CPU 1: sh:138 (fifo/rr 96)`, a few of them.
fn tasks_words(tasks: &[(usize, SchedTask)]) -> String {
    const NAMED: usize = 4;
    let mut words: Vec<String> = tasks
        .iter()
        .take(NAMED)
        .map(|(cpu, task)| format!("{task} on CPU {cpu}"))
        .collect();
    if tasks.len() > NAMED {
        words.push(format!("{} more", tasks.len() - NAMED));
    }
    words.join(", ")
}

impl fmt::Display for MissedCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MissedCause::PeriodTooShort => {
                f.write_str("the period may be too short for this system")
            }
            MissedCause::Stopped { times } => write!(
                f,
                "latlab itself was stopped and continued {times} time(s) during the run \
                 (SIGSTOP, Ctrl-Z or a debugger): the periods it was stopped for are missed, \
                 and say nothing of the system"
            ),
            MissedCause::RtThrottling {
                throttling,
                cpus,
                in_the_way,
                latest,
            } => {
                if !in_the_way.is_empty() {
                    write!(
                        f,
                        "{} ran on the measured CPUs while measuring threads waited, and ",
                        tasks_words(in_the_way)
                    )?;
                }
                write_throttled(f, cpus, throttling.as_ref())?;
                write!(
                    f,
                    " (wakes came up to {latest} late). Find the real-time task that runs \
                     that long (a busy loop at a real-time priority) and lengthen the period \
                     or give it less; or lift the limit with sysctl \
                     kernel.sched_rt_runtime_us=-1 (a runaway real-time task then owns its \
                     CPU; latlab check shows what else applies)"
                )
            }
            MissedCause::DeadlineBudget {
                runtime,
                period,
                latest,
            } => write!(
                f,
                "the SCHED_DEADLINE budget ran out: a thread may run {runtime} of every \
                 {period} and, once it has, waits for its next period (wakes came up to \
                 {latest} late). Give it more runtime (-P d:RUNTIME:PERIOD) or lengthen the \
                 measuring period"
            ),
            MissedCause::InTheWay { tasks, latest } => write!(
                f,
                "other tasks ran on the measured CPUs while measuring threads waited \
                 (wakes came up to {latest} late): {} — seen in the scheduler's state, \
                 which showed no RT throttling; give the measuring threads a priority above \
                 them, or move them off these CPUs (latlab check; --explain shows each \
                 delay)",
                tasks_words(tasks)
            ),
            MissedCause::MachineHeld { held, steal } => {
                write!(
                    f,
                    "every thread of latlab was held at once, for up to {held}, the one on a \
                     CPU not measured too: the whole machine was held (a paused or migrated \
                     VM, or the host running something else), not one CPU's tasks"
                )?;
                if let Some(steal) = steal {
                    write!(
                        f,
                        "; the host counted {steal} of steal time on a measured CPU"
                    )?;
                }
                Ok(())
            }
            MissedCause::HostPreemption { steal, latest } => write!(
                f,
                "the host took the measured vCPUs away: it counted {steal} of steal time \
                 on a measured CPU (wakes came up to {latest} late); on the host, give the \
                 vCPU threads CPUs of their own"
            ),
            MissedCause::Unknown { latest, looks } => {
                write!(
                    f,
                    "what held the measuring threads off their CPUs (wakes came up to \
                     {latest} late) is not known: "
                )?;
                match looks {
                    0 => f.write_str(
                        "the scheduler's state (sched/debug in debugfs) was not readable \
                         during the holds: run as root",
                    )?,
                    n => write!(
                        f,
                        "the scheduler showed no RT throttling and no other task in {n} \
                         look(s) during the holds",
                    )?,
                }
                f.write_str("; --explain shows what ran on the CPU")
            }
        }
    }
}

/// What RT throttling did: on which CPUs (or, with none, that the kernel log said so),
/// and the limit it keeps when the sysctls were read.
pub(crate) fn write_throttled(
    f: &mut fmt::Formatter<'_>,
    cpus: &[usize],
    throttling: Option<&RtThrottling>,
) -> fmt::Result {
    match cpus.is_empty() {
        true => {
            f.write_str("the kernel log says RT throttling stopped real-time tasks during the run")?
        }
        false => write!(
            f,
            "RT throttling stopped the real-time tasks of CPU {} during the run (the \
             scheduler showed rt_throttled there)",
            latlab_model::spec::format_cpu_list(cpus)
        )?,
    }
    if let Some(t) = throttling {
        write!(
            f,
            "; real-time tasks may run {} of every {} on a CPU, and are kept off it for \
             the rest once they have",
            t.runtime, t.period
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::info;

    const MS: i64 = 1_000_000;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/sched-debug/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn a_throttled_cpu_is_read_from_a_real_6_1_rt_kernel() {
        let cpus = parse_sched_debug(&fixture("6.1-rt-throttled.txt"));
        assert_eq!(cpus.len(), 2);
        assert_eq!((cpus[0].cpu, cpus[0].rt_throttled), (0, false));
        assert_eq!((cpus[1].cpu, cpus[1].rt_throttled), (1, true));
        // Nothing runs on a throttled CPU whose only runnable tasks are real-time.
        assert_eq!(cpus[1].current, None);
        assert_eq!(
            cpus[0].current.as_ref().map(|t| t.comm.as_str()),
            Some("cat")
        );
    }

    #[test]
    fn the_task_running_on_a_cpu_is_read_with_its_priority() {
        let cpus = parse_sched_debug(&fixture("6.1-rt-spinner.txt"));
        assert!(!cpus[1].rt_throttled);
        let spinner = cpus[1].current.clone().expect("a current task on CPU 1");
        assert_eq!(
            spinner,
            SchedTask {
                comm: "sh".to_string(),
                pid: 142,
                prio: 3
            }
        );
        assert_eq!(spinner.to_string(), "sh:142 (fifo/rr 96)");
    }

    #[test]
    fn the_columns_of_newer_kernels_and_names_with_spaces_are_read() {
        // 6.6 and later list EEVDF's columns before `prio`, and flag a custom slice with an
        // S that has no heading.
        let text = "\
cpu#0, 2300.000 MHz
  .nr_running                    : 1

rt_rq[0]:/
  .rt_nr_running                 : 1
  .rt_throttled                  : 1
  .rt_time                       : 953.827884

dl_rq[0]:
  .dl_nr_running                 : 0

runnable tasks:
 S            task   PID       vruntime   eligible    deadline             slice          sum-exec      switches  prio         wait-time        sum-sleep       sum-block  node   group-id  group-path
-------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------
 S        kthreadd     2       153.851139   E         154.517848           1.400000         0.033291         1     120         0.000000         0.000000         0.000000   0      0        /
>R     Web Content  4242      1042749.402586   E     1042750.802586 S         1.400000       155.236872       279      9         0.000000         0.000000         0.000000   0      0        /
";
        let cpus = parse_sched_debug(text);
        assert_eq!(cpus.len(), 1);
        assert!(cpus[0].rt_throttled);
        assert_eq!(
            cpus[0].current,
            Some(SchedTask {
                comm: "Web Content".to_string(),
                pid: 4242,
                prio: 9
            })
        );
    }

    #[test]
    fn a_group_rt_rq_does_not_speak_for_the_cpu() {
        let text = "\
cpu#0, 1.000 MHz
rt_rq[0]:/rt-group
  .rt_throttled                  : 1
rt_rq[0]:/
  .rt_throttled                  : 0
";
        assert!(!parse_sched_debug(text)[0].rt_throttled);
    }

    /// A fifo:95 timer stream on CPU 1 that missed `missed` periods, its latest wake-up
    /// `latest` late.
    fn late_stream(policy: SchedSpec, missed: u64, latest: i64) -> Stream {
        info::test_timer_stream(1, policy, missed, latest, Nanos(1_000 * MS), 0)
    }

    const THROTTLING: RtThrottling = RtThrottling {
        runtime: Nanos(950 * MS),
        period: Nanos(1_000 * MS),
    };

    fn cause(stream: &Stream, evidence: &StallEvidence) -> MissedCause {
        MissedCause::of(std::iter::once(stream), evidence, Some(THROTTLING))
    }

    fn spinner() -> SchedTask {
        SchedTask {
            comm: "spin".to_string(),
            pid: 700,
            prio: 3,
        }
    }

    #[test]
    fn throttling_is_named_only_when_the_kernel_showed_it() {
        let late = late_stream(SchedSpec::DEFAULT, 48, 49 * MS);
        // Held for 49 ms under throttling limits, but nothing said the kernel throttled.
        let held = StallEvidence {
            longest_held: Some(Nanos(49 * MS)),
            sched_reads: 3,
            ..StallEvidence::default()
        };
        let unknown = cause(&late, &held);
        assert!(
            matches!(unknown, MissedCause::Unknown { looks: 3, .. }),
            "{unknown}"
        );
        assert!(
            !unknown.to_string().contains("RT throttling stopped"),
            "{unknown}"
        );
        assert!(
            !unknown.to_string().contains("sched_rt_runtime_us"),
            "{unknown}"
        );
        // The scheduler showed CPU 1 throttled: now it is named, with the advice.
        let throttled = StallEvidence {
            throttled_cpus: vec![1],
            ..held.clone()
        };
        let named = cause(&late, &throttled);
        assert!(matches!(named, MissedCause::RtThrottling { .. }), "{named}");
        assert!(
            named.to_string().contains("sched_rt_runtime_us=-1"),
            "{named}"
        );
        // Throttled on a CPU this stream did not measure: not its cause.
        let elsewhere = StallEvidence {
            throttled_cpus: vec![3],
            ..held.clone()
        };
        assert!(matches!(
            cause(&late, &elsewhere),
            MissedCause::Unknown { .. }
        ));
        // The kernel log said so during the run.
        let logged = StallEvidence {
            throttled_in_log: Some(true),
            ..held
        };
        assert!(matches!(
            cause(&late, &logged),
            MissedCause::RtThrottling { .. }
        ));
    }

    #[test]
    fn a_task_in_the_way_is_named_not_throttling() {
        let late = late_stream(SchedSpec::DEFAULT, 30, 31 * MS);
        let evidence = StallEvidence {
            in_the_way: vec![(1, spinner())],
            longest_held: Some(Nanos(31 * MS)),
            sched_reads: 2,
            throttled_in_log: Some(false),
            ..StallEvidence::default()
        };
        let named = cause(&late, &evidence);
        assert_eq!(
            named,
            MissedCause::InTheWay {
                tasks: vec![(1, spinner())],
                latest: Nanos(31 * MS)
            }
        );
        let text = named.to_string();
        assert!(text.contains("spin:700 (fifo/rr 96) on CPU 1"), "{text}");
        assert!(!text.contains("sched_rt_runtime_us"), "{text}");
    }

    #[test]
    fn a_stopped_latlab_is_said_to_be_stopped_whatever_else_was_seen() {
        let late = late_stream(SchedSpec::DEFAULT, 3_000, 3_000 * MS);
        let evidence = StallEvidence {
            stops: 1,
            whole_held: Some(Nanos(3_000 * MS)),
            throttled_in_log: Some(true),
            ..StallEvidence::default()
        };
        assert_eq!(cause(&late, &evidence), MissedCause::Stopped { times: 1 });
    }

    #[test]
    fn a_whole_machine_held_is_not_blamed_on_one_cpus_tasks() {
        let late = late_stream(SchedSpec::DEFAULT, 900, 900 * MS);
        let evidence = StallEvidence {
            whole_held: Some(Nanos(905 * MS)),
            longest_held: Some(Nanos(900 * MS)),
            steal: Some(Nanos(0)),
            ..StallEvidence::default()
        };
        assert_eq!(
            cause(&late, &evidence),
            MissedCause::MachineHeld {
                held: Nanos(905 * MS),
                steal: None
            }
        );
        // The host counted the time: steal corroborates.
        let stolen = StallEvidence {
            whole_held: None,
            steal: Some(Nanos(880 * MS)),
            ..evidence
        };
        assert!(matches!(
            cause(&late, &stolen),
            MissedCause::HostPreemption { .. }
        ));
    }

    #[test]
    fn short_lateness_with_no_hold_seen_blames_the_period() {
        let late = late_stream(SchedSpec::DEFAULT, 3, MS / 5);
        assert_eq!(
            cause(&late, &StallEvidence::default()),
            MissedCause::PeriodTooShort
        );
    }

    #[test]
    fn a_deadline_thread_out_of_budget_names_the_budget() {
        let deadline = SchedSpec::Deadline {
            runtime_ns: Nanos(MS / 5),
            deadline_ns: Nanos(MS),
            period_ns: Nanos(MS),
        };
        let spun = late_stream(deadline, 700, MS * 7 / 10);
        let text = cause(&spun, &StallEvidence::default()).to_string();
        assert!(
            text.contains("SCHED_DEADLINE budget") && text.contains("200 µs of every 1 ms"),
            "{text}"
        );
    }

    #[test]
    fn rt_throttling_is_read_from_the_sysctls_and_off_when_unlimited() {
        let root = tempfile::tempdir().unwrap();
        let sysctl = root.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&sysctl).unwrap();
        let write = |runtime: &str, period: &str| {
            std::fs::write(sysctl.join("sched_rt_runtime_us"), runtime).unwrap();
            std::fs::write(sysctl.join("sched_rt_period_us"), period).unwrap();
        };
        let files = FactReader::at(root.path());
        write("950000\n", "1000000\n");
        assert_eq!(RtThrottling::read(&files), Some(THROTTLING));
        write("-1\n", "1000000\n");
        assert_eq!(RtThrottling::read(&files), None);
        write("1000000\n", "1000000\n");
        assert_eq!(RtThrottling::read(&files), None);
    }

    /// A watch of one thread on CPU 1 reading the scheduler's state from `fixture`,
    /// and that thread's samples.
    fn watching(fixture_name: &str) -> (tempfile::TempDir, StallWatch, [LiveStats; 1]) {
        let root =
            FactReader::test_tree(&[("/sys/kernel/debug/sched/debug", &fixture(fixture_name))]);
        let watch = StallWatch::reading(FactReader::at(root.path()), &[Some(1)], true, false);
        (root, watch, [LiveStats::default()])
    }

    const SLEPT: Duration = Duration::from_millis(1);

    /// A sample every millisecond for 10 ms, then none for 40 ms: held (longer than
    /// 4 intervals and 15 ms).
    fn samples_then_a_hold(watch: &mut StallWatch, live: &[LiveStats]) {
        for _ in 0..10 {
            live[0].publish(1_000, 0);
            watch.poll(live, SLEPT);
            std::thread::sleep(SLEPT);
        }
        std::thread::sleep(Duration::from_millis(40));
    }

    #[test]
    fn a_thread_held_on_a_throttled_cpu_is_looked_at_once_per_hold() {
        let (_root, mut watch, live) = watching("6.1-rt-throttled.txt");
        samples_then_a_hold(&mut watch, &live);
        for _ in 0..3 {
            watch.poll(&live, SLEPT);
        }
        let held = watch.evidence.longest_held.expect("a hold");
        assert!(held >= Nanos(40 * MS), "{held}");
        assert_eq!(watch.evidence.sched_reads, 1);
        assert_eq!(watch.evidence.throttled_cpus, [1]);
        // A second hold: a second look.
        samples_then_a_hold(&mut watch, &live);
        watch.poll(&live, SLEPT);
        assert_eq!(watch.evidence.sched_reads, 2);
        // The coordinator's sleeps were as asked: the machine was not held.
        assert_eq!(watch.evidence.whole_held, None);
        let evidence = watch.finish();
        assert_eq!(evidence.stops, 0);
    }

    #[test]
    fn a_hold_that_showed_no_throttling_is_looked_at_again_and_its_task_named() {
        let (_root, mut watch, live) = watching("6.1-rt-spinner.txt");
        samples_then_a_hold(&mut watch, &live);
        for _ in 0..3 {
            watch.poll(&live, SLEPT);
        }
        // Throttling may begin later in the hold: every poll looks.
        assert_eq!(watch.evidence.sched_reads, 3);
        assert!(watch.evidence.throttled_cpus.is_empty());
        let named: Vec<String> = watch
            .evidence
            .in_the_way
            .iter()
            .map(|(cpu, task)| format!("{cpu} {task}"))
            .collect();
        assert_eq!(named, ["1 sh:142 (fifo/rr 96)"]);
    }

    #[test]
    fn the_kernel_log_is_read_from_where_it_ended_when_opened() {
        let mut log = KernelLog::from_now().expect("/dev/kmsg readable by root");
        assert_eq!(log.says_throttled(), Some(false));
        // Root may write a record to the log, but as user space, never as the kernel:
        // the kernel's words forged there are read, and not taken for the kernel's.
        let record = "latlab-measure unit test: sched: RT throttling activated (not real)\n";
        std::fs::write("/dev/kmsg", record).expect("/dev/kmsg writable: run the tests as root");
        assert_eq!(log.says_throttled(), Some(false));
        // Opened after it: nothing since.
        let mut later = KernelLog::from_now().unwrap();
        assert_eq!(later.says_throttled(), Some(false));
    }

    #[test]
    fn only_the_kernels_own_record_says_it_throttled() {
        let kernel = "4,1234,15720000,-;sched: RT throttling activated";
        assert!(kernel_says_throttled(kernel));
        // Facility LOG_USER (1 << 3) + warning: what a write to /dev/kmsg gives.
        assert!(!kernel_says_throttled(
            "12,1235,15720001,-;sched: RT throttling activated"
        ));
        assert!(!kernel_says_throttled(
            "4,1236,15720002,-;sched: RT runtime exceeded"
        ));
        assert!(!kernel_says_throttled("RT throttling activated"));
    }

    #[test]
    fn a_coordinator_sleep_far_longer_than_asked_is_the_machine_held() {
        let (_root, mut watch, live) = watching("6.1-rt-spinner.txt");
        watch.poll(&live, Duration::from_millis(100));
        assert_eq!(watch.evidence.whole_held, None);
        watch.poll(&live, Duration::from_millis(300));
        watch.poll(&live, Duration::from_millis(250));
        assert_eq!(watch.evidence.whole_held, Some(Nanos(300 * MS)));
    }
}

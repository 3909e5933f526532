//! The Run of an application's own periodic loop (`latlab_rt::periodic`, or the C
//! library), from the page it publishes in shared memory: two streams side by side,
//! which answer "the system or my code?" — the wake-up latency (probe `application`:
//! how late the kernel woke the loop) and the compute time (probe
//! `application-compute`: wake-up to the end of the step). The counts are the task's
//! own since it started, attach or not: the page holds them all. Its warnings are the
//! model's codes, as a `latlab run` in the same condition gives, and it is sealed as
//! every Run is.

use crate::error::CliError;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::*;
use latlab_model::seal::WarningCode;
use latlab_model::spec::SchedSpec;
use latlab_model::stamp::rfc3339;
use latlab_model::Nanos;
use latlab_rt::periodic::{hdr, shm, SetUpWarning};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use latlab_model::run::{
    PROBE_APPLICATION as PROBE_WAKE, PROBE_APPLICATION_COMPUTE as PROBE_COMPUTE,
};

/// The page of the task of `pid` to read: the only one, or the one `task` names
/// (a thread id or the task's name).
pub fn page_of(pid: u32, task: Option<&str>) -> Result<PathBuf, CliError> {
    let pages = shm::pages_of(pid);
    if pages.is_empty() {
        let why = match latlab_rt::process::is_alive(pid) {
            true => format!(
                "process {pid} publishes no periodic task (no /dev/shm/latlab-{pid}-*): it \
                 must run a latlab periodic task (latlab_rt::periodic or \
                 <latlab/periodic.h>) with publishing on, and its loop must have started"
            ),
            false => format!("no process {pid} runs: give the pid of a running application"),
        };
        return Err(CliError::usage("PID", why));
    }
    let names: Vec<(PathBuf, String, String)> = pages
        .iter()
        .map(|path| {
            let tid = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(shm::page_ids)
                .map_or(String::new(), |(_, tid)| tid.to_string());
            let name = shm::Reader::open(path)
                .ok()
                .and_then(|mut r| r.snapshot().ok())
                .map(|s| s.name)
                .unwrap_or_default();
            (path.clone(), tid, name)
        })
        .collect();
    let listed = || {
        names
            .iter()
            .map(|(_, tid, name)| format!("{tid} ({name})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match task {
        None if names.len() == 1 => Ok(names[0].0.clone()),
        None => Err(CliError::usage(
            "--task",
            format!(
                "process {pid} runs {} periodic tasks: name one with --task TID|NAME: {}",
                names.len(),
                listed()
            ),
        )),
        Some(want) => names
            .iter()
            .find(|(_, tid, name)| tid == want || name == want)
            .map(|(path, _, _)| path.clone())
            .ok_or_else(|| {
                CliError::usage(
                    "--task",
                    format!(
                        "process {pid} runs no task {want}: its tasks are {}",
                        listed()
                    ),
                )
            }),
    }
}

/// The command line of process `pid`, when it can be read.
pub fn command_line_of(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then_some(args)
}

/// Why attaching ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The task ended its loop.
    TaskEnded,
    /// Its process ended without ending the task.
    ProcessGone,
    /// Its page could no longer be read, or stopped holding what a task writes.
    PageLost,
    /// latlab was told to stop.
    Stopped,
    /// `--duration` passed.
    Duration,
}

impl End {
    /// What it means for the figures, in a sentence.
    pub fn words(self) -> &'static str {
        match self {
            End::TaskEnded => "The task ended: its figures are final.",
            End::ProcessGone => {
                "The task's process ended without ending the task (killed?): its figures \
                 are those of its last cycle."
            }
            End::PageLost => {
                "The task's page could no longer be read or was overwritten: its figures \
                 are those of the last whole copy."
            }
            End::Stopped | End::Duration => {
                "Detached while the task runs: its figures are those up to now."
            }
        }
    }
}

/// The sleep method a page's code stands for.
pub fn method_name(code: u32) -> &'static str {
    match code {
        0 => "abs",
        1 => "timerfd",
        2 => "hybrid",
        _ => "unknown",
    }
}

/// The policy a page publishes; `None` for SCHED_DEADLINE (its parameters are not
/// published) and codes not known.
pub fn policy_of(s: &shm::Snapshot) -> Option<SchedSpec> {
    match s.policy as i32 {
        libc::SCHED_FIFO => Some(SchedSpec::Fifo {
            priority: s.priority as i32,
        }),
        libc::SCHED_RR => Some(SchedSpec::Rr {
            priority: s.priority as i32,
        }),
        // The nice value the task ran at, as published (its bits as an i32).
        libc::SCHED_OTHER => Some(SchedSpec::Other {
            nice: s.priority as i32,
        }),
        libc::SCHED_BATCH => Some(SchedSpec::Batch {
            nice: s.priority as i32,
        }),
        libc::SCHED_IDLE => Some(SchedSpec::Idle),
        // The deadline parameters are not published.
        _ => None,
    }
}

/// The page's two histograms as latlab records them.
pub fn histograms(s: &shm::Snapshot) -> (LatencyHistogram, LatencyHistogram) {
    let of = |counts: &[u64], clamped: u64| {
        let mut h = LatencyHistogram::new();
        for (i, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            // Within bounds: every index of the layout is a value the histogram holds.
            let _ = h.record_n(hdr::value_at(i) as i64, n);
        }
        h.set_clamped(clamped);
        h
    };
    (
        of(&s.wake_counts, s.counters.wake_clamped),
        of(&s.compute_counts, s.counters.compute_clamped),
    )
}

/// The Run of the task as `last` (a page [`shm::check`] passed) shows it, on the host
/// `host` describes.
pub fn run_of(
    last: &shm::Snapshot,
    end: End,
    command_line: Option<Vec<String>>,
    euid: u32,
    host: HostFacts,
) -> Run {
    let c = &last.counters;
    let now_wall = SystemTime::now();
    let now_mono = latlab_rt::clock::Clock::Monotonic.now_ns();
    let wall_of = |mono: i64| {
        let back = Duration::from_nanos(now_mono.saturating_sub(mono).max(0) as u64);
        now_wall.checked_sub(back).map(rfc3339)
    };
    let cycles_ran = c.cycles > 0;
    let started_at = cycles_ran.then(|| wall_of(c.first_due_ns)).flatten();
    // A step ends after its deadline, unless its wake-up came early.
    let ended_at = cycles_ran
        .then(|| wall_of(c.last_end_ns.max(c.first_due_ns)))
        .flatten();
    let period = last.period_ns as i64;
    // The measured span: from one period before the first deadline to the last, so
    // that samples + missed = span / period.
    let elapsed = cycles_ran.then(|| Nanos(c.last_due_ns - c.first_due_ns + period));
    let (wake, compute) = histograms(last);
    let policy = policy_of(last);
    let realtime = matches!(
        last.policy as i32,
        libc::SCHED_FIFO | libc::SCHED_RR | libc::SCHED_DEADLINE
    );
    // What the task's own set-up reported (a refused policy, a failed lock), then
    // what latlab sees of it, each under the code a `latlab run` gives the same
    // condition: so a refused policy is `not-realtime` and degrades, a policy the task
    // chose is `non-realtime-policy` and does not.
    let mut warnings: Vec<Warning> = last
        .warnings
        .iter()
        .map(|w| {
            let code = match SetUpWarning::of(w) {
                SetUpWarning::PolicyRefused => WarningCode::NotRealtime,
                SetUpWarning::MemoryNotLocked => WarningCode::MemoryNotLocked,
                SetUpWarning::MemoryLockLimited => WarningCode::MemoryLockLimited,
                SetUpWarning::Other => WarningCode::ApplicationSetUp,
            };
            Warning::new(code, w.clone())
        })
        .collect();
    let said = |warnings: &[Warning], code: WarningCode| warnings.iter().any(|w| w.is(code));
    if !last.memory_locked
        && !said(&warnings, WarningCode::MemoryNotLocked)
        && !said(&warnings, WarningCode::MemoryLockLimited)
    {
        warnings.push(Warning::new(
            WarningCode::MemoryNotLocked,
            "the application did not lock its memory: a page fault can delay its loop \
             (mlockall(MCL_CURRENT | MCL_FUTURE) before its loop, as root or with \
             CAP_IPC_LOCK)",
        ));
    }
    if !realtime && !said(&warnings, WarningCode::NotRealtime) {
        // Its own choice, as `latlab run -P o:0` is the user's: said, not degrading.
        warnings.push(Warning::new(
            WarningCode::NonRealtimePolicy,
            format!(
                "the application's loop runs at {}, not a real-time policy (fifo, rr or \
                 deadline): any other task can delay its wake-ups",
                policy.map_or("an unknown policy".to_string(), |p| p.to_string())
            ),
        ));
    }
    if end == End::PageLost {
        warnings.push(Warning::new(
            WarningCode::ApplicationPageLost,
            "the application's page could no longer be read, or stopped holding what a \
             task writes: the figures are those of the last whole copy",
        ));
    }
    if end == End::ProcessGone {
        warnings.push(Warning::new(
            WarningCode::ApplicationKilled,
            "the application's process ended without ending its task: the figures are \
             those of its last cycle",
        ));
    }
    let stream =
        |probe: &str, thread: usize, h: &LatencyHistogram, sums: ExactSums, top: &[shm::Top]| {
            let origin = c.first_due_ns - period;
            let mut stats = Statistics::compute(&sums, h);
            // The page keeps no sum of squares.
            stats.stddev_ns = None;
            Stream {
                probe: probe.to_string(),
                method: Some(method_name(last.method).to_string()),
                phase: "main".to_string(),
                thread,
                cpu: last.cpu,
                policy,
                period_ns: Some(Nanos(period)),
                samples: c.cycles,
                missed_periods: (probe == PROBE_WAKE).then_some(c.missed),
                overrun_wakes: None,
                // The page counts no early wake-ups: none when the least was on time,
                // else how many is unknown.
                early_wakes: (probe == PROBE_WAKE && c.wake_min_ns.is_some_and(|m| m >= 0))
                    .then_some(0),
                first_sample_ns: None,
                warm_up_samples: 0,
                // Absolute deadlines: no schedule that drifts.
                drift_ns: None,
                elapsed_ns: elapsed,
                timer_slack_ns: None,
                page_faults: None,
                stats,
                histogram: Some(EncodedHistogram::from_histogram(h)),
                spikes: Spikes {
                    top: top
                        .iter()
                        .map(|t| Spike {
                            value_ns: Nanos(t.value_ns),
                            at_ns: Nanos(t.due_ns - origin),
                        })
                        .collect(),
                    threshold_ns: None,
                    above_threshold: Vec::new(),
                    above_threshold_dropped: 0,
                },
                timeline: Timeline::default(),
            }
        };
    let sums = |count: u64, min: Option<i64>, max: Option<i64>, sum: i64| ExactSums {
        count,
        min: min.unwrap_or(i64::MAX),
        max: max.unwrap_or(i64::MIN),
        sum: i128::from(sum),
        sum_squares: 0,
    };
    let streams = vec![
        stream(
            PROBE_WAKE,
            0,
            &wake,
            sums(c.cycles, c.wake_min_ns, c.wake_max_ns, c.wake_sum_ns),
            &c.wake_top,
        ),
        stream(
            PROBE_COMPUTE,
            1,
            &compute,
            sums(
                c.cycles,
                c.compute_min_ns,
                c.compute_max_ns,
                c.compute_sum_ns,
            ),
            &c.compute_top,
        ),
    ];
    let mut run = Run::new(Tool::latlab());
    run.started_at = started_at.clone();
    run.ended_at = ended_at;
    run.command_line = command_line;
    run.plan.cpus = last.cpu.into_iter().collect();
    run.host = Some(host);
    run.conditions = Some(Conditions {
        memory_locked: last.memory_locked,
        realtime_policy: realtime,
        dma_latency_us: None,
        breaktrace_armed: false,
        euid,
    });
    run.interrupted = end != End::TaskEnded;
    run.warnings = warnings;
    run.phases = vec![Phase {
        name: "main".to_string(),
        started_at,
        elapsed_ns: elapsed,
        loads: Vec::new(),
    }];
    run.streams = streams;
    run.seal();
    run
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_measure::notice::Notice;

    /// A task's page after `cycles` cycles of 1 ms, woken 20 µs late each.
    fn page(policy: i32, memory_locked: bool, cycles: u64) -> shm::Snapshot {
        let mut s = shm::Snapshot {
            pid: 4242,
            tid: 4242,
            period_ns: 1_000_000,
            cpu: Some(1),
            policy: policy as u32,
            memory_locked,
            ..shm::Snapshot::default()
        };
        s.counters.cycles = cycles;
        s.counters.first_due_ns = 1_000_000;
        s.counters.last_due_ns = cycles as i64 * 1_000_000;
        s.counters.last_end_ns = s.counters.last_due_ns + 30_000;
        s.counters.wake_min_ns = Some(20_000);
        s.counters.wake_max_ns = Some(20_000);
        s.counters.wake_sum_ns = cycles as i64 * 20_000;
        s.wake_counts = vec![0; hdr::LEN];
        s.wake_counts[hdr::index_of(20_000)] = cycles;
        s.compute_counts = vec![0; hdr::LEN];
        s
    }

    fn codes(run: &Run) -> Vec<&str> {
        run.warnings.iter().map(|w| w.code.as_str()).collect()
    }

    /// The same condition reads the same in an attached task's Run as in `latlab
    /// run`'s: memory not locked degrades under one code, a policy that is not
    /// real-time is said under another and does not.
    #[test]
    fn attach_gives_the_codes_latlab_run_gives_for_the_same_condition() {
        let unlocked = Notice::MemoryNotLocked {
            reason: "EPERM".to_string(),
            limit: None,
        };
        let other = Notice::NonRealtimeRequested {
            policy: SchedSpec::Other { nice: 0 },
        };
        let run = run_of(
            &page(libc::SCHED_OTHER, false, 10),
            End::TaskEnded,
            None,
            0,
            HostFacts::default(),
        );
        assert_eq!(
            codes(&run),
            [unlocked.code().as_str(), other.code().as_str()]
        );
        assert_eq!(run.degraded, unlocked.degrades() || other.degrades());
        assert!(run.degraded);
        // Locked and at SCHED_OTHER: said, not degraded, as `latlab run -P o:0`.
        let run = run_of(
            &page(libc::SCHED_OTHER, true, 10),
            End::TaskEnded,
            None,
            0,
            HostFacts::default(),
        );
        assert_eq!(codes(&run), [other.code().as_str()]);
        assert!(!run.degraded);
        // Refused the policy it asked for: `not-realtime`, degraded, as `latlab run`
        // refused its policy.
        let mut refused = page(libc::SCHED_OTHER, true, 10);
        refused.warnings = vec![
            "fifo:80 refused (not permitted: run as root): the loop runs at other:0".to_string(),
        ];
        let run = run_of(&refused, End::TaskEnded, None, 0, HostFacts::default());
        let not_realtime = Notice::NotRealtime {
            wanted: SchedSpec::Fifo { priority: 80 },
            got: SchedSpec::Other { nice: 0 },
            thread: 0,
            reason: "not permitted".to_string(),
        };
        assert_eq!(codes(&run), [not_realtime.code().as_str()]);
        assert!(run.degraded);
        // Locked and real-time: nothing to say; the counts add up.
        let run = run_of(
            &page(libc::SCHED_FIFO, true, 10),
            End::TaskEnded,
            None,
            0,
            HostFacts::default(),
        );
        assert!(run.warnings.is_empty(), "{:?}", run.warnings);
        let wake = &run.streams[0];
        assert_eq!(wake.samples + wake.missed_periods.unwrap(), 10);
    }

    /// The page's histogram layout is latlab-rt's own copy of the recording
    /// histogram's: a count at index i must be the value the Run's histogram holds.
    #[test]
    fn the_pages_histogram_layout_is_the_runs() {
        use latlab_model::hist::{LatencyHistogram, HIGHEST_NS, SIGNIFICANT_DIGITS};
        use latlab_rt::periodic::hdr;
        assert_eq!(hdr::HIGHEST_NS, HIGHEST_NS);
        assert_eq!(hdr::SIGNIFICANT_DIGITS, u32::from(SIGNIFICANT_DIGITS));
        for value in [0, 1, 2_047, 2_048, 123_456, 9_999_999, HIGHEST_NS] {
            let mut h = LatencyHistogram::new();
            h.record(value as i64);
            // The Run's histogram reports it in the bucket the page counts it in.
            assert_eq!(
                hdr::index_of(h.percentile(100.0)),
                hdr::index_of(value),
                "{value}"
            );
        }
    }
}

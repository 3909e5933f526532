//! `latlab attach PID`: the live statistics of an application's own periodic loop
//! (`latlab_rt::periodic`, or the C library), read from the page it publishes in
//! shared memory, and at the end a Run of it like any other.
//!
//! The Run has two streams side by side, which answer "the system or my code?": the
//! wake-up latency (probe `application`: how late the kernel woke the loop) and the
//! compute time (probe `application-compute`: wake-up to the end of the step). The
//! counts are the task's own since it started, attach or not: the page holds them
//! all.

use crate::cli::AttachArgs;
use crate::error::CliError;
use crate::keep::keep;
use crate::labels::Labels;
use crate::output::{self, Human};
use crate::store::StoreLocation;
use latlab_measure::facts::FactReader;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::*;
use latlab_model::spec::SchedSpec;
use latlab_model::stamp::{rfc3339, run_id};
use latlab_model::threshold::Verdict;
use latlab_model::Nanos;
use latlab_rt::periodic::{hdr, shm};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use latlab_model::run::{
    PROBE_APPLICATION as PROBE_WAKE, PROBE_APPLICATION_COMPUTE as PROBE_COMPUTE,
};

/// Runs `latlab attach`.
pub fn execute(args: &AttachArgs) -> Result<u8, CliError> {
    let removed: Vec<String> = shm::sweep()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    output::say_removed(&removed);
    let labels = Labels::from_args(&args.labels)?;
    let every = match &args.interval {
        Some(text) => positive_duration("--interval", text)?,
        None => Duration::from_secs(1),
    };
    let limit = args
        .duration
        .as_deref()
        .map(|text| positive_duration("--duration", text))
        .transpose()?;
    let path = page_of(args.pid, args.task.as_deref())?;
    let store_location = match args.no_store {
        true => None,
        false => Some(StoreLocation::resolve(args.store.as_ref())?),
    };
    let (mut json, human) =
        crate::store::open_run_json(args.json.as_deref(), store_location.as_ref())?;
    let reader = shm::Reader::open(&path).map_err(|e| CliError::runtime(e.to_string()))?;
    let command_line = command_line_of(args.pid);
    let first = reader.snapshot().ok_or_else(|| {
        CliError::runtime(format!(
            "{} stayed mid-update for {} ms: the task is stopped (SIGSTOP, a debugger) or \
             died while writing it; attach again once it runs",
            path.display(),
            shm::STALLED.as_millis()
        ))
    })?;
    // Whose the task is (the Run's euid): the owner of its process.
    let euid = std::fs::metadata(format!("/proc/{}", first.pid))
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .map_err(|_| {
            CliError::usage(
                "PID",
                format!("process {} ended as latlab attached to it", first.pid),
            )
        })?;
    let mut store = store_location
        .as_ref()
        .map(crate::store::open_for_run)
        .transpose()?;
    if let Some(store) = &store {
        labels.check_name_is_free(&**store)?;
    }

    let stop = crate::stop::flag_on(&crate::stop::ENDING)?;
    // Until the Run is kept, a display that cannot be written is not worth losing it.
    if !args.quiet {
        let _ = human.write(&format!(
            "latlab: attached to {} (pid {}, tid {}): {}\n",
            display_name(&first),
            first.pid,
            first.tid,
            setting_line(&first)
        ));
        for warning in &first.warnings {
            let _ = human.write(&format!("DEGRADED: {warning}\n"));
        }
    }
    let began = Instant::now();
    let mut snapshot = first;
    let (last, end) = loop {
        // A page mid-update for long: the task is stopped, or died writing it (then
        // it is gone, below); its last whole copy stands.
        let fresh = reader.snapshot();
        let stalled = fresh.is_none();
        if let Some(fresh) = fresh {
            snapshot = fresh;
        }
        let gone = !latlab_rt::process::is_same_thread_alive(
            snapshot.pid,
            snapshot.tid,
            Some(snapshot.pid_start_ticks).filter(|t| *t != 0),
        );
        let end = if snapshot.ended {
            Some(End::TaskEnded)
        } else if gone {
            Some(End::ProcessGone)
        } else if stop.load(Ordering::Relaxed) {
            Some(End::Stopped)
        } else if limit.is_some_and(|d| began.elapsed() >= d) {
            Some(End::Duration)
        } else {
            None
        };
        if let Some(end) = end {
            break (snapshot, end);
        }
        if !args.quiet {
            let line = match stalled {
                false => live_line(&snapshot),
                true => format!(
                    "the task's page stays mid-update: it is stopped (SIGSTOP, a debugger?); \
                     last figures: {}",
                    live_line(&snapshot)
                ),
            };
            let _ = human.write(&format!("{line}\n"));
        }
        nap_until(every, &stop, &reader);
    };
    let mut run = assemble(&last, end, command_line, euid);
    run.id = run_id(SystemTime::now());
    labels.apply(&mut run);
    let code = run.exit_status().code();
    let kept = keep(&run, store.as_deref_mut(), json.as_mut(), false);
    output::ignore_closed(human.write(&crate::cmd::show::summary_for(&run, human)))?;
    output::ignore_closed(human.write(&format!("{}\n", end.words())))?;
    output::ignore_closed(human.write(&kept.said))?;
    if !kept.errors.is_empty() {
        let _ = Human::Stderr.write(&kept.errors);
    }
    Ok(code.max(kept.code))
}

/// Why attaching ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    TaskEnded,
    ProcessGone,
    Stopped,
    Duration,
}

impl End {
    fn words(self) -> &'static str {
        match self {
            End::TaskEnded => "The task ended: its figures are final.",
            End::ProcessGone => {
                "The task's process ended without ending the task (killed?): its figures \
                 are those of its last cycle."
            }
            End::Stopped | End::Duration => {
                "Detached while the task runs: its figures are those up to now."
            }
        }
    }
}

fn positive_duration(flag: &str, text: &str) -> Result<Duration, CliError> {
    let ns = latlab_model::units::parse_duration(text).map_err(|e| {
        CliError::usage(flag, format!("{e} (give a duration such as 500ms or 10s)"))
    })?;
    if ns.0 <= 0 {
        return Err(CliError::usage(flag, "give a duration above 0, such as 1s"));
    }
    Ok(Duration::from_nanos(ns.0 as u64))
}

/// The page of the task of `pid` to read: the only one, or the one `task` names
/// (a thread id or the task's name).
fn page_of(pid: u32, task: Option<&str>) -> Result<PathBuf, CliError> {
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
                .and_then(|r| r.snapshot())
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

fn command_line_of(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then_some(args)
}

/// Sleeps for `every`, ending early on a stop request or when the task ends.
fn nap_until(every: Duration, stop: &AtomicBool, reader: &shm::Reader) {
    let until = Instant::now() + every;
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        latlab_rt::wake::nap(Duration::from_millis(20).min(until - Instant::now()));
        if reader.has_ended() {
            return;
        }
    }
}

fn display_name(s: &shm::Snapshot) -> String {
    match s.name.is_empty() {
        true => "task".to_string(),
        false => format!("task {:?}", s.name),
    }
}

fn method_name(code: u32) -> &'static str {
    match code {
        0 => "abs",
        1 => "timerfd",
        2 => "hybrid",
        _ => "unknown",
    }
}

fn policy_of(s: &shm::Snapshot) -> Option<SchedSpec> {
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

fn setting_line(s: &shm::Snapshot) -> String {
    let cpu = s
        .cpu
        .map_or("not pinned".to_string(), |c| format!("CPU {c}"));
    let policy = policy_of(s).map_or_else(
        || match s.policy as i32 {
            libc::SCHED_DEADLINE => "deadline".to_string(),
            code => format!("policy {code}"),
        },
        |p| p.to_string(),
    );
    let overrun = match s.overrun_policy {
        0 => "skip",
        1 => "catch up",
        2 => "handler",
        _ => "unknown",
    };
    format!(
        "period {}, {cpu}, {policy}, {} wake-up, on overrun {overrun}, memory {}",
        Nanos(s.period_ns as i64),
        method_name(s.method),
        if s.memory_locked {
            "locked"
        } else {
            "NOT locked"
        }
    )
}

/// One line of the live view: counts, then the system's part and the code's part.
fn live_line(s: &shm::Snapshot) -> String {
    let c = &s.counters;
    let (wake, compute) = histograms(s);
    let figure = |h: &LatencyHistogram, max: Option<i64>| match (h.is_empty(), max) {
        (false, Some(max)) => format!(
            "p50 {} p99 {} max {}",
            Nanos(h.percentile(50.0) as i64),
            Nanos(h.percentile(99.0) as i64),
            Nanos(max)
        ),
        _ => "no cycle yet".to_string(),
    };
    format!(
        "{} cycles ({} samples each), {} missed, {} overruns | wake-up {} | compute {}",
        c.cycles,
        c.cycles,
        c.missed,
        c.overruns,
        figure(&wake, c.wake_max_ns),
        figure(&compute, c.compute_max_ns)
    )
}

/// The page's two histograms as latlab records them.
fn histograms(s: &shm::Snapshot) -> (LatencyHistogram, LatencyHistogram) {
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

/// The Run of the task as `last` shows it.
fn assemble(last: &shm::Snapshot, end: End, command_line: Option<Vec<String>>, euid: u32) -> Run {
    let c = &last.counters;
    let now_wall = SystemTime::now();
    let now_mono = latlab_rt::clock::Clock::Monotonic.now_ns();
    let wall_of = |mono: i64| {
        let back = Duration::from_nanos(now_mono.saturating_sub(mono).max(0) as u64);
        now_wall.checked_sub(back).map(rfc3339)
    };
    let cycles_ran = c.cycles > 0;
    let started_at = cycles_ran.then(|| wall_of(c.first_due_ns)).flatten();
    let ended_at = cycles_ran.then(|| wall_of(c.last_end_ns)).flatten();
    let period = last.period_ns as i64;
    // The measured span: from one period before the first deadline to the last, so
    // that samples + missed = span / period.
    let elapsed = cycles_ran.then(|| Nanos(c.last_due_ns - c.first_due_ns + period));
    let (wake, compute) = histograms(last);
    let host = FactReader::system().gather();
    let policy = policy_of(last);
    let realtime = matches!(
        last.policy as i32,
        libc::SCHED_FIFO | libc::SCHED_RR | libc::SCHED_DEADLINE
    );
    let mut warnings: Vec<Warning> = last
        .warnings
        .iter()
        .map(|w| Warning {
            code: "application-set-up".to_string(),
            message: w.clone(),
            degrades: true,
        })
        .collect();
    if !last.memory_locked && !last.warnings.iter().any(|w| w.contains("memory")) {
        warnings.push(Warning {
            code: "no-mlock".to_string(),
            message: "the application did not lock its memory: a page fault can delay its \
                      loop"
                .to_string(),
            degrades: true,
        });
    }
    if end == End::ProcessGone {
        warnings.push(Warning {
            code: "application-killed".to_string(),
            message: "the application's process ended without ending its task: the \
                      figures are those of its last cycle"
                .to_string(),
            degrades: false,
        });
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
    let degraded = warnings.iter().any(|w| w.degrades) || !realtime;
    if !realtime {
        warnings.push(Warning {
            code: "not-realtime".to_string(),
            message: "the application's loop does not run at a real-time policy (fifo, rr \
                      or deadline): its wake-ups wait for other tasks"
                .to_string(),
            degrades: true,
        });
    }
    let verdict = Verdict::judge(&[], &streams);
    Run {
        schema: SCHEMA.to_string(),
        id: String::new(),
        tool: Tool {
            name: "latlab".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        },
        started_at: started_at.clone(),
        ended_at,
        command_line,
        scenario: None,
        name: None,
        tags: BTreeMap::new(),
        note: None,
        plan: Plan {
            duration_ns: None,
            warm_up_ns: Nanos::ZERO,
            cpus: last.cpu.into_iter().collect(),
            cpu_choice: None,
            probes: Vec::new(),
            dma_latency_us: None,
            memory_lock: None,
            phases: Vec::new(),
        },
        host: Some(host),
        audit: None,
        conditions: Some(Conditions {
            memory_locked: last.memory_locked,
            realtime_policy: realtime,
            dma_latency_us: None,
            breaktrace_armed: false,
            euid,
        }),
        degraded,
        interrupted: matches!(end, End::Stopped | End::Duration | End::ProcessGone),
        warnings,
        phases: vec![Phase {
            name: "main".to_string(),
            started_at,
            elapsed_ns: elapsed,
            loads: Vec::new(),
        }],
        streams,
        events: Vec::new(),
        thresholds: Vec::new(),
        verdict,
        import: None,
        explain: None,
        progress: None,
        published: None,
    }
}

#[cfg(test)]
mod tests {
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

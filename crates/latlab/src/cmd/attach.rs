//! `latlab attach PID`: the live statistics of an application's own periodic loop
//! (`latlab_rt::periodic`, or the C library), read from the page it publishes in
//! shared memory, and at the end a Run of it like any other (made by
//! [`latlab_session::attach`]).

use crate::cli::AttachArgs;
use crate::error::CliError;
use crate::keep::keep;
use crate::output::{self, Human};
use crate::store::StoreLocation;
use latlab_model::hist::LatencyHistogram;
use latlab_model::outcome::Shortfall;
use latlab_model::stamp::run_id;
use latlab_model::Nanos;
use latlab_rt::periodic::shm;
use latlab_session::attach::{
    command_line_of, histograms, method_name, page_of, policy_of, run_of, End,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Runs `latlab attach`.
pub fn execute(args: &AttachArgs) -> Result<u8, CliError> {
    let removed: Vec<String> = shm::sweep()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    output::say_removed(&removed);
    let labels = args.labels.checked()?;
    let every = match &args.interval {
        Some(text) => positive_duration("--interval", text)?,
        None => Duration::from_secs(1),
    };
    let limit = args
        .duration
        .as_deref()
        .map(|text| positive_duration("--duration", text))
        .transpose()?;
    let accepted = match &args.accept {
        Some(list) => Shortfall::parse_list(list).map_err(|e| CliError::usage("--accept", e))?,
        None => Vec::new(),
    };
    let path = page_of(args.pid, args.task.as_deref())?;
    let store_location = match args.no_store {
        true => None,
        false => Some(StoreLocation::resolve(args.store.as_ref())?),
    };
    let (mut json, human) =
        crate::store::open_run_json(args.json.as_deref(), store_location.as_ref())?;
    let mut reader = shm::Reader::open(&path).map_err(|e| CliError::runtime(e.to_string()))?;
    let command_line = command_line_of(args.pid);
    let first = reader.snapshot().map_err(|e| {
        let fix = match e {
            shm::SnapshotError::Stalled => "; attach again once it runs",
            _ => "",
        };
        CliError::runtime(format!("{}: {e}{fix}", path.display()))
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
    // Handed to the store before the signals raise it: a stop cuts a wait on a
    // central store short. Until they do, Ctrl-C ends latlab at once (nothing started).
    let stop = Arc::new(AtomicBool::new(false));
    let mut store = store_location
        .as_ref()
        .map(|location| crate::store::open_for_run(location, &stop))
        .transpose()?;
    if let Some(store) = &store {
        labels.check_name_is_free(&**store)?;
    }

    crate::stop::raise_on(&stop, &crate::stop::ENDING)?;
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
        // it is gone, below); its last whole copy stands, as it does when the page
        // can no longer be read or stops holding what a task writes.
        let fresh = reader.snapshot();
        let stalled = matches!(fresh, Err(shm::SnapshotError::Stalled));
        let lost = match fresh {
            Ok(fresh) => {
                snapshot = fresh;
                None
            }
            Err(shm::SnapshotError::Stalled) => None,
            Err(e) => Some(e),
        };
        let gone = !latlab_rt::process::is_same_thread_alive(
            snapshot.pid,
            snapshot.tid,
            Some(snapshot.pid_start_ticks).filter(|t| *t != 0),
        );
        let end = if let Some(e) = &lost {
            let _ = Human::Stderr.write(&format!("latlab: {}: {e}\n", path.display()));
            Some(End::PageLost)
        } else if snapshot.ended {
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
    let host = latlab_measure::facts::FactReader::system().gather();
    let mut run = run_of(&last, end, command_line, euid, host);
    run.accepted = accepted;
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

fn positive_duration(flag: &str, text: &str) -> Result<Duration, CliError> {
    let ns = latlab_model::units::parse_duration(text).map_err(|e| {
        CliError::usage(flag, format!("{e} (give a duration such as 500ms or 10s)"))
    })?;
    if ns.0 <= 0 {
        return Err(CliError::usage(flag, "give a duration above 0, such as 1s"));
    }
    Ok(Duration::from_nanos(ns.0 as u64))
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

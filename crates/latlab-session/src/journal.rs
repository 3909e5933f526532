//! Checkpoints of a long run: the run is in the store from its start ("running") and
//! extended every `--checkpoint` interval with what was measured since, so a SIGKILL,
//! an OOM kill or a reboot loses at most one interval. The `--json` file, when it is a
//! regular file, is rewritten (atomically) at every checkpoint too.
//!
//! The writer is a thread of its own at the normal policy, off the measured CPUs when
//! others exist (it inherits the coordinating thread's CPUs, started before they are
//! narrowed, so it is moved explicitly). It never blocks a measuring thread: their
//! figures come through each recorder's hand-over (`PhaseCheckpoint`), read from the
//! run's [ledger](crate::ledger). Each checkpoint is committed and synced before the
//! next begins.

use crate::explaining::ExplainSource;
use crate::ledger::Ledger;
use crate::output::OutputFile;
use crate::sink::Sink;
use latlab_model::progress::{Progress, RunState};
use latlab_model::run::Run;
use latlab_model::Nanos;
use latlab_store::RunStore;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `--checkpoint`: the interval, `None` for 0 or `off`; what is wrong with it otherwise.
pub fn interval(text: &str) -> Result<Option<Duration>, String> {
    if text == "off" {
        return Ok(None);
    }
    let every = latlab_model::units::parse_duration(text)
        .map_err(|e| format!("{e} (give an interval such as 10s or 1m, or off)"))?;
    match every.0 {
        0 => Ok(None),
        ns if ns < 1_000_000_000 => Err(format!(
            "{text} is shorter than 1 s: each checkpoint writes and syncs the whole run; \
             give 1s or more, or off"
        )),
        ns => Ok(Some(Duration::from_nanos(ns as u64))),
    }
}

/// How long a checkpoint waits for the explaining thread's copy (it drains about
/// every 100 ms).
const EXPLAIN_WAIT: Duration = Duration::from_millis(500);
/// How long a checkpoint waits for every measuring thread's next sample.
const HANDOVER_WAIT: Duration = Duration::from_secs(1);

/// How the checkpoints went, for the end of the run.
#[derive(Debug, Clone, Default)]
pub struct JournalStats {
    /// Checkpoints written (to every target asked).
    pub written: u64,
    /// Checkpoints that could not be written (to one target or more).
    pub failed: u64,
    /// The longest time one took to gather (the threads' hand-overs, the loads, the
    /// explanation) and build the Run.
    pub gather_slowest: Duration,
    /// Gathering, all of them together.
    pub gather_total: Duration,
    /// The longest time one took to write (the store's commit and sync, the --json
    /// file's write, sync and rename).
    pub write_slowest: Duration,
    /// Writing, all of them together.
    pub write_total: Duration,
    /// The first failure, if writing one failed.
    pub failure: Option<String>,
}

/// The store a run is kept in (SQLite, or a farm's PostgreSQL with its local outbox).
pub type Store = Box<dyn RunStore + Send>;

struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
}

impl JournalStats {
    /// One line on how the checkpoints went (nothing for a run shorter than the
    /// interval, unless one failed).
    pub fn summary(&self) -> String {
        // The times are of every attempt, written or not.
        let mut line = match self.written + self.failed {
            0 => String::new(),
            n => {
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                let failed = match self.failed {
                    0 => String::new(),
                    f => format!(", {f} failed"),
                };
                format!(
                    "Checkpoints: {} written{failed}; gathering {:.1} ms on average (slowest \
                     {:.1} ms), writing and syncing {:.1} ms on average (slowest {:.1} ms)\n",
                    self.written,
                    ms(self.gather_total) / n as f64,
                    ms(self.gather_slowest),
                    ms(self.write_total) / n as f64,
                    ms(self.write_slowest),
                )
            }
        };
        if let Some(failure) = &self.failure {
            line.push_str(&format!(
                "latlab: warning: a checkpoint could not be written: {failure}\n"
            ));
        }
        line
    }
}

/// The checkpoint writer of one run.
pub struct Journal {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<(Option<Store>, JournalStats)>>,
}

/// Where checkpoints go.
pub struct Targets {
    /// The store holding the run as running (saved at its start).
    pub store: Option<Store>,
    /// The `--json` file to rewrite, if it is a regular file.
    pub json: Option<PathBuf>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Journal {
    /// Starts writing checkpoints of `base` (the run as it started: plan, host,
    /// audit, labels, `progress` running) with what `ledger` holds, every `every` on
    /// `cpus` (the CPUs nothing measures; empty: wherever the scheduler likes).
    /// With `explain`, each checkpoint holds what is explained so far.
    pub fn start(
        base: Run,
        ledger: Arc<Ledger>,
        targets: Targets,
        every: Duration,
        cpus: Vec<usize>,
        explain: Option<ExplainSource>,
    ) -> Journal {
        let shared = Arc::new(Shared {
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let writer = shared.clone();
        let thread = std::thread::Builder::new()
            .name("latlab-journal".to_string())
            .spawn(move || {
                if !cpus.is_empty() {
                    let _ = latlab_rt::affinity::set_current_thread(&cpus);
                }
                write_checkpoints(&writer, &ledger, base, targets, every, explain)
            })
            .ok();
        Journal { shared, thread }
    }

    /// Stops writing (a checkpoint under way is finished first) and gives the store
    /// back, for the run's final form.
    pub fn finish(mut self) -> (Option<Store>, JournalStats) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(end)) => end,
            _ => (
                None,
                JournalStats {
                    failure: Some("the checkpoint writer failed".to_string()),
                    ..JournalStats::default()
                },
            ),
        }
    }
}

/// The writer's loop: a checkpoint every `every` until told to stop.
fn write_checkpoints(
    shared: &Shared,
    ledger: &Ledger,
    base: Run,
    mut targets: Targets,
    every: Duration,
    explain: Option<ExplainSource>,
) -> (Option<Store>, JournalStats) {
    let mut stats = JournalStats::default();
    let mut next = Instant::now() + every;
    loop {
        {
            let mut stop = lock(&shared.stop);
            while !*stop {
                let left = next.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                stop = shared
                    .wake
                    .wait_timeout(stop, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            if *stop {
                break;
            }
        }
        let began = Instant::now();
        let mut run = ledger.checkpoint(&base, HANDOVER_WAIT);
        if let Some(progress) = run.progress.as_mut() {
            progress.checkpoints = stats.written + 1;
            progress.checkpoint_at = run.ended_at.clone();
        }
        if let Some(source) = &explain {
            run.explain = source.now(EXPLAIN_WAIT);
        }
        let gathered = began.elapsed();
        let writing = Instant::now();
        let mut failure = None;
        if let Some(store) = targets.store.as_mut() {
            if let Err(e) = store.update(&run) {
                failure = Some(format!("the store: {e}"));
            }
            // A switch to the local store (a central store gone quiet) is said when it
            // happens: the run may go on for hours.
            for notice in store.take_notices() {
                eprintln!("latlab: {notice}");
            }
        }
        if let Some(path) = &targets.json {
            // Its own temporary name: the run's final write has one pending already.
            let written = OutputFile::create_tagged(path, Some("checkpoint"))
                .and_then(|f| f.commit(format!("{}\n", run.to_json_pretty()).as_bytes()));
            if let Err(e) = written {
                failure.get_or_insert(format!("{}: {e}", path.display()));
            }
        }
        let wrote = writing.elapsed();
        match failure {
            None => stats.written += 1,
            Some(_) => stats.failed += 1,
        }
        stats.gather_total += gathered;
        stats.gather_slowest = stats.gather_slowest.max(gathered);
        stats.write_total += wrote;
        stats.write_slowest = stats.write_slowest.max(wrote);
        if stats.failure.is_none() {
            stats.failure = failure;
        }
        // The next one an interval after this one began: a slow disk shifts them, it
        // does not pile them up.
        next = began + every;
    }
    (targets.store, stats)
}

/// The progress of a run starting now in this process, checkpointed every `every`.
pub fn starting(every: Duration) -> Progress {
    let pid = std::process::id();
    Progress {
        state: RunState::Running,
        pid,
        pid_start_ticks: latlab_rt::process::start_ticks(pid),
        boot_id: latlab_rt::process::boot_id(),
        rig: latlab_store::Rig::this().id,
        checkpoints: 0,
        checkpoint_at: None,
        checkpoint_every_ns: Nanos(every.as_nanos() as i64).0,
        death: None,
    }
}

impl Sink for Journal {
    /// Checkpoints read the measuring threads' figures while they measure.
    fn wants_checkpoints(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_that_failed_are_not_counted_as_written() {
        let stats = JournalStats {
            written: 3,
            failed: 2,
            gather_total: Duration::from_millis(5),
            write_total: Duration::from_millis(10),
            failure: Some("the store: disk full".to_string()),
            ..JournalStats::default()
        };
        let said = stats.summary();
        assert!(
            said.starts_with("Checkpoints: 3 written, 2 failed; gathering 1.0 ms on average"),
            "{said}"
        );
        assert!(
            said.contains("could not be written: the store: disk full"),
            "{said}"
        );
        let none = JournalStats::default().summary();
        assert_eq!(none, "", "a run shorter than the interval says nothing");
    }
}

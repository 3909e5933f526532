//! Checkpoints of a long run: the run is in the store from its start ("running") and
//! extended every `--checkpoint` interval with what was measured since, so a SIGKILL,
//! an OOM kill or a reboot loses at most one interval. The `--json` file, when it is a
//! regular file, is rewritten (atomically) at every checkpoint too.
//!
//! The writer is a thread of its own at the normal policy, off the measured CPUs when
//! others exist (it inherits the coordinating thread's CPUs, started before they are
//! narrowed, so it is moved explicitly). It never blocks a measuring thread: their
//! figures come through each recorder's hand-over ([`PhaseCheckpoint`]). Each
//! checkpoint is committed and synced before the next begins.

use super::explaining::ExplainSource;
use crate::output::OutputFile;
use latlab_measure::checkpoint::PhaseCheckpoint;
use latlab_measure::load::running::RunningLoad;
use latlab_measure::notice::Notice;
use latlab_model::progress::{Progress, RunState};
use latlab_model::run::{Event, LoadRecord, Phase, Run, Stream};
use latlab_model::stamp::rfc3339;
use latlab_model::threshold::Verdict;
use latlab_model::Nanos;
use latlab_store::RunStore;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// How long a checkpoint waits for the explaining thread's copy (it drains about
/// every 100 ms).
const EXPLAIN_WAIT: Duration = Duration::from_millis(500);
/// How long a checkpoint waits for every measuring thread's next sample.
const HANDOVER_WAIT: Duration = Duration::from_secs(1);

/// What the run has measured so far, as the journal keeps it.
#[derive(Default)]
pub struct SoFar {
    /// The finished phases.
    pub phases: Vec<Phase>,
    /// Their streams.
    pub streams: Vec<Stream>,
    /// Their events.
    pub events: Vec<Event>,
    /// The warnings so far.
    pub notices: Vec<Notice>,
    /// What was in force, once a phase has ended.
    pub conditions: Option<latlab_model::run::Conditions>,
    /// The phase measuring now, if any.
    pub current: Option<CurrentPhase>,
}

/// The phase measuring now.
pub struct CurrentPhase {
    /// Its name.
    pub name: String,
    /// When it started.
    pub started_at: SystemTime,
    /// Its threads' hand-overs.
    pub checkpoint: Arc<PhaseCheckpoint>,
    /// Its loads, running.
    pub loads: Arc<Mutex<Vec<RunningLoad>>>,
}

/// How the checkpoints went, for the end of the run.
#[derive(Debug, Clone, Default)]
pub struct JournalStats {
    /// Checkpoints written.
    pub written: u64,
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
    so_far: Mutex<SoFar>,
    stop: Mutex<bool>,
    wake: Condvar,
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
    /// audit, labels, `progress` running) every `every` on `cpus` (the CPUs nothing
    /// measures; empty: wherever the scheduler likes).
    /// With `explain`, each checkpoint holds what is explained so far.
    pub fn start(
        base: Run,
        targets: Targets,
        every: Duration,
        cpus: Vec<usize>,
        explain: Option<ExplainSource>,
    ) -> Journal {
        let shared = Arc::new(Shared {
            so_far: Mutex::new(SoFar::default()),
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
                write_checkpoints(&writer, base, targets, every, explain)
            })
            .ok();
        Journal { shared, thread }
    }

    /// The run's measured state so far, for the next checkpoint to read.
    pub fn so_far(&self) -> MutexGuard<'_, SoFar> {
        lock(&self.shared.so_far)
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
        let mut run = checkpoint_run(&base, &shared.so_far, stats.written + 1);
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
        stats.written += 1;
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

/// The run as it stands at checkpoint `n`: what the finished phases measured, the
/// current phase's streams and loads as they are now.
fn checkpoint_run(base: &Run, so_far: &Mutex<SoFar>, n: u64) -> Run {
    // The lock is held while copying, never while waiting for the threads.
    let (mut phases, mut streams, events, notices, conditions, current) = {
        let s = lock(so_far);
        let current = s.current.as_ref().map(|c| {
            (
                c.name.clone(),
                c.started_at,
                c.checkpoint.clone(),
                c.loads.clone(),
            )
        });
        (
            s.phases.clone(),
            s.streams.clone(),
            s.events.clone(),
            s.notices.clone(),
            s.conditions.clone(),
            current,
        )
    };
    if let Some((name, started_at, checkpoint, loads)) = current {
        let now = checkpoint.streams(HANDOVER_WAIT);
        let loads: Vec<LoadRecord> = lock(&loads).iter().map(RunningLoad::so_far).collect();
        let elapsed = now.iter().filter_map(|s| s.elapsed_ns).max();
        if checkpoint.is_measuring() {
            phases.push(Phase {
                name,
                started_at: Some(rfc3339(started_at)),
                elapsed_ns: elapsed,
                loads,
            });
            streams.extend(now);
        }
    }
    let mut run = base.clone();
    let mut notices = notices;
    notices.sort_by_key(|n| !n.degrades());
    run.warnings = notices.iter().map(Notice::to_warning).collect();
    run.degraded = run.warnings.iter().any(|w| w.degrades);
    run.verdict = Verdict::judge(&run.thresholds, &streams);
    run.phases = phases;
    run.streams = streams;
    run.events = events;
    run.conditions = conditions;
    let now = rfc3339(SystemTime::now());
    run.ended_at = Some(now.clone());
    if let Some(progress) = run.progress.as_mut() {
        progress.checkpoints = n;
        progress.checkpoint_at = Some(now);
    }
    run
}

/// The progress of a run starting now in this process, checkpointed every `every`.
pub fn starting(every: Duration) -> Progress {
    let pid = std::process::id();
    Progress {
        state: RunState::Running,
        pid,
        pid_start_ticks: latlab_rt::process::start_ticks(pid),
        boot_id: latlab_rt::process::boot_id(),
        checkpoints: 0,
        checkpoint_at: None,
        checkpoint_every_ns: Nanos(every.as_nanos() as i64).0,
        death: None,
    }
}

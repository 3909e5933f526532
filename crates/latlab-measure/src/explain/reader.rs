//! The reader thread: drains each traced CPU's buffer into the [`Held`] pages, then
//! hands the spikes whose events are all read to the [`Explainer`].
//!
//! It runs at SCHED_OTHER on a CPU that is not traced when there is one, wakes every
//! drain period (or when the session stops it), reads each `per_cpu/cpuN/trace_pipe_raw`
//! (opened `O_NONBLOCK`) a page at a time until `EAGAIN`, and reads `per_cpu/cpuN/stats`
//! for the events the kernel overwrote meanwhile.

use super::clock::TraceClock;
use super::events::stack_trigger;
use super::ring::Held;
use super::{Explainer, FedSpike, SpikeFeed};
use latlab_model::explain::ReaderStats;
use latlab_model::Nanos;
use std::fs::{self, File};
use std::io::{ErrorKind, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time after a wake-up the events of its CPU must be read through before its spike is
/// handed over: events are committed a little after they are stamped.
const WAKE_SLACK_NS: u64 = 1_000_000;

/// One traced CPU's files.
pub(crate) struct CpuPipe {
    pub(crate) cpu: usize,
    pub(crate) pipe: File,
    pub(crate) pipe_path: PathBuf,
    pub(crate) stats: PathBuf,
    /// `overrun` at the previous drain.
    pub(crate) overrun: Option<u64>,
}

/// Everything the reader thread owns.
pub(crate) struct Reader<E> {
    pub(crate) held: Held,
    pub(crate) pipes: Vec<CpuPipe>,
    pub(crate) feeds: Arc<Mutex<Vec<Arc<SpikeFeed>>>>,
    pub(crate) clock: TraceClock,
    pub(crate) explainer: E,
    pub(crate) drain_every: Duration,
    /// `events/sched/sched_waking/trigger` in deep mode: a stack at each wake-up of a
    /// measuring thread.
    pub(crate) stack_trigger: Option<PathBuf>,
    /// Where to run (`None`: wherever the kernel puts it).
    pub(crate) cpu: Option<usize>,
}

/// What the reader hands back when it ends.
pub(crate) struct ReaderEnd<E> {
    pub(crate) explainer: E,
    pub(crate) stats: ReaderStats,
    /// Spikes never handed over (the session was dropped, not finished).
    pub(crate) problems: Vec<String>,
}

/// The reader's own state between drains.
struct Progress {
    stats: ReaderStats,
    pending: Vec<FedSpike>,
    ready: Vec<FedSpike>,
    triggered_tids: Vec<i32>,
    problems: Vec<String>,
}

impl<E: Explainer> Reader<E> {
    /// Drains until `stop`, then once more after it (tracing is off by then) and hands
    /// every spike over, unless `abandon` (the session is dropped on an error path).
    pub(crate) fn run(mut self, stop: &AtomicBool, abandon: &AtomicBool) -> ReaderEnd<E> {
        let mut progress = Progress {
            stats: ReaderStats {
                cpu: self.cpu,
                ..ReaderStats::default()
            },
            pending: Vec::new(),
            ready: Vec::new(),
            triggered_tids: Vec::new(),
            problems: Vec::new(),
        };
        if let Some(cpu) = self.cpu {
            if let Err(e) = latlab_rt::affinity::pin_current_thread(cpu) {
                progress.stats.cpu = None;
                progress
                    .problems
                    .push(format!("the trace reader could not move to CPU {cpu}: {e}"));
            }
        }
        // At SCHED_OTHER, whatever the thread that started it runs at.
        let _ = latlab_rt::sched::set_current_thread(latlab_rt::sched::Policy::Other { nice: 0 });
        loop {
            let began = Instant::now();
            let stopping = stop.load(Ordering::Acquire);
            self.drain(&mut progress);
            if stopping {
                break;
            }
            self.update_stack_trigger(&mut progress);
            self.hand_over(&mut progress, false);
            let elapsed = began.elapsed();
            if elapsed < self.drain_every && !stop.load(Ordering::Acquire) {
                std::thread::park_timeout(self.drain_every - elapsed);
            }
        }
        if !abandon.load(Ordering::Acquire) {
            self.hand_over(&mut progress, true);
        }
        ReaderEnd {
            explainer: self.explainer,
            stats: progress.stats,
            problems: progress.problems,
        }
    }

    /// Reads every traced CPU's buffer empty.
    fn drain(&mut self, progress: &mut Progress) {
        let stats = &mut progress.stats;
        for pipe in &mut self.pipes {
            let began = self.clock.now();
            if let Some(overrun) = read_overrun(&pipe.stats) {
                let delta = pipe
                    .overrun
                    .map_or(overrun, |seen| overrun.saturating_sub(seen));
                if delta > 0 {
                    stats.overrun += delta;
                    self.held.overrun(pipe.cpu);
                }
                pipe.overrun = Some(overrun);
            }
            let mut oldest = None;
            loop {
                let mut page = self.held.spare_page();
                let failure = match pipe.pipe.read(&mut page) {
                    Ok(0) => Some(None),
                    Ok(_) => None,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => Some(None),
                    Err(e) if e.kind() == ErrorKind::Interrupted => Some(None),
                    Err(e) => Some(Some(format!(
                        "reading {} failed: {e}",
                        pipe.pipe_path.display()
                    ))),
                };
                if let Some(problem) = failure {
                    self.held.give_back(page);
                    if let Some(problem) = problem {
                        if !progress.problems.contains(&problem) {
                            progress.problems.push(problem);
                        }
                    }
                    break;
                }
                let added = self.held.add(pipe.cpu, page);
                stats.pages += 1;
                stats.events += added.events;
                stats.pages_with_missing_events += u64::from(added.missing_events);
                oldest = oldest.or(added.oldest_ts);
            }
            let read_at = self.clock.now();
            if let Some(oldest) = oldest {
                let lag = Nanos(read_at.saturating_sub(oldest) as i64);
                stats.max_lag_ns = Some(stats.max_lag_ns.map_or(lag, |max| max.max(lag)));
            }
            self.held.drained(pipe.cpu, began);
        }
        stats.held_bytes_max = stats.held_bytes_max.max(self.held.bytes() as u64);
    }

    /// Takes the new spikes of every feed and hands over those whose events are read.
    fn hand_over(&mut self, progress: &mut Progress, last: bool) {
        let feeds: Vec<Arc<SpikeFeed>> = match self.feeds.lock() {
            Ok(feeds) => feeds.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        for feed in &feeds {
            while let Some(sample) = feed.pop() {
                let origin = feed.origin();
                let due_monotonic = origin.monotonic(sample.at_ns);
                let due = self.clock.at_monotonic(due_monotonic);
                progress.pending.push(FedSpike {
                    phase: feed.phase().to_string(),
                    thread: feed.thread(),
                    cpu: feed.cpu(),
                    tid: feed.tid(),
                    at_ns: Nanos(sample.at_ns),
                    latency_ns: Nanos(sample.value_ns),
                    due_monotonic_ns: due_monotonic,
                    due_trace_ns: due,
                    wake_trace_ns: due.saturating_add_signed(sample.value_ns),
                });
            }
        }
        let held = &self.held;
        let drained = |spike: &FedSpike| {
            let through = match spike.cpu {
                Some(cpu) => held.drained_through(cpu),
                None => held
                    .cpus()
                    .filter_map(|cpu| held.drained_through(cpu))
                    .min(),
            };
            through.is_none_or(|t| t > spike.wake_trace_ns.saturating_add(WAKE_SLACK_NS))
        };
        let mut i = 0;
        while i < progress.pending.len() {
            if last || drained(&progress.pending[i]) {
                progress.ready.push(progress.pending.swap_remove(i));
            } else {
                i += 1;
            }
        }
        progress.ready.sort_by_key(|spike| spike.due_trace_ns);
        self.explainer
            .drained(&self.held, &mut progress.ready, last);
    }

    /// Deep mode: keeps the stack trigger on the wake-ups of the measuring threads
    /// known so far.
    fn update_stack_trigger(&mut self, progress: &mut Progress) {
        let Some(path) = &self.stack_trigger else {
            return;
        };
        let mut tids: Vec<i32> = match self.feeds.lock() {
            Ok(feeds) => feeds.iter().map(|f| f.tid()).filter(|&t| t > 0).collect(),
            Err(_) => return,
        };
        tids.sort_unstable();
        tids.dedup();
        if tids == progress.triggered_tids {
            return;
        }
        let _ = fs::write(path, "!stacktrace");
        if let Some(trigger) = stack_trigger(&tids) {
            if let Err(e) = fs::write(path, &trigger) {
                progress.problems.push(format!(
                    "no stacks of the interrupted code: writing '{trigger}' to {} failed: {e}",
                    path.display()
                ));
                self.stack_trigger = None;
                return;
            }
        }
        progress.triggered_tids = tids;
    }
}

/// The `overrun` count of a `per_cpu/cpuN/stats` file.
fn read_overrun(path: &std::path::Path) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    parse_overrun(&text)
}

fn parse_overrun(stats: &str) -> Option<u64> {
    stats
        .lines()
        .find_map(|line| line.strip_prefix("overrun:"))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrun_is_read_from_the_stats_file_not_commit_overrun() {
        let stats = "entries: 12\noverrun: 345\ncommit overrun: 7\nbytes: 1\n";
        assert_eq!(parse_overrun(stats), Some(345));
        assert_eq!(parse_overrun("entries: 1\n"), None);
    }
}

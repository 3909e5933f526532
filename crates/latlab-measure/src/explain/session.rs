//! A session: the instance set up, the reader running, and everything undone at the
//! end.

use super::clock::{self, open_nonblocking, TraceClock};
use super::events;
use super::reader::{CpuPipe, Reader, ReaderEnd};
use super::ring::{Held, Retention};
use super::{Explainer, SessionError, SpikeFeed};
use latlab_model::explain::{ExplainMode, ReaderStats};
use latlab_rt::tracefs::TraceInstance;
use latlab_trace::{EventFormat, PageLayout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How the kernel buffers and the reader's ring are sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderSettings {
    /// Each traced CPU's kernel buffer, KiB (`buffer_size_kb`): what must hold the
    /// events written between two drains (4 MiB held ~1.5 s under hackbench).
    pub buffer_kb: u64,
    /// How often the reader drains the buffers.
    pub drain_every: Duration,
    /// How far behind a CPU's newest event its pages are kept.
    pub retention: Duration,
    /// Bytes of pages kept per CPU, at most.
    pub max_held_bytes_per_cpu: usize,
    /// Stamp events with `mono` where it is cheap (else `local`, placed on
    /// `CLOCK_MONOTONIC` by a measured offset); false: always `local`.
    pub prefer_mono: bool,
}

impl Default for ReaderSettings {
    /// 4 MiB kernel buffers, drained every 100 ms, pages kept 5 s and at most 64 MiB
    /// per CPU, `mono` where it is cheap.
    fn default() -> ReaderSettings {
        ReaderSettings {
            buffer_kb: 4096,
            drain_every: Duration::from_millis(100),
            retention: Duration::from_secs(5),
            max_held_bytes_per_cpu: 64 << 20,
            prefer_mono: true,
        }
    }
}

/// What a finished session recorded, besides what its explainer kept.
#[derive(Debug)]
pub struct Finished<E> {
    /// The explainer, with what it kept.
    pub explainer: E,
    /// How well the buffers were drained.
    pub reader: ReaderStats,
    /// The events enabled, `system:name`.
    pub events: Vec<String>,
    /// The trace clock (`mono`, or `local` placed by an offset).
    pub clock: String,
    /// What this kernel (or this session) cannot attribute, one sentence each.
    pub limits: Vec<String>,
    /// Each CPU's kernel buffer as the kernel sized it, KiB.
    pub buffer_kb: u64,
    /// Spikes the measuring threads could not push because their feed was full.
    pub spikes_dropped: u64,
    /// What went wrong along the way (the instance could not be removed, a read
    /// failed), each with what to do.
    pub problems: Vec<String>,
}

/// A private trace instance recording the measured CPUs, and its reader thread.
pub struct Session<E: Explainer + 'static> {
    instance: TraceInstance,
    feeds: Arc<Mutex<Vec<Arc<SpikeFeed>>>>,
    reader: Option<JoinHandle<ReaderEnd<E>>>,
    stop: Arc<AtomicBool>,
    abandon: Arc<AtomicBool>,
    clock: TraceClock,
    /// The CPU the clock markers are written on (`local` clock only).
    marker_cpu: usize,
    layout: PageLayout,
    print: Option<EventFormat>,
    events: Vec<String>,
    limits: Vec<String>,
    buffer_kb: u64,
    stack_trigger: bool,
}

impl<E: Explainer + 'static> Session<E> {
    /// Makes the instance for `traced_cpus` with `mode`'s events, starts tracing and
    /// the reader thread, which hands spikes to `explainer`. An error says why there
    /// can be no explanation and what to do; nothing is left behind.
    pub fn start(
        traced_cpus: &[usize],
        mode: ExplainMode,
        settings: &ReaderSettings,
        explainer: E,
    ) -> Result<Session<E>, SessionError> {
        let mut cpus = traced_cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        let Some(&marker_cpu) = cpus.first() else {
            return Err(SessionError::NoCpus);
        };
        // Dropped on any error below, which removes it.
        let instance = TraceInstance::create()?;
        instance.set_cpus(&cpus)?;
        let mut clock = clock::choose(&instance, settings.prefer_mono)?;
        let buffer_kb = instance.set_buffer_size_kb(settings.buffer_kb)?;
        let layout = read_layout(&instance)?;
        let print_path = instance.dir().join("events/ftrace/print/format");
        let print = std::fs::read_to_string(&print_path)
            .ok()
            .and_then(|text| EventFormat::parse(&text).ok());
        let mut limits = Vec::new();
        if clock.name != "mono" {
            let Some(print) = &print else {
                return Err(SessionError::Clock {
                    why: format!(
                        "the trace clock is {} and {} is missing, so its offset cannot be \
                         measured",
                        clock.name,
                        print_path.display()
                    ),
                });
            };
            instance.set_tracing(true)?;
            let (offset, uncertainty) =
                clock::measure_offset(&instance, marker_cpu, &layout, print)?;
            instance.set_tracing(false)?;
            clock.offset_ns = offset;
            clock.uncertainty_ns = Some(uncertainty);
        }
        let enabled = events::enable(&instance, mode)?;
        limits.extend(enabled.limits);
        let stack_trigger = mode == ExplainMode::Deep
            && instance
                .dir()
                .join("events/sched/sched_waking/trigger")
                .is_file();
        let mut pipes = Vec::with_capacity(cpus.len());
        for &cpu in &cpus {
            let pipe_path = instance.trace_pipe_raw(cpu)?;
            pipes.push(CpuPipe {
                cpu,
                pipe: open_nonblocking(&pipe_path)?,
                stats: pipe_path.with_file_name("stats"),
                pipe_path,
                overrun: None,
            });
        }
        let reader_cpu = latlab_rt::affinity::allowed_cpus()
            .unwrap_or_default()
            .into_iter()
            .find(|cpu| !cpus.contains(cpu));
        if reader_cpu.is_none() {
            limits.push(format!(
                "the trace reader runs on the measured CPUs (no other CPU may be used): it \
                 wakes there every {} ms at SCHED_OTHER",
                settings.drain_every.as_millis()
            ));
        }
        instance.set_tracing(true)?;
        let held = Held::new(
            layout,
            enabled.formats,
            &cpus,
            clock.now(),
            Retention {
                behind_ns: settings.retention.as_nanos() as u64,
                bytes_per_cpu: settings.max_held_bytes_per_cpu,
            },
        );
        let feeds = Arc::new(Mutex::new(Vec::new()));
        let reader = Reader {
            held,
            pipes,
            feeds: feeds.clone(),
            clock: clock.clone(),
            explainer,
            drain_every: settings.drain_every,
            stack_trigger: stack_trigger
                .then(|| instance.dir().join("events/sched/sched_waking/trigger")),
            cpu: reader_cpu,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let abandon = Arc::new(AtomicBool::new(false));
        let handle = {
            let (stop, abandon) = (stop.clone(), abandon.clone());
            std::thread::Builder::new()
                .name("latlab-trace".to_string())
                .spawn(move || reader.run(&stop, &abandon))
                .map_err(SessionError::Thread)?
        };
        Ok(Session {
            instance,
            feeds,
            reader: Some(handle),
            stop,
            abandon,
            clock,
            marker_cpu,
            layout,
            print,
            events: enabled.events,
            limits,
            buffer_kb,
            stack_trigger,
        })
    }

    /// A new feed for the stream of `thread` (on `cpu`) in `phase`, read by this
    /// session: give it to the runner (`RunRequest::feeds`), one per measuring thread.
    pub fn feed(&self, phase: &str, thread: usize, cpu: Option<usize>) -> Arc<SpikeFeed> {
        let feed = Arc::new(SpikeFeed::new(phase, thread, cpu));
        self.attach(feed.clone());
        feed
    }

    /// One feed per measuring thread of a phase on `cpus` (thread `i` on `cpus[i]`).
    pub fn feeds_for(&self, phase: &str, cpus: &[usize]) -> Vec<Arc<SpikeFeed>> {
        cpus.iter()
            .enumerate()
            .map(|(thread, &cpu)| self.feed(phase, thread, Some(cpu)))
            .collect()
    }

    /// Reads spikes from a feed made elsewhere too.
    pub fn attach(&self, feed: Arc<SpikeFeed>) {
        match self.feeds.lock() {
            Ok(mut feeds) => feeds.push(feed),
            Err(poisoned) => poisoned.into_inner().push(feed),
        }
    }

    /// Turns the session's events on or off (tracing stays on): the A/B of what the
    /// events cost switches them, so that the side without them pays nothing for them.
    pub fn set_events(&self, on: bool) -> Result<(), SessionError> {
        for event in &self.events {
            if let Some((system, name)) = event.split_once(':') {
                self.instance.set_event(system, name, on)?;
            }
        }
        Ok(())
    }

    /// The instance's directory (for tests and messages).
    pub fn instance_dir(&self) -> &std::path::Path {
        self.instance.dir()
    }

    /// Stops tracing, lets the reader drain what is left and hand every spike over,
    /// and removes the instance. An error says the reader thread failed, taking its
    /// explanations with it (the instance is removed all the same).
    pub fn finish(mut self) -> Result<Finished<E>, SessionError> {
        let (end, mut problems) = self.shut_down(false);
        let mut limits = std::mem::take(&mut self.limits);
        if let Some(uncertainty) = self.clock.uncertainty_ns {
            let drift = self.remeasure_offset();
            limits.push(match drift {
                Some(drift) => format!(
                    "trace clock {}: events placed on CLOCK_MONOTONIC by an offset measured \
                     with trace_marker writes (±{uncertainty} ns), which had moved {drift} ns \
                     by the end",
                    self.clock.name
                ),
                None => format!(
                    "trace clock {}: events placed on CLOCK_MONOTONIC by an offset measured \
                     with trace_marker writes (±{uncertainty} ns); its drift is unknown",
                    self.clock.name
                ),
            });
        }
        if let Err(e) = self.instance.remove() {
            problems.push(e.to_string());
        }
        let spikes_dropped = match self.feeds.lock() {
            Ok(feeds) => feeds.iter().map(|f| f.overflow()).sum(),
            Err(poisoned) => poisoned.into_inner().iter().map(|f| f.overflow()).sum(),
        };
        let Some(end) = end else {
            // The reader thread panicked: its explainer, and all it explained, is gone.
            return Err(SessionError::Reader {
                why: problems.join("; "),
            });
        };
        problems.extend(end.problems);
        Ok(Finished {
            explainer: end.explainer,
            reader: end.stats,
            events: std::mem::take(&mut self.events),
            clock: self.clock.name.clone(),
            limits,
            buffer_kb: self.buffer_kb,
            spikes_dropped,
            problems,
        })
    }

    /// Stops tracing and the reader (which closes its files), once.
    fn shut_down(&mut self, abandon: bool) -> (Option<ReaderEnd<E>>, Vec<String>) {
        let mut problems = Vec::new();
        let _ = self.instance.set_tracing(false);
        if self.stack_trigger {
            let trigger = self
                .instance
                .dir()
                .join("events/sched/sched_waking/trigger");
            let _ = std::fs::write(trigger, "!stacktrace");
        }
        let Some(handle) = self.reader.take() else {
            return (None, problems);
        };
        self.abandon.store(abandon, Ordering::Release);
        self.stop.store(true, Ordering::Release);
        handle.thread().unpark();
        match handle.join() {
            Ok(end) => (Some(end), problems),
            Err(_) => {
                problems.push("the trace reader thread panicked".to_string());
                (None, problems)
            }
        }
    }

    /// The `local` clock's offset measured again: how far it moved since the start.
    fn remeasure_offset(&self) -> Option<i64> {
        let print = self.print.as_ref()?;
        let _ = self.instance.disable_events();
        self.instance.set_tracing(true).ok()?;
        let measured = clock::measure_offset(&self.instance, self.marker_cpu, &self.layout, print);
        let _ = self.instance.set_tracing(false);
        measured
            .ok()
            .map(|(offset, _)| offset - self.clock.offset_ns)
    }
}

impl<E: Explainer + 'static> Drop for Session<E> {
    fn drop(&mut self) {
        // After `finish`, only the instance is left (and already removed).
        let _ = self.shut_down(true);
        let _ = self.instance.remove();
    }
}

/// The page layout from the instance's `events/header_page`.
fn read_layout(instance: &TraceInstance) -> Result<PageLayout, SessionError> {
    let path = instance.dir().join("events/header_page");
    let text = latlab_rt::tracefs::read_at_once(&path).map_err(|source| SessionError::Read {
        path: path.clone(),
        source,
    })?;
    PageLayout::parse(&text).map_err(|source| SessionError::Description { path, source })
}

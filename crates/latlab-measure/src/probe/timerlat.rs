//! `timerlat`: periodic wake-up latency as the kernel's timerlat tracer measures it —
//! what `rtla timerlat` reads — as streams of an ordinary Run.
//!
//! The tracer arms a timer every period on each measured CPU and stamps, for each
//! activation, how late its interrupt handler ran (`irq`) and how late the thread it
//! woke ran (`thread`); with a user workload (`osnoise/per_cpu/cpuN/timerlat_fd`,
//! kernels 6.5 and later) the thread is one of latlab's, reading that file in a loop,
//! and the tracer also stamps how late it was back in the kernel after returning to
//! user space (`user`, rtla's "Ret user Timer Latency"). Each becomes a stream per
//! CPU: `timerlat-irq`, `timerlat-thread`, `timerlat-user`, as `latlab import` names
//! an `rtla timerlat hist` file's columns.
//!
//! The tracer's events (`ftrace:timerlat`: `context`, `timer_latency` in ns) are read
//! from a private instance stamped with CLOCK_MONOTONIC; an activation was due at the
//! event's time less its latency, so every activation falls on the grid of periods
//! from the first: those of the measured span that produced no event are missed
//! periods (the tracer skips a period its thread overran, as cyclictest does, but
//! silently), and samples + missed = periods elapsed.

use super::info::{BuildError, Measured, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::tracer::{self, Reader, Shared, DRAIN};
use super::{info, Placement, Probe, Site, Window, Worker};
use crate::live::LiveStats;
use crate::notice::Notice;
use crate::record::SampleRecorder;
use latlab_model::run::{Event, Stream};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::tracefs::osnoise::{self, KernelTracer};
use latlab_rt::{affinity, memory, sched, RtError};
use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The timerlat probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "timerlat",
    summary: "wake-up latency as the kernel's timerlat tracer measures it (rtla timerlat): \
              IRQ, thread and return-to-user latency per CPU",
    definition: "The kernel's timerlat tracer (CONFIG_TIMERLAT_TRACER; run as root) arms a \
                 timer every period (--period, whole µs from 100 µs to 1 s) on each \
                 measured CPU. For each activation it stamps how late the timer's interrupt \
                 handler ran (stream timerlat-irq) and how late the thread it woke ran \
                 (timerlat-thread), on CLOCK_MONOTONIC from the timer's expiry. With \
                 workload=user (the default where the kernel has \
                 osnoise/per_cpu/cpuN/timerlat_fd, 6.5 and later) that thread is latlab's, \
                 pinned at the run's policy, reading the file in a loop, and the tracer \
                 also stamps how late it was back after returning to user space \
                 (timerlat-user); with workload=kernel it is the tracer's kernel thread \
                 timerlat/N, put at the run's policy as rtla -P does. Periods of the \
                 measured span without an activation are missed periods. The tracer's \
                 settings are restored and its instance removed afterwards; where the \
                 tracer is absent the probe is refused with the reason.",
    params: &[ParamInfo {
        key: "workload",
        choices: &["auto", "user", "kernel"],
        default: "auto",
        help: "who waits for the timer: latlab's thread through timerlat_fd (user), the \
               tracer's kernel thread (kernel), or user where the kernel has it (auto)",
    }],
    honours: &[Setting::Period],
    policies: |_| Policies::Any,
    build,
    plan: None,
};

/// The tracer's period bounds, in µs (`timerlat_period_us`).
const PERIOD_US: std::ops::RangeInclusive<i64> = 100..=1_000_000;

/// What a timerlat event's `context` says.
const IRQ: i64 = 0;
const THREAD: i64 = 1;
const USER: i64 = 2;

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let period = setup.period.0;
    if period % 1_000 != 0 || !PERIOD_US.contains(&(period / 1_000)) {
        return Err(BuildError::Setting {
            probe: INFO.name,
            setting: Setting::Period,
            why: format!(
                "--period {} is not one the tracer takes: give whole µs from 100us to 1s",
                setup.period
            ),
        });
    }
    let unsupported = |why: String| BuildError::Unsupported {
        probe: INFO.name,
        why,
    };
    let root = osnoise::available(KernelTracer::Timerlat).map_err(|e| unsupported(e.to_string()))?;
    let user_files = setup
        .allowed_cpus
        .first()
        .is_some_and(|&cpu| osnoise::timerlat_fd(&root, cpu).is_some());
    let user = match (setup.param("workload"), user_files) {
        ("kernel", _) | ("auto", false) => false,
        ("user", false) => {
            return Err(BuildError::param(
                INFO.name,
                "workload",
                setup,
                "this kernel has no osnoise/per_cpu/cpuN/timerlat_fd (6.5 and later have \
                 it): use workload=kernel",
            ))
        }
        _ => true,
    };
    if user && matches!(setup.policy, SchedSpec::Deadline { .. }) {
        return Err(unsupported(
            "a SCHED_DEADLINE thread cannot be pinned to its CPU, as timerlat_fd's reader \
             must be: use a fifo or rr policy"
                .to_string(),
        ));
    }
    Ok(Box::new(TimerlatProbe {
        setup: setup.clone(),
        user,
        shared: Shared::default(),
    }))
}

struct TimerlatProbe {
    setup: ProbeSetup,
    user: bool,
    shared: Shared,
}

impl TimerlatProbe {
    /// The session's plan for a worker on CPU `cpu`: every measured CPU, told by the
    /// setup's allowed CPUs and the placements the runner hands out.
    fn plan(&self, cpus: Vec<usize>) -> tracer::Plan {
        let mut settings = vec![
            ("osnoise/cpus", latlab_model::spec::format_cpu_list(&cpus)),
            ("osnoise/timerlat_period_us", (self.setup.period.0 / 1_000).to_string()),
            ("osnoise/stop_tracing_us", "0".to_string()),
            ("osnoise/stop_tracing_total_us", "0".to_string()),
            ("osnoise/print_stack", "0".to_string()),
        ];
        if self.user {
            settings.push(("osnoise/options", "NO_OSNOISE_WORKLOAD".to_string()));
        } else if osnoise::available(KernelTracer::Timerlat)
            .is_ok_and(|root| root.join("osnoise/options").exists())
        {
            settings.push(("osnoise/options", "OSNOISE_WORKLOAD".to_string()));
        }
        tracer::Plan {
            tracer: KernelTracer::Timerlat,
            cpus,
            settings,
            events: Vec::new(),
            decoded: vec![("ftrace", "timerlat")],
            kernel_threads: (!self.user).then_some(self.setup.policy),
        }
    }
}

impl Probe for TimerlatProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn site(&self) -> Site {
        Site::Elsewhere
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let plan = self.plan(self.setup.measured_cpus.clone());
        let reader = Reader::open(&self.shared, &plan, placement)?;
        Ok(Box::new(TimerlatWorker {
            accounts: Accounts::new(&self.setup, placement, self.user),
            cpu: placement.cpu.unwrap_or_default(),
            user: self.user,
            user_thread: None,
            reader,
        }))
    }

    fn notices(&self) -> Vec<Notice> {
        self.shared.notices(INFO.name)
    }
}

/// One `ftrace:timerlat` event: when it was stamped (ns, the instance's clock), the
/// activation's number on its CPU (`seqnum`: the interrupt's and its thread's are the
/// same), for which context, how late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Activation {
    stamped: i64,
    seqnum: i64,
    context: i64,
    latency: i64,
}

impl Activation {
    fn of(event: &latlab_trace::Event<'_>) -> Option<Activation> {
        Some(Activation {
            stamped: event.timestamp as i64,
            seqnum: event.integer("seqnum")?,
            context: event.integer("context")?,
            latency: event.integer("timer_latency")?,
        })
    }

    /// When the timer was due: the event's stamp less its latency.
    fn due(&self) -> i64 {
        self.stamped - self.latency
    }
}

/// One context's samples and counts.
struct Context {
    context: i64,
    recorder: SampleRecorder,
    warm_up: u64,
    first: Option<i64>,
    /// The grid index of its last activation, for the missed periods the live
    /// display shows.
    last: Option<i64>,
}

/// The tracer's grid of periods, as its interrupts show it.
///
/// An interrupt's due time (its stamp less its latency) lies on the grid but for the
/// time between the tracer computing the latency and stamping the event: a few µs on
/// hardware, up to hundreds under an emulator, and the first activations after the
/// tracer starts fall off the grid the later ones keep (both seen on 6.1-rt and
/// 6.12-rt). So the grid follows the interrupts that agree with it (each moves it a
/// sixteenth of the way), an interrupt far off does not move it, and eight far off
/// in a row (the tracer restarted its timer) move it there.
#[derive(Debug, Clone, Copy)]
struct Grid {
    period: i64,
    /// A due time on the grid (ns, CLOCK_MONOTONIC)...
    anchor: i64,
    /// ...and its number (it keeps counting when the grid moves).
    base: i64,
    /// Interrupts far off the grid in a row.
    astray: u32,
}

impl Grid {
    fn new(period: i64, due: i64) -> Grid {
        Grid {
            period,
            anchor: due,
            base: 0,
            astray: 0,
        }
    }

    /// `due` less the nearest grid point: within ±half a period.
    fn offset(&self, due: i64) -> i64 {
        let p = self.period;
        (due - self.anchor + p / 2).rem_euclid(p) - p / 2
    }

    /// Learns from an interrupt due at `due`.
    fn observe(&mut self, due: i64) {
        let offset = self.offset(due);
        if offset.abs() <= self.period / 8 {
            self.anchor += offset / 16;
            self.astray = 0;
        } else {
            self.astray += 1;
            if self.astray >= 8 {
                self.base = self.index(due);
                self.anchor = due;
                self.astray = 0;
            }
        }
    }

    /// The number of the grid point nearest `due`.
    fn index(&self, due: i64) -> i64 {
        self.base + (due - self.anchor + self.period / 2).div_euclid(self.period)
    }

    /// The number of the first grid point after `t`.
    fn first_after(&self, t: i64) -> i64 {
        self.base + (t - self.anchor).div_euclid(self.period) + 1
    }

    /// Grid points in (`after`, `until`].
    fn points(&self, after: i64, until: i64) -> u64 {
        let p = self.period;
        let first = (after - self.anchor).div_euclid(p) + 1;
        let last = (until - self.anchor).div_euclid(p);
        (last - first + 1).max(0) as u64
    }
}

/// What a CPU's activations add up to: a stream per context, each activation
/// numbered on the tracer's [`Grid`].
struct Accounts {
    setup: ProbeSetup,
    placement: Placement,
    contexts: Vec<Context>,
    grid: Option<Grid>,
    /// The latest interrupt's seqnum and number: its thread's events get the same.
    last_irq: Option<(i64, i64)>,
    /// The window measured and when measuring stopped, once it has.
    measured: Option<(Window, i64)>,
}

impl Accounts {
    fn new(setup: &ProbeSetup, placement: &Placement, user: bool) -> Accounts {
        let contexts: &[i64] = if user {
            &[IRQ, THREAD, USER]
        } else {
            &[IRQ, THREAD]
        };
        Accounts {
            contexts: contexts
                .iter()
                .enumerate()
                .map(|(part, &context)| Context {
                    context,
                    // The thread's latency is what a woken task sees: it alone is
                    // explained, as the timer probe's samples are.
                    recorder: setup.recorder_for_part(placement, part, context == THREAD),
                    warm_up: 0,
                    first: None,
                    last: None,
                })
                .collect(),
            setup: setup.clone(),
            placement: placement.clone(),
            grid: None,
            last_irq: None,
            measured: None,
        }
    }

    /// Records the activations of `window`: those due before its start are set-up,
    /// before its warm-up's end warm-up, after its end none of its business. The
    /// thread context's samples go to the live display, with the periods between
    /// them that had no activation.
    fn take(&mut self, activations: &[Activation], window: &Window, live: &LiveStats) {
        // Once measuring stopped, what came due after it is none of the span's.
        let end = match (window.end, self.measured) {
            (end, Some((_, stopped))) => Some(end.map_or(stopped, |end| end.min(stopped))),
            (end, None) => end,
        };
        for activation in activations {
            let due = activation.due();
            let Some(index) = self.number(activation) else {
                continue;
            };
            let Some(grid) = self.grid else {
                continue;
            };
            let Some(context) = self
                .contexts
                .iter_mut()
                .find(|c| c.context == activation.context)
            else {
                continue;
            };
            if due < window.start || end.is_some_and(|end| due > end) {
                continue;
            }
            let previous = context.last.replace(index);
            if due <= window.warm_up_end {
                context.warm_up += 1;
                context.recorder.count_warm_up(1);
                continue;
            }
            // The measured periods since the last activation (or the warm-up's end)
            // that gave this context none.
            let first_measured = grid.first_after(window.warm_up_end);
            let since = previous.map_or(first_measured, |last| (last + 1).max(first_measured));
            let missed = (index - since).max(0) as u64;
            context.first.get_or_insert(activation.latency);
            context.recorder.count_missed(missed);
            context
                .recorder
                .record(activation.latency, due - window.warm_up_end);
            if activation.context == THREAD {
                live.publish(activation.latency, missed);
            }
        }
    }

    /// The number of an activation's grid point: an interrupt's from its due time,
    /// a thread's (or return to user's) its interrupt's, found by seqnum. `None` for
    /// one before any interrupt was seen (the buffer was read from the middle of an
    /// activation, before the window).
    fn number(&mut self, activation: &Activation) -> Option<i64> {
        let due = activation.due();
        if activation.context == IRQ {
            let grid = self
                .grid
                .get_or_insert_with(|| Grid::new(self.setup.period.0, due));
            grid.observe(due);
            let index = grid.index(due);
            self.last_irq = Some((activation.seqnum, index));
            return Some(index);
        }
        match (self.last_irq, &self.grid) {
            (Some((seqnum, index)), _) if seqnum == activation.seqnum => Some(index),
            (_, Some(grid)) => Some(grid.index(due)),
            (_, None) => None,
        }
    }

    /// Each context's stream: its samples, and as missed the periods due that gave
    /// it none.
    fn streams(&self, phase: &str) -> Vec<Stream> {
        // With no interrupt seen there is no grid to count the periods due on: how
        // many were missed is unknown, not none.
        let (due, elapsed) = match self.measured {
            Some((window, stopped)) => {
                let until = window.end.map_or(stopped, |end| end.min(stopped));
                (
                    self.grid.map(|grid| grid.points(window.warm_up_end, until)),
                    Nanos((until - window.warm_up_end).max(0)),
                )
            }
            None => (None, Nanos(0)),
        };
        self.contexts
            .iter()
            .map(|c| {
                let samples = c.recorder.samples();
                let mut stream = info::stream_of(
                    Measured {
                        info: &INFO,
                        setup: &self.setup,
                        placement: &self.placement,
                        recorder: &c.recorder,
                        missed: due.map_or(0, |due| due.saturating_sub(samples)),
                        warm_up_samples: c.warm_up,
                        first_sample: c.first.map(Nanos),
                        elapsed,
                        page_faults: 0,
                    },
                    phase,
                );
                stream.probe = match c.context {
                    IRQ => "timerlat-irq",
                    THREAD => "timerlat-thread",
                    _ => "timerlat-user",
                }
                .to_string();
                stream.method = Some("timerlat".to_string());
                if self.measured.is_some() && due.is_none() {
                    stream.missed_periods = None;
                }
                // The kernel's thread (or latlab's user thread) measured: latlab's
                // reader's page faults and timer slack are not the measurement's.
                stream.page_faults = None;
                stream.timer_slack_ns = None;
                stream
            })
            .collect()
    }
}

/// latlab's thread waiting for the timer through `timerlat_fd` (workload=user).
struct UserThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<(), String>>,
}

struct TimerlatWorker {
    accounts: Accounts,
    cpu: usize,
    user: bool,
    /// Ended before the session (and the tracer it waits on) goes.
    user_thread: Option<UserThread>,
    reader: Reader,
}

impl TimerlatWorker {
    /// Starts latlab's thread on the measured CPU, at the run's policy, reading
    /// `timerlat_fd` until stopped.
    fn start_user_thread(&mut self) -> Result<(), RtError> {
        let path = self.reader.session().timerlat_fd(self.cpu).ok_or_else(|| {
            RtError::new(
                format!("find timerlat_fd of CPU {}", self.cpu),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        let (cpu, policy) = (self.cpu, super::policy_of(self.accounts.placement.policy));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(format!("latlab-tl{cpu}"))
            .stack_size(super::USER_THREAD_STACK_BYTES)
            .spawn(move || {
                let set_up = || -> Result<File, String> {
                    affinity::pin_current_thread(cpu).map_err(|e| e.to_string())?;
                    sched::set_current_thread(policy).map_err(|e| e.to_string())?;
                    memory::prefault_stack::<{ super::PREFAULT_BYTES }>();
                    File::open(&path).map_err(|e| format!("open {}: {e}", path.display()))
                };
                let mut fd = match set_up() {
                    Ok(fd) => {
                        let _ = ready_tx.send(Ok(()));
                        fd
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                // Each read returns after the next activation: the workload's loop.
                let mut buffer = [0u8; 1024];
                while !flag.load(Ordering::Relaxed) {
                    if let Err(e) = fd.read(&mut buffer) {
                        if e.kind() != std::io::ErrorKind::Interrupted {
                            return Err(format!("reading {}: {e}", path.display()));
                        }
                    }
                }
                Ok(())
            })
            .map_err(|e| RtError::new("start the timerlat user thread", e))?;
        let started = ready_rx
            .recv()
            .unwrap_or_else(|_| Err("the timerlat user thread ended at once".to_string()));
        if let Err(why) = started {
            let _ = handle.join();
            return Err(RtError::new(
                format!("run latlab's timerlat thread on CPU {cpu}"),
                std::io::Error::other(why),
            ));
        }
        self.user_thread = Some(UserThread { stop, handle });
        Ok(())
    }

    /// Ends latlab's timerlat thread (it sees the stop after its next activation)
    /// and says how it ended; one that does not end within a second is left to end
    /// with the process.
    fn stop_user_thread(&mut self) -> Result<(), RtError> {
        let Some(thread) = self.user_thread.take() else {
            return Ok(());
        };
        thread.stop.store(true, Ordering::Relaxed);
        let until = std::time::Instant::now() + USER_THREAD_ENDS;
        while !thread.handle.is_finished() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if !thread.handle.is_finished() {
            return Err(RtError::new(
                format!("end latlab's timerlat thread on CPU {}", self.cpu),
                std::io::Error::other("its read of timerlat_fd did not return"),
            ));
        }
        match thread.handle.join() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(RtError::new(
                format!("latlab's timerlat thread on CPU {}", self.cpu),
                std::io::Error::other(why),
            )),
            Err(_) => Err(RtError::new(
                "latlab's timerlat thread",
                std::io::Error::other("it panicked"),
            )),
        }
    }

}

/// How long latlab's timerlat thread may take to see a stop: its period, at most 1 s,
/// and then some.
const USER_THREAD_ENDS: std::time::Duration = std::time::Duration::from_millis(1_500);

impl Worker for TimerlatWorker {
    fn rehearse(&mut self, _: &LiveStats, _: &AtomicBool) -> Result<(), RtError> {
        // The tracer runs from now on, its threads at their policy by the start; what
        // it stamps before the window is set-up and left out.
        self.reader.session().start()?;
        if self.user {
            self.start_user_thread()?;
        }
        Ok(())
    }

    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError> {
        // The last activations are stamped up to a period after the window's end.
        let settle = 2 * self.accounts.setup.period.0 + 2 * DRAIN.as_nanos() as i64;
        let accounts = &mut self.accounts;
        let stopped = self.reader.follow(window, stop, settle, Activation::of, |read| {
            accounts.take(&read, window, live)
        });
        self.accounts.measured = Some((*window, stopped));
        let ended = self.stop_user_thread();
        let last = self.reader.close(Activation::of);
        self.accounts.take(&last, window, live);
        ended
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        self.accounts.streams(phase)
    }

    fn finish(mut self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        let _ = self.stop_user_thread();
        (self.accounts.streams(phase), Vec::new())
    }
}

impl Drop for TimerlatWorker {
    fn drop(&mut self) {
        // A worker dropped without measuring (a failed start) still ends its thread
        // before the session (and the tracer it waits on) goes.
        let _ = self.stop_user_thread();
    }
}

#[cfg(test)]
mod tests;

//! `osnoise`: the noise the kernel's osnoise tracer measures (what `rtla osnoise`
//! reads), as the streams of an ordinary Run.
//!
//! The tracer runs a kernel thread per measured CPU that reads the time in a loop for
//! `runtime` of every `period`, with interrupts, softirqs and preemption allowed; a
//! gap between two reads above `threshold` is noise, which it stamps as an
//! `osnoise:sample_threshold` event (its `duration`, ns) — those are the stream's
//! samples, `rtla osnoise hist`'s histogram — and at the end of each period it writes
//! a summary (`ftrace:osnoise`: the noise and runtime of the period, its largest
//! sample, and how many interruptions of each kind: hw, nmi, irq, softirq, thread),
//! which becomes one `noise-summary` event per CPU with the share of CPU time lost.
//! The events are read from a private instance stamped with CLOCK_MONOTONIC: a sample
//! belongs to the window in which its noise ended.

use super::info::{BuildError, Measured, ParamInfo, Policies, ProbeInfo, ProbeSetup};
use super::tracer::{self, Reader, Shared, DRAIN};
use super::{info, Placement, Probe, Site, Window, Worker};
use crate::live::LiveStats;
use crate::notice::Notice;
use crate::record::SampleRecorder;
use latlab_model::run::{Event, Stream};
use latlab_model::units::parse_duration;
use latlab_model::Nanos;
use latlab_rt::tracefs::osnoise::{self, KernelTracer};
use latlab_rt::RtError;
use std::sync::atomic::AtomicBool;

/// The osnoise probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "osnoise",
    summary: "OS noise as the kernel's osnoise tracer measures it (rtla osnoise): each \
              interruption above a threshold, and the share of CPU time lost",
    definition: "The kernel's osnoise tracer (CONFIG_OSNOISE_TRACER; run as root) runs a \
                 kernel thread osnoise/N on each measured CPU, put at the run's policy as \
                 rtla -P does, that reads the time in a loop for `runtime` of every \
                 `period`, interrupts, softirqs and preemption allowed. A sample is a gap \
                 between two of its reads above `threshold` (the tracer's \
                 osnoise:sample_threshold event, rtla osnoise hist's histogram), placed \
                 where the gap ended. One noise-summary event per CPU adds up the \
                 tracer's period summaries: the noise and runtime of the measured span, \
                 its share lost, and the interruptions by kind (hw, nmi, irq, softirq, \
                 thread). --period does not apply (the tracer's is a parameter); the \
                 tracer's settings are restored and its instance removed afterwards; \
                 where the tracer is absent the probe is refused with the reason.",
    params: &[
        ParamInfo {
            key: "period",
            choices: &[],
            default: "1s",
            help: "the tracer's period, whole µs from 100us to 1h (osnoise/period_us)",
        },
        ParamInfo {
            key: "runtime",
            choices: &[],
            default: "900ms",
            help: "how much of each period the thread reads the time, whole µs, at most the \
                   period (osnoise/runtime_us); below 95 % a real-time thread escapes RT \
                   throttling",
        },
        ParamInfo {
            key: "threshold",
            choices: &[],
            default: "5us",
            help: "the shortest gap that is noise, whole µs (tracing_thresh)",
        },
    ],
    honours: &[],
    policies: |_| Policies::Any,
    build,
    plan: None,
};

/// Whole µs of a duration parameter within `range` (µs), or the fix.
fn micros(
    setup: &ProbeSetup,
    key: &'static str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, BuildError> {
    let bad = |fix: String| BuildError::param(INFO.name, key, setup, fix);
    let value = parse_duration(setup.param(key)).map_err(|e| bad(e.to_string()))?;
    if value.0 % 1_000 != 0 || !range.contains(&(value.0 / 1_000)) {
        return Err(bad(format!(
            "give whole µs from {} to {}",
            Nanos(range.start() * 1_000),
            Nanos(range.end() * 1_000)
        )));
    }
    Ok(value.0 / 1_000)
}

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let period_us = micros(setup, "period", 100..=3_600_000_000)?;
    let runtime_us = micros(setup, "runtime", 1..=period_us)?;
    let threshold_us = micros(setup, "threshold", 1..=1_000_000)?;
    osnoise::available(KernelTracer::Osnoise).map_err(|e| BuildError::Unsupported {
        probe: INFO.name,
        why: e.to_string(),
    })?;
    Ok(Box::new(OsnoiseProbe {
        setup: ProbeSetup {
            period: Nanos(period_us * 1_000),
            ..setup.clone()
        },
        runtime_us,
        threshold_us,
        shared: Shared::default(),
    }))
}

struct OsnoiseProbe {
    /// The setup, its period the tracer's.
    setup: ProbeSetup,
    runtime_us: i64,
    threshold_us: i64,
    shared: Shared,
}

impl OsnoiseProbe {
    fn plan(&self) -> tracer::Plan {
        let cpus = self.setup.measured_cpus.clone();
        tracer::Plan {
            tracer: KernelTracer::Osnoise,
            settings: vec![
                ("osnoise/cpus", latlab_model::spec::format_cpu_list(&cpus)),
                ("osnoise/period_us", (self.setup.period.0 / 1_000).to_string()),
                ("osnoise/runtime_us", self.runtime_us.to_string()),
                ("osnoise/stop_tracing_us", "0".to_string()),
                ("osnoise/stop_tracing_total_us", "0".to_string()),
                ("tracing_thresh", self.threshold_us.to_string()),
            ],
            cpus,
            events: vec![("osnoise", "sample_threshold")],
            decoded: vec![("ftrace", "osnoise"), ("osnoise", "sample_threshold")],
            kernel_threads: Some(self.setup.policy),
        }
    }
}

impl Probe for OsnoiseProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn site(&self) -> Site {
        Site::Elsewhere
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        Ok(Box::new(OsnoiseWorker {
            tally: Tally::new(&self.setup, placement, self.threshold_us),
            reader: Reader::open(&self.shared, &self.plan(), placement)?,
        }))
    }

    fn notices(&self) -> Vec<Notice> {
        self.shared.notices(INFO.name)
    }
}

/// What the tracer writes on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// One gap above the threshold, stamped when it ended: its length.
    Noise { ended: i64, duration: i64 },
    /// A period's summary, stamped at its end.
    Period { ended: i64, summary: PeriodSummary },
}

/// One period of the tracer: its noise and runtime (ns, from the tracer's whole µs),
/// largest noise, and the interruptions by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PeriodSummary {
    noise: i64,
    runtime: i64,
    max_sample: i64,
    /// hw, nmi, irq, softirq, thread.
    counts: [u64; 5],
}

/// The kinds of interruption, as the summary counts them.
const KINDS: [&str; 5] = ["hw", "nmi", "irq", "softirq", "thread"];

impl Written {
    fn of(event: &latlab_trace::Event<'_>) -> Option<Written> {
        let ended = event.timestamp as i64;
        match event.name() {
            "sample_threshold" => Some(Written::Noise {
                ended,
                duration: event.integer("duration")?,
            }),
            "osnoise" => {
                let mut counts = [0; 5];
                for (count, kind) in counts.iter_mut().zip(KINDS) {
                    *count = event.integer(&format!("{kind}_count"))? as u64;
                }
                // The summary's times are whole µs (the tracer's time_to_us), the
                // sample's duration ns.
                let ns = |field: &str| event.integer(field).map(|us| us * 1_000);
                Some(Written::Period {
                    ended,
                    summary: PeriodSummary {
                        noise: ns("noise")?,
                        runtime: ns("runtime")?,
                        max_sample: ns("max_sample")?,
                        counts,
                    },
                })
            }
            _ => None,
        }
    }
}

/// A CPU's samples and period summaries in the window.
struct Tally {
    setup: ProbeSetup,
    placement: Placement,
    threshold_us: i64,
    recorder: SampleRecorder,
    warm_up: u64,
    first: Option<i64>,
    /// The summaries of the periods that ended in the measured span, added up.
    periods: u64,
    total: PeriodSummary,
    elapsed: Nanos,
    /// When measuring stopped, once it has.
    stopped: Option<i64>,
}

impl Tally {
    fn new(setup: &ProbeSetup, placement: &Placement, threshold_us: i64) -> Tally {
        Tally {
            recorder: setup.recorder_for(placement),
            setup: setup.clone(),
            placement: placement.clone(),
            threshold_us,
            warm_up: 0,
            first: None,
            periods: 0,
            total: PeriodSummary::default(),
            elapsed: Nanos(0),
            stopped: None,
        }
    }

    fn take(&mut self, written: &[Written], window: &Window, live: &LiveStats) {
        // Once measuring stopped, what ended after it is none of the span's.
        let end = match (window.end, self.stopped) {
            (end, Some(stopped)) => Some(end.map_or(stopped, |end| end.min(stopped))),
            (end, None) => end,
        };
        for &w in written {
            let ended = match w {
                Written::Noise { ended, .. } | Written::Period { ended, .. } => ended,
            };
            if ended <= window.start || end.is_some_and(|end| ended > end) {
                continue;
            }
            let warm_up = ended <= window.warm_up_end;
            match w {
                Written::Noise { .. } if warm_up => {
                    self.warm_up += 1;
                    self.recorder.count_warm_up(1);
                }
                Written::Noise { duration, .. } => {
                    self.first.get_or_insert(duration);
                    self.recorder.record(duration, ended - window.warm_up_end);
                    live.publish(duration, 0);
                }
                Written::Period { .. } if warm_up => {}
                Written::Period { summary, .. } => {
                    self.periods += 1;
                    self.total.noise += summary.noise;
                    self.total.runtime += summary.runtime;
                    self.total.max_sample = self.total.max_sample.max(summary.max_sample);
                    for (sum, count) in self.total.counts.iter_mut().zip(summary.counts) {
                        *sum += count;
                    }
                }
            }
        }
    }

    fn stream(&self, phase: &str) -> Stream {
        let mut stream = info::stream_of(
            Measured {
                info: &INFO,
                setup: &self.setup,
                placement: &self.placement,
                recorder: &self.recorder,
                missed: 0,
                warm_up_samples: self.warm_up,
                first_sample: self.first.map(Nanos),
                elapsed: self.elapsed,
                page_faults: 0,
            },
            phase,
        );
        stream.method = Some("osnoise".to_string());
        // Neither a wake-up's nor latlab's thread's: no periods to miss, and the
        // reader's faults and slack are not the measurement's.
        stream.missed_periods = None;
        stream.overrun_wakes = None;
        stream.early_wakes = None;
        stream.page_faults = None;
        stream.timer_slack_ns = None;
        stream
    }

    /// The noise-summary event: the periods' noise over their runtime.
    fn summary(&self, phase: &str) -> Event {
        let t = &self.total;
        let cpu = self
            .placement
            .cpu
            .map_or_else(|| "?".to_string(), |c| c.to_string());
        let gaps = format!(
            "{} gap(s) above {} µs",
            self.recorder.samples(),
            self.threshold_us
        );
        // A period's counts are written at its end: with none ended in the span,
        // the noise is unknown, not none.
        let (value_ns, message) = match (self.periods, t.runtime) {
            (0, _) => (
                None,
                format!(
                    "cpu {cpu} [{phase}]: no osnoise period ({}) ended in the measured span, \
                     so its noise is unknown; {gaps}. Measure longer than a period, or \
                     shorten it (osnoise:period=)",
                    self.setup.period
                ),
            ),
            (periods, runtime) => {
                let share = match runtime {
                    0 => "no runtime to take a share of".to_string(),
                    runtime => {
                        format!("{:.4} % of it", t.noise as f64 * 100.0 / runtime as f64)
                    }
                };
                let kinds: Vec<String> = KINDS
                    .iter()
                    .zip(t.counts)
                    .map(|(kind, n)| format!("{n} {kind}"))
                    .collect();
                (
                    Some(Nanos(t.noise)),
                    format!(
                        "cpu {cpu} [{phase}]: osnoise counted {} of noise in {} of runtime \
                         over {periods} period(s) ({share}); {gaps}, the longest {}; \
                         interruptions: {}",
                        Nanos(t.noise),
                        Nanos(runtime),
                        Nanos(t.max_sample),
                        kinds.join(", ")
                    ),
                )
            }
        };
        Event {
            kind: "noise-summary".to_string(),
            at_ns: self.elapsed,
            thread: self.placement.thread,
            cpu: self.placement.cpu,
            value_ns,
            message,
        }
    }
}

struct OsnoiseWorker {
    tally: Tally,
    reader: Reader,
}

impl Worker for OsnoiseWorker {
    fn rehearse(&mut self, _: &LiveStats, _: &AtomicBool) -> Result<(), RtError> {
        self.reader.session().start()
    }

    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError> {
        // A period's summary is written at its end.
        let settle = self.tally.setup.period.0.min(2_000_000_000) + 2 * DRAIN.as_nanos() as i64;
        let tally = &mut self.tally;
        let stopped = self.reader.follow(window, stop, settle, Written::of, |read| {
            tally.take(&read, window, live)
        });
        self.tally.elapsed = Nanos((stopped - window.warm_up_end).max(0));
        self.tally.stopped = Some(stopped);
        let last = self.reader.close(Written::of);
        self.tally.take(&last, window, live);
        Ok(())
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        vec![self.tally.stream(phase)]
    }

    fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        (
            vec![self.tally.stream(phase)],
            vec![self.tally.summary(phase)],
        )
    }
}

#[cfg(test)]
mod tests;

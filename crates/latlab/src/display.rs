//! The live display: per-CPU figures while measuring.
//!
//! On a terminal the table is redrawn in place four times a second; otherwise (or on a
//! `TERM=dumb` terminal) one plain line per CPU is printed each second, so logs stay
//! readable. Warnings are coloured as `--color` says. It runs on the
//! coordinating thread, which the runner keeps off the measured CPUs when it can.

use crate::output::Human;
use latlab_measure::live::{LiveSnapshot, LiveStats};
use latlab_measure::notice::Notice;
use latlab_measure::runner::RunRequest;
use latlab_model::explain::Explain;
use latlab_model::spec::format_cpu_list;
use latlab_model::text::{terminal_safe as safe, terminal_safe_lines};
use latlab_model::Nanos;
use latlab_session::sink::{PhaseStart, Sink};
use std::fmt::Write as _;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Redraw,
    Lines,
}

/// The live display: a sink of the run, showing each phase as it measures.
pub struct LiveDisplay {
    human: Human,
    mode: Mode,
    labels: Vec<String>,
    drawn_lines: usize,
    duration: Option<Nanos>,
    banner: String,
}

/// The catalogue `latlab run --explain` ends with: the spikes seen and explained, the
/// largest causes per phase and CPU, the unexplained share, and `latlab explain last`
/// for the rest (`next`: how to read it); emphasised when `human` is coloured. Printed
/// after the run's summary.
pub fn explain_summary(explain: &Explain, next: &str, human: Human) -> String {
    let ansi = crate::terminal::ansi(human);
    latlab_report::report::render_explain_summary(
        explain,
        next,
        ansi,
        latlab_model::width::Width::Unlimited,
    )
}

fn us(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |n| format!("{:.3}", n as f64 / 1e3))
}

impl LiveDisplay {
    /// A display for a run, on `human`; only what degrades it when `quiet`.
    pub fn new(human: Human, quiet: bool) -> LiveDisplay {
        let mode = if quiet {
            Mode::Off
        } else if crate::terminal::redraws(human) {
            Mode::Redraw
        } else {
            Mode::Lines
        };
        LiveDisplay {
            human,
            mode,
            labels: Vec::new(),
            drawn_lines: 0,
            duration: None,
            banner: String::new(),
        }
    }

    /// Sets the display up for a phase measuring `request` (`what`: the phase and its
    /// probe, in words).
    fn begin(&mut self, request: &RunRequest, what: &str) {
        let total = request.duration.map(|d| Nanos(d.0 + request.warm_up.0));
        let banner = format!(
            "latlab: {what}, {} on CPU {} at {}{} — Ctrl-C stops early\n",
            total.map_or("until stopped".to_string(), |d| format!("for {d}")),
            format_cpu_list(&request.cpus),
            request.policy,
            if request.warm_up.0 > 0 {
                format!(", first {} discarded as warm-up", request.warm_up)
            } else {
                String::new()
            }
        );
        // The phase and the probe come from a scenario file, perhaps someone else's.
        self.banner = terminal_safe_lines(&banner).into_owned();
        self.labels = request.cpus.iter().map(|c| c.to_string()).collect();
        self.drawn_lines = 0;
        self.duration = total;
    }
}

impl Sink for LiveDisplay {
    /// Prints the phase's banner (unless quiet). A display nobody can read any more (a
    /// closed pipe, a hung-up terminal) is no reason to lose the measurement: what
    /// cannot be written is dropped, here and below.
    fn phase_begins(&mut self, start: &PhaseStart<'_>) {
        self.begin(&start.phase.request, &start.phase.describe());
        if self.mode != Mode::Off {
            let _ = self.human.write(&self.banner);
        }
    }

    /// Leaves the last table on screen with a blank line after it.
    fn phase_ends(&mut self) {
        if self.mode == Mode::Redraw && self.drawn_lines > 0 {
            let _ = self.human.write("\n");
        }
    }

    /// Says at once what makes the run degraded, so nobody waits a whole run to learn
    /// that its numbers are not real-time numbers (the summary repeats it). Shown even
    /// with `-q`.
    fn ready(&mut self, notices: &[Notice]) {
        let (red, reset) = if crate::terminal::colour(self.human) {
            ("\x1b[1;31m", "\x1b[0m")
        } else {
            ("", "")
        };
        let text: String = notices
            .iter()
            .filter(|n| n.degrades())
            .map(|n| {
                format!(
                    "{red}WARNING{reset} [{}] {}\n",
                    n.code(),
                    safe(&n.to_string())
                )
            })
            .collect();
        let _ = self.human.write(&text);
    }

    fn refresh_every(&self) -> Option<Duration> {
        match self.mode {
            Mode::Redraw => Some(Duration::from_millis(250)),
            Mode::Lines => Some(Duration::from_secs(1)),
            Mode::Off => None,
        }
    }

    fn progress(&mut self, live: &[LiveStats], elapsed: Duration) {
        if self.mode == Mode::Off {
            return;
        }
        let snapshots: Vec<LiveSnapshot> = live.iter().map(LiveStats::snapshot).collect();
        let progress = match self.duration {
            Some(d) => format!("{:.1} s of {:.1} s", elapsed.as_secs_f64(), d.as_secs_f64()),
            None => format!("{:.1} s", elapsed.as_secs_f64()),
        };
        let mut text = String::new();
        match self.mode {
            Mode::Redraw => {
                if self.drawn_lines > 0 {
                    let _ = write!(text, "\x1b[{}A", self.drawn_lines);
                }
                let _ = writeln!(
                    text,
                    "\x1b[2K{:>4} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11} {:>7}   latency in µs, {progress}",
                    "CPU", "samples", "min", "current", "mean", "p99≈", "max", "missed"
                );
                for (label, s) in self.labels.iter().zip(&snapshots) {
                    let _ = writeln!(
                        text,
                        "\x1b[2K{:>4} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11} {:>7}",
                        label,
                        s.samples,
                        us(s.min_ns),
                        us(s.current_ns),
                        us(s.mean_ns.map(|m| m.round() as i64)),
                        us(s.p99_ns),
                        us(s.max_ns),
                        s.missed_periods
                    );
                }
                self.drawn_lines = 1 + snapshots.len();
            }
            Mode::Lines => {
                for (label, s) in self.labels.iter().zip(&snapshots) {
                    let _ = writeln!(
                        text,
                        "[{progress}] cpu {label}: samples {} min {} µs current {} µs mean {} µs \
                         p99≈ {} µs max {} µs missed {}",
                        s.samples,
                        us(s.min_ns),
                        us(s.current_ns),
                        us(s.mean_ns.map(|m| m.round() as i64)),
                        us(s.p99_ns),
                        us(s.max_ns),
                        s.missed_periods
                    );
                }
            }
            Mode::Off => {}
        }
        // A display that cannot be written is not worth stopping a measurement for.
        let _ = self.human.write(&text);
    }
}

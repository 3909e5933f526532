//! The live display: per-CPU figures while measuring.
//!
//! On a terminal the table is redrawn in place four times a second; otherwise (or on a
//! `TERM=dumb` terminal) one plain line per CPU is printed each second, so logs stay
//! readable. Warnings are coloured as `--color` says. It runs on the
//! coordinating thread, which the runner keeps off the measured CPUs when it can.

use crate::output::Human;
use latlab_measure::live::{LiveSnapshot, LiveStats};
use latlab_measure::notice::Notice;
use latlab_measure::runner::{RunObserver, RunRequest};
use latlab_model::explain::Explain;
use latlab_model::spec::format_cpu_list;
use latlab_model::text::{terminal_safe as safe, terminal_safe_lines};
use latlab_model::Nanos;
use std::fmt::Write as _;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Redraw,
    Lines,
}

/// The live display.
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
    latlab_report::report::render_explain_summary(explain, next, ansi)
}

fn us(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |n| format!("{:.3}", n as f64 / 1e3))
}

impl LiveDisplay {
    /// A display for a run.
    pub fn new(human: Human, quiet: bool, request: &RunRequest, what: &str) -> LiveDisplay {
        let mode = if quiet {
            Mode::Off
        } else if crate::terminal::redraws(human) {
            Mode::Redraw
        } else {
            Mode::Lines
        };
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
        let banner = terminal_safe_lines(&banner).into_owned();
        LiveDisplay {
            human,
            mode,
            labels: request.cpus.iter().map(|c| c.to_string()).collect(),
            drawn_lines: 0,
            duration: total,
            banner,
        }
    }

    /// Prints the banner (unless quiet). A banner that cannot be written is dropped,
    /// as every later line of the display is.
    pub fn start(&mut self) {
        if self.mode != Mode::Off {
            let _ = self.human.write(&self.banner);
        }
    }

    /// Leaves the last table on screen with a blank line after it.
    pub fn finish(&mut self) {
        if self.mode == Mode::Redraw && self.drawn_lines > 0 {
            let _ = self.human.write("\n");
        }
    }
}

impl RunObserver for LiveDisplay {
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

    fn refresh_every(&self) -> Duration {
        match self.mode {
            Mode::Redraw => Duration::from_millis(250),
            Mode::Lines => Duration::from_secs(1),
            Mode::Off => Duration::from_secs(3600),
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

//! The live display: per-CPU figures while measuring.
//!
//! On a terminal the table is redrawn in place four times a second; otherwise (or on a
//! `TERM=dumb` terminal) one plain line per CPU is printed each second, so logs stay
//! readable. Both are laid out for the terminal's width (`latlab_session::live_view`),
//! read again at every frame. Warnings are coloured as `--color` says. It runs on the
//! coordinating thread, which the runner keeps off the measured CPUs when it can.

use crate::output::Human;
use latlab_measure::live::{LiveSnapshot, LiveStats};
use latlab_measure::notice::Notice;
use latlab_measure::runner::RunRequest;
use latlab_model::explain::Explain;
use latlab_model::spec::format_cpu_list;
use latlab_model::text::{terminal_safe as safe, terminal_safe_lines};
use latlab_model::{width, Nanos};
use latlab_session::live_view;
use latlab_session::sink::{PhaseStart, Sink};
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
    /// The terminal rows the last frame took, wrapped lines counted: what the next
    /// frame moves the cursor up by.
    drawn_rows: usize,
    duration: Option<Nanos>,
    banner: String,
}

/// The catalogue `latlab run --explain` ends with: the spikes seen and explained, the
/// largest causes per phase and CPU, the unexplained share, and `latlab explain last`
/// for the rest (`next`: how to read it); emphasised when `human` is coloured. Printed
/// after the run's summary.
pub fn explain_summary(explain: &Explain, next: &str, human: Human) -> String {
    let ansi = crate::terminal::ansi(human);
    let width = crate::terminal::width(human);
    latlab_report::report::render_explain_summary(explain, next, ansi, width)
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
            drawn_rows: 0,
            duration: None,
            banner: String::new(),
        }
    }

    /// Sets the display up for a phase measuring `request` (`what`: the phase and its
    /// probe, in words).
    fn begin(&mut self, request: &RunRequest, what: &str) {
        let total = request.duration.map(|d| Nanos(d.0 + request.warm_up.0));
        let banner = format!(
            "latlab: {what}, {} on CPU {} at {}{} — Ctrl-C stops early",
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
        let banner = terminal_safe_lines(&banner);
        self.banner = crate::terminal::width(self.human).wrap(&banner, "", "    ") + "\n";
        self.labels = request.cpus.iter().map(|c| c.to_string()).collect();
        self.drawn_rows = 0;
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
        if self.mode == Mode::Redraw && self.drawn_rows > 0 {
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
        let width = crate::terminal::width(self.human);
        let text: String = notices
            .iter()
            .filter(|n| n.degrades())
            .map(|n| {
                let warning = format!(
                    "{red}WARNING{reset} [{}] {}",
                    n.code(),
                    safe(&n.to_string())
                );
                width.wrap(&warning, "", "  ") + "\n"
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
        let width = crate::terminal::width(self.human);
        let text = match self.mode {
            Mode::Redraw => {
                let frame = live_view::frame(&self.labels, &snapshots, &progress, width);
                // Up over the last frame, to its first column, and clear what is below.
                let up = match self.drawn_rows {
                    0 => String::new(),
                    rows => format!("\x1b[{rows}A\r\x1b[J"),
                };
                // Counted on the screen's width, also with --format wide: a line wider
                // than the terminal takes more rows.
                let screen = crate::terminal::screen(self.human).or(usize::MAX);
                self.drawn_rows = width::rows(&frame, screen);
                up + &frame
            }
            Mode::Lines => live_view::lines(&self.labels, &snapshots, &progress, width),
            Mode::Off => String::new(),
        };
        // A display that cannot be written is not worth stopping a measurement for.
        let _ = self.human.write(&text);
    }
}

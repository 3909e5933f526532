//! What a Run's outcome means to a script: latlab's exit status, which other formats
//! carry too (cyclictest's `return_code`, JUnit's failures and errors, the verdict word
//! of every view), decided here once so that `latlab run`, `show`, `report`, `compare`,
//! `serve` and every export agree.
//!
//! A threshold judges figures; the outcome also judges whether the figures are the ones
//! asked for. A run that measured less than asked (stopped before its duration, died,
//! still running) is INCOMPLETE, and one measured under degraded conditions (no
//! real-time priority, memory not locked, ...) is UNTRUSTED: neither is a pass, whatever
//! its thresholds say, unless the run was told to accept it (`--accept`).

use crate::run::Run;
pub use crate::run::Shortfall;
use crate::seal::WarningCode;
use crate::threshold::Status;

/// The exit status of a Run, as docs/measuring.md's exit codes define it: the outcome
/// every view and export shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// `0`: measured as asked, and every threshold held.
    Passed,
    /// `0`: measured as asked; no threshold was set.
    NoThresholds,
    /// `1`: a threshold failed (or a stream had no samples to judge).
    ThresholdFailed,
    /// `2`: a threshold cannot be judged on what was measured (a figure the source
    /// lacked, a percentile known only as a bound below the limit).
    Undecided,
    /// `3`: measuring failed part-way; the figures cover what was measured until then.
    CouldNotMeasure,
    /// `4`: it measured less than it was asked (stopped before its duration, died, or
    /// still running), and was not told to accept that.
    Incomplete,
    /// `5`: it measured under degraded conditions, and was not told to accept that.
    Untrusted,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Passed | ExitStatus::NoThresholds => 0,
            ExitStatus::ThresholdFailed => 1,
            ExitStatus::Undecided => 2,
            ExitStatus::CouldNotMeasure => 3,
            ExitStatus::Incomplete => 4,
            ExitStatus::Untrusted => 5,
        }
    }

    /// The word a verdict is shown with.
    pub fn word(self) -> &'static str {
        match self {
            ExitStatus::Passed => "PASS",
            ExitStatus::NoThresholds => "NO THRESHOLDS",
            ExitStatus::ThresholdFailed => "FAIL",
            ExitStatus::Undecided => "UNDECIDED",
            ExitStatus::CouldNotMeasure => "MEASURING FAILED",
            ExitStatus::Incomplete => "INCOMPLETE",
            ExitStatus::Untrusted => "UNTRUSTED",
        }
    }

    /// What it means, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            ExitStatus::Passed => "passed",
            ExitStatus::NoThresholds => "measured; no threshold was set",
            ExitStatus::ThresholdFailed => "a threshold failed",
            ExitStatus::Undecided => "a threshold cannot be judged",
            ExitStatus::CouldNotMeasure => "measuring failed part-way",
            ExitStatus::Incomplete => "measured less than asked",
            ExitStatus::Untrusted => "measured under degraded conditions",
        }
    }

    /// Whether a gate lets it through (exit code 0).
    pub fn passes(self) -> bool {
        self.code() == 0
    }
}

impl Run {
    /// The exit status `latlab run` gave (or gives) this Run. Precedence: a failure to
    /// measure, then a failed threshold (a spike measured is real even in a short or
    /// degraded run), then a run that measured less than asked, then one measured under
    /// degraded conditions (each unless accepted), then an undecided verdict.
    pub fn exit_status(&self) -> ExitStatus {
        if self.measuring_failed() {
            return ExitStatus::CouldNotMeasure;
        }
        if self.verdict.status == Status::Fail {
            return ExitStatus::ThresholdFailed;
        }
        if self.incomplete_because().is_some() && !self.accepts(Shortfall::Incomplete) {
            return ExitStatus::Incomplete;
        }
        if self.untrusted_because().is_some() && !self.accepts(Shortfall::Untrusted) {
            return ExitStatus::Untrusted;
        }
        match self.verdict.status {
            Status::Undecided => ExitStatus::Undecided,
            Status::Pass => ExitStatus::Passed,
            Status::None | Status::Fail => ExitStatus::NoThresholds,
        }
    }

    /// Whether `--accept` let `shortfall` through.
    pub fn accepts(&self, shortfall: Shortfall) -> bool {
        self.accepted.contains(&shortfall)
    }

    /// Whether a measuring thread failed part-way.
    pub fn measuring_failed(&self) -> bool {
        self.warnings
            .iter()
            .any(|w| w.is(WarningCode::MeasuringFailed))
    }

    /// Why the run measured less than it was asked, if it did: it is still running or
    /// died (its figures are its last checkpoint's), or it was stopped before the
    /// duration it was given. A run given no duration ends when it is stopped, and a
    /// run its break trace ended stopped where it was asked to: neither fell short.
    pub fn incomplete_because(&self) -> Option<String> {
        if let Some(progress) = &self.progress {
            return Some(match progress.state {
                crate::progress::RunState::Running => {
                    "still running: the figures are those of its last checkpoint".to_string()
                }
                crate::progress::RunState::Died => {
                    "died before its end: the figures are those of its last checkpoint".to_string()
                }
            });
        }
        let broke = self.events.iter().any(|e| e.kind == "breaktrace");
        if !self.interrupted || broke {
            return None;
        }
        // Runs written before phases were planned give one duration for each phase.
        let asked: Option<i64> = match self.plan.phases.is_empty() {
            true => self
                .plan
                .duration_ns
                .map(|d| d.0 * self.phases.len().max(1) as i64),
            false => self
                .plan
                .phases
                .iter()
                .map(|p| p.duration_ns.map(|d| d.0))
                .sum(),
        };
        let asked = asked.filter(|&a| a > 0)?;
        // The span measured, when every phase (or stream) says it: never a stand-in 0.
        let measured: Option<i64> = match self.phases.is_empty() {
            true => self
                .streams
                .iter()
                .map(|s| s.elapsed_ns.map(|e| e.0))
                .collect::<Option<Vec<_>>>()
                .and_then(|e| e.into_iter().max()),
            false => self.phases.iter().map(|p| p.elapsed_ns.map(|e| e.0)).sum(),
        };
        Some(match measured {
            Some(m) => format!(
                "stopped before its end: {} measured of the {} asked",
                crate::Nanos(m),
                crate::Nanos(asked)
            ),
            None => format!(
                "stopped before its end, of the {} asked (the span measured is not known)",
                crate::Nanos(asked)
            ),
        })
    }

    /// Why the run's figures are not the machine's real-time behaviour, if they are
    /// not: the codes of the warnings that degraded it.
    pub fn untrusted_because(&self) -> Option<String> {
        if !self.degraded {
            return None;
        }
        let mut codes: Vec<&str> = self
            .warnings
            .iter()
            .filter(|w| w.degrades)
            .map(|w| w.code.as_str())
            .collect();
        codes.dedup();
        Some(match codes.is_empty() {
            true => "measured under degraded conditions".to_string(),
            false => format!("measured under degraded conditions ({})", codes.join(", ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::progress::RunState;
    use crate::run::Warning;
    use crate::threshold::Verdict;
    use crate::Nanos;

    /// The fixture with its thresholds met (none exceeded), complete and trusted.
    fn passing() -> Run {
        let mut run = fixture::run();
        run.thresholds = vec![crate::threshold::Threshold::parse("max=1h").unwrap()];
        run.verdict = Verdict::judge(&run.thresholds, &run.streams);
        run.warnings.clear();
        run.degraded = false;
        run.interrupted = false;
        run
    }

    #[test]
    fn the_verdict_decides_unless_measuring_failed() {
        let mut run = fixture::run();
        assert_eq!(run.exit_status(), ExitStatus::ThresholdFailed);
        run.verdict.status = Status::Undecided;
        assert_eq!(run.exit_status().code(), 2);
        run.verdict.status = Status::None;
        assert_eq!(run.exit_status(), ExitStatus::NoThresholds);
        assert_eq!(run.exit_status().code(), 0);
        run.warnings.push(Warning::new(
            WarningCode::MeasuringFailed,
            "measuring on CPU 1 failed",
        ));
        assert_eq!(run.exit_status(), ExitStatus::CouldNotMeasure);
        assert_eq!(run.exit_status().code(), 3);
    }

    #[test]
    fn a_degraded_run_is_untrusted_unless_accepted() {
        let mut run = passing();
        assert_eq!(run.exit_status(), ExitStatus::Passed);
        run.warnings
            .push(Warning::new(WarningCode::NotRealtime, "no SCHED_FIFO"));
        run.seal();
        assert!(run.degraded);
        assert_eq!(run.exit_status(), ExitStatus::Untrusted);
        assert_eq!(run.exit_status().code(), 5);
        assert!(run.untrusted_because().unwrap().contains("not-realtime"));
        run.accepted = vec![Shortfall::Untrusted];
        assert_eq!(run.exit_status(), ExitStatus::Passed);
        // Without thresholds too: a degraded run says nothing of the machine.
        run.accepted.clear();
        run.thresholds.clear();
        run.seal();
        assert_eq!(run.exit_status(), ExitStatus::Untrusted);
    }

    #[test]
    fn a_run_stopped_before_its_duration_is_incomplete_unless_accepted() {
        let mut run = passing();
        let asked = run.plan.duration_ns.expect("the fixture asks a duration");
        run.interrupted = true;
        for s in &mut run.streams {
            s.elapsed_ns = Some(Nanos(asked.0 / 4));
        }
        assert_eq!(run.exit_status(), ExitStatus::Incomplete);
        assert_eq!(run.exit_status().code(), 4);
        assert!(run
            .incomplete_because()
            .unwrap()
            .contains("measured of the"));
        run.accepted = vec![Shortfall::Incomplete];
        assert_eq!(run.exit_status(), ExitStatus::Passed);
        // A span nobody knows is said so, not shown as 0.
        let mut unknown = run.clone();
        unknown.streams[0].elapsed_ns = None;
        let why = unknown.incomplete_because().unwrap();
        assert!(why.contains("not known") && !why.contains("0 ns"), "{why}");
        // Incomplete outranks untrusted; a failed threshold outranks both.
        run.accepted.clear();
        run.degraded = true;
        assert_eq!(run.exit_status(), ExitStatus::Incomplete);
        run.accepted = vec![Shortfall::Incomplete];
        assert_eq!(run.exit_status(), ExitStatus::Untrusted);
        run.verdict.status = Status::Fail;
        assert_eq!(run.exit_status(), ExitStatus::ThresholdFailed);
    }

    #[test]
    fn a_run_until_stopped_or_ended_by_its_break_trace_is_complete() {
        let mut run = passing();
        run.interrupted = true;
        run.plan.duration_ns = None;
        assert_eq!(
            run.exit_status(),
            ExitStatus::Passed,
            "-d 0 ends when stopped"
        );
        let mut run = passing();
        run.interrupted = true;
        run.events.push(crate::run::Event {
            kind: "breaktrace".to_string(),
            at_ns: Nanos(1_000),
            thread: 0,
            cpu: Some(1),
            value_ns: Some(Nanos(500_000)),
            message: "break trace".to_string(),
        });
        assert_eq!(run.exit_status(), ExitStatus::Passed);
    }

    #[test]
    fn a_running_or_died_run_is_incomplete() {
        for state in [RunState::Running, RunState::Died] {
            let mut run = passing();
            run.progress = Some(crate::fixture::progress(state));
            assert_eq!(run.exit_status(), ExitStatus::Incomplete, "{state:?}");
            assert!(run.incomplete_because().unwrap().contains(state.name()));
        }
    }

    #[test]
    fn accept_lists_parse_and_name_what_they_refuse() {
        assert_eq!(
            Shortfall::parse_list("untrusted,incomplete,untrusted").unwrap(),
            [Shortfall::Incomplete, Shortfall::Untrusted]
        );
        assert!(Shortfall::parse_list("degraded")
            .unwrap_err()
            .contains("incomplete, untrusted"));
    }
}

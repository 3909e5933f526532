//! What a Run's outcome means to a script: latlab's exit status, which other formats
//! carry too (cyclictest's `return_code`, JUnit's failures and errors), decided here
//! once so that `latlab run` and every export agree.

use crate::run::Run;
use crate::seal::WarningCode;
use crate::threshold::Status;

/// The exit status of a Run, as docs/measuring.md's exit codes define it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// `0`: measured, and every threshold held (or none was set).
    Passed,
    /// `1`: a threshold failed (or a stream had no samples to judge).
    ThresholdFailed,
    /// `2`: a threshold cannot be judged on what was measured (a figure the source
    /// lacked, a percentile known only as a bound below the limit).
    Undecided,
    /// `3`: measuring failed part-way; the figures cover what was measured until then.
    CouldNotMeasure,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Passed => 0,
            ExitStatus::ThresholdFailed => 1,
            ExitStatus::Undecided => 2,
            ExitStatus::CouldNotMeasure => 3,
        }
    }

    /// What it means, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            ExitStatus::Passed => "passed",
            ExitStatus::ThresholdFailed => "a threshold failed",
            ExitStatus::Undecided => "a threshold cannot be judged",
            ExitStatus::CouldNotMeasure => "measuring failed part-way",
        }
    }
}

impl Run {
    /// The exit status `latlab run` gave (or gives) this Run: a failure to measure
    /// outranks the verdict.
    pub fn exit_status(&self) -> ExitStatus {
        if self.measuring_failed() {
            return ExitStatus::CouldNotMeasure;
        }
        match self.verdict.status {
            Status::Fail => ExitStatus::ThresholdFailed,
            Status::Undecided => ExitStatus::Undecided,
            Status::Pass | Status::None => ExitStatus::Passed,
        }
    }

    /// Whether a measuring thread failed part-way.
    pub fn measuring_failed(&self) -> bool {
        self.warnings
            .iter()
            .any(|w| w.is(WarningCode::MeasuringFailed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::run::Warning;

    #[test]
    fn the_verdict_decides_unless_measuring_failed() {
        let mut run = fixture::run();
        assert_eq!(run.exit_status(), ExitStatus::ThresholdFailed);
        run.verdict.status = Status::Undecided;
        assert_eq!(run.exit_status().code(), 2);
        run.verdict.status = Status::None;
        assert_eq!(run.exit_status(), ExitStatus::Passed);
        run.warnings.push(Warning::new(
            WarningCode::MeasuringFailed,
            "measuring on CPU 1 failed",
        ));
        assert_eq!(run.exit_status(), ExitStatus::CouldNotMeasure);
        assert_eq!(run.exit_status().code(), 3);
    }
}

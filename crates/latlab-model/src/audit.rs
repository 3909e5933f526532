//! The readiness audit: what `latlab check` judged about the machine's configuration,
//! check by check, with the evidence read and the fix.
//!
//! Most bad latency results come from configuration, not from the kernel: the wrong
//! preemption model, RT throttling, a powersave governor, deep idle states, interrupts
//! on the measured CPU. Each [`CheckResult`] says what was found, why that verdict, the
//! files it read (so a reader can verify) and what to do. A check that could not read
//! what it needs says [`CheckVerdict::Unknown`] with the reason: never `ok` by default.
//!
//! Every `latlab run` stores the audit of its CPUs in the Run (`audit`), so a result
//! can be read together with the configuration it was measured under.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One audit of a machine, judged for a set of CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    /// The CPUs the checks were judged for (the CPUs the task runs on).
    pub cpus: Vec<usize>,
    /// The real-time priority the task was assumed to run at (threads at or above it
    /// on the same CPUs can delay it).
    pub priority: u8,
    /// Every check, in the order they ran.
    pub checks: Vec<CheckResult>,
}

impl Audit {
    /// The check with this id, if it ran.
    pub fn check(&self, id: &str) -> Option<&CheckResult> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// How many checks gave `verdict`.
    pub fn count(&self, verdict: CheckVerdict) -> usize {
        self.checks.iter().filter(|c| c.verdict == verdict).count()
    }

    /// True when any check failed.
    pub fn failed(&self) -> bool {
        self.count(CheckVerdict::Fail) > 0
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// Stable identifier (`preemption`, `rt-throttling`, ...).
    pub id: String,
    /// What is checked, for people (`Preemption model`).
    pub title: String,
    /// The judgement.
    pub verdict: CheckVerdict,
    /// What was found, in one short line (`RT throttling is on: 0.95 s of every
    /// 1.00 s`); for `unknown`, why it could not be judged.
    pub finding: String,
    /// Why that earns the verdict: what it does to a real-time task.
    pub explanation: Option<String>,
    /// What was read: each file (or command-line parameter) and its value.
    pub evidence: Vec<Evidence>,
    /// What to do: the command or boot parameter, and what it costs. `None` when
    /// nothing needs doing.
    pub fix: Option<String>,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckVerdict {
    /// Configured for real-time work.
    Ok,
    /// Worth knowing, not judged good or bad (it depends on the task).
    Info,
    /// Could not be judged: what it needs could not be read (the reason is in the
    /// finding).
    Unknown,
    /// Likely to add latency or jitter; fix it unless there is a reason not to.
    Warn,
    /// Rules out bounded low latency as configured.
    Fail,
}

impl CheckVerdict {
    /// Every verdict, from best to worst.
    pub const ALL: [CheckVerdict; 5] = [
        CheckVerdict::Ok,
        CheckVerdict::Info,
        CheckVerdict::Unknown,
        CheckVerdict::Warn,
        CheckVerdict::Fail,
    ];

    /// The lower-case name (`ok`, `warn`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckVerdict::Ok => "ok",
            CheckVerdict::Info => "info",
            CheckVerdict::Unknown => "unknown",
            CheckVerdict::Warn => "warn",
            CheckVerdict::Fail => "fail",
        }
    }
}

impl fmt::Display for CheckVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a check read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The file read (`/proc/sys/kernel/sched_rt_runtime_us`), or where a value came
    /// from (`/proc/cmdline isolcpus=`).
    pub source: String,
    /// The value found, or `unreadable: REASON`.
    pub value: String,
}

impl Evidence {
    /// Evidence from `source` with `value`.
    pub fn new(source: impl Into<String>, value: impl Into<String>) -> Evidence {
        Evidence {
            source: source.into(),
            value: value.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, verdict: CheckVerdict) -> CheckResult {
        CheckResult {
            id: id.to_string(),
            title: id.to_string(),
            verdict,
            finding: String::new(),
            explanation: None,
            evidence: vec![Evidence::new("/proc/x", "1")],
            fix: None,
        }
    }

    #[test]
    fn verdicts_are_lower_case_in_json_and_ordered_by_severity() {
        assert_eq!(
            serde_json::to_string(&CheckVerdict::Unknown).unwrap(),
            "\"unknown\""
        );
        assert!(CheckVerdict::Fail > CheckVerdict::Warn);
        assert!(CheckVerdict::Warn > CheckVerdict::Ok);
        assert_eq!(CheckVerdict::Info.to_string(), "info");
    }

    #[test]
    fn counts_and_lookups() {
        let audit = Audit {
            cpus: vec![1],
            priority: 95,
            checks: vec![
                result("a", CheckVerdict::Ok),
                result("b", CheckVerdict::Fail),
            ],
        };
        assert!(audit.failed());
        assert_eq!(audit.count(CheckVerdict::Ok), 1);
        assert_eq!(
            audit.check("b").map(|c| c.verdict),
            Some(CheckVerdict::Fail)
        );
        let json = serde_json::to_string(&audit).unwrap();
        assert_eq!(serde_json::from_str::<Audit>(&json).unwrap(), audit);
    }
}

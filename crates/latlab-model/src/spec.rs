//! Values users type: CPU lists, scheduling policies, sleep methods, clocks.
//!
//! Each parser returns an error that says what was wrong and what to write instead;
//! the caller adds which flag or scenario field the text came from.

use crate::units::{parse_duration, Nanos};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A parse failure: the message names the problem and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(msg.into()))
}

/// A set of CPUs, ascending and without duplicates: `0-3,5`, or `all`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuSelection {
    /// Every online CPU the process may use, isolated ones included.
    All,
    /// An explicit list.
    List(Vec<usize>),
}

impl CpuSelection {
    /// Parses `all`, `3`, `0-3,5`, `0,2-3`.
    pub fn parse(text: &str) -> Result<CpuSelection, SpecError> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("all") {
            return Ok(CpuSelection::All);
        }
        if t.is_empty() {
            return err("empty CPU list: write e.g. 0, 0-3 or 1,3");
        }
        let mut cpus = Vec::new();
        for part in t.split(',') {
            let part = part.trim();
            let number = |s: &str| -> Result<usize, SpecError> {
                s.trim().parse::<usize>().map_err(|_| {
                    SpecError(format!(
                        "'{s}' in CPU list '{t}' is not a CPU number: write e.g. 0, 0-3 or 1,3"
                    ))
                })
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (number(a)?, number(b)?);
                    if a > b {
                        return err(format!("CPU range '{part}' runs backwards: write {b}-{a}"));
                    }
                    if b >= 8192 {
                        return err(format!("CPU {b} is beyond any machine (at most 8191)"));
                    }
                    cpus.extend(a..=b);
                }
                None => {
                    let n = number(part)?;
                    if n >= 8192 {
                        return err(format!("CPU {n} is beyond any machine (at most 8191)"));
                    }
                    cpus.push(n);
                }
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSelection::List(cpus))
    }
}

/// Formats CPUs as a compact list, e.g. `0-3,5`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// A scheduling policy as users write it: `f:95`, `fifo:95`, `r:50`, `o:0`, `batch`,
/// `idle`, `d:100us:1ms` (runtime:period) or `d:100us:500us:1ms` (runtime:deadline:period).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "lowercase")]
pub enum SchedSpec {
    /// `SCHED_OTHER` with a nice value.
    Other {
        /// Nice value, -20 … 19.
        nice: i32,
    },
    /// `SCHED_BATCH` with a nice value.
    Batch {
        /// Nice value, -20 … 19.
        nice: i32,
    },
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_FIFO`.
    Fifo {
        /// Priority, 1 … 99.
        priority: i32,
    },
    /// `SCHED_RR`.
    Rr {
        /// Priority, 1 … 99.
        priority: i32,
    },
    /// `SCHED_DEADLINE`.
    Deadline {
        /// Budget per period.
        runtime_ns: Nanos,
        /// Relative deadline.
        deadline_ns: Nanos,
        /// Period.
        period_ns: Nanos,
    },
}

impl SchedSpec {
    /// The default of the timer probe: `fifo:95`.
    pub const DEFAULT: SchedSpec = SchedSpec::Fifo { priority: 95 };

    /// Parses the `-P/--priority` syntax.
    pub fn parse(text: &str) -> Result<SchedSpec, SpecError> {
        let t = text.trim();
        let mut parts = t.split(':');
        let kind = parts.next().unwrap_or("").to_ascii_lowercase();
        let rest: Vec<&str> = parts.collect();
        let usage = "write f:95, r:50, o:0, b:0, i, or d:RUNTIME:PERIOD (e.g. d:100us:1ms)";
        let int = |s: &str, what: &str| -> Result<i32, SpecError> {
            s.trim()
                .parse::<i32>()
                .map_err(|_| SpecError(format!("'{s}' is not a {what} in '{t}': {usage}")))
        };
        let rt_priority = |rest: &[&str]| -> Result<i32, SpecError> {
            let p = match rest {
                [p] => int(p, "priority")?,
                _ => return err(format!("'{t}' needs a priority: {usage}")),
            };
            if !(1..=99).contains(&p) {
                return err(format!(
                    "priority {p} in '{t}' is out of range: real-time priorities are 1 to 99"
                ));
            }
            Ok(p)
        };
        let nice = |rest: &[&str]| -> Result<i32, SpecError> {
            let n = match rest {
                [] => 0,
                [n] => int(n, "nice value")?,
                _ => return err(format!("'{t}' has too many fields: {usage}")),
            };
            if !(-20..=19).contains(&n) {
                return err(format!(
                    "nice value {n} in '{t}' is out of range: nice values are -20 to 19"
                ));
            }
            Ok(n)
        };
        match kind.as_str() {
            "f" | "fifo" => Ok(SchedSpec::Fifo {
                priority: rt_priority(&rest)?,
            }),
            "r" | "rr" => Ok(SchedSpec::Rr {
                priority: rt_priority(&rest)?,
            }),
            "o" | "other" | "normal" => Ok(SchedSpec::Other { nice: nice(&rest)? }),
            "b" | "batch" => Ok(SchedSpec::Batch { nice: nice(&rest)? }),
            "i" | "idle" if rest.is_empty() || rest == ["0"] => Ok(SchedSpec::Idle),
            "d" | "deadline" => {
                let dur = |s: &str, what: &str| {
                    parse_duration(s)
                        .map_err(|e| SpecError(format!("deadline {what} in '{t}': {e}")))
                };
                let (runtime, deadline, period) = match rest.as_slice() {
                    [r, p] => {
                        let p = dur(p, "period")?;
                        (dur(r, "runtime")?, p, p)
                    }
                    [r, d, p] => (dur(r, "runtime")?, dur(d, "deadline")?, dur(p, "period")?),
                    _ => return err(format!("'{t}': {usage}")),
                };
                if runtime.0 < 1024 {
                    return err(format!(
                        "deadline runtime {runtime} in '{t}' is below the kernel's minimum of 1024 ns"
                    ));
                }
                if !(runtime <= deadline && deadline <= period) {
                    return err(format!(
                        "'{t}': SCHED_DEADLINE needs runtime <= deadline <= period \
                         (got {runtime}, {deadline}, {period})"
                    ));
                }
                Ok(SchedSpec::Deadline {
                    runtime_ns: runtime,
                    deadline_ns: deadline,
                    period_ns: period,
                })
            }
            _ => err(format!("unknown scheduling policy '{t}': {usage}")),
        }
    }

    /// True for fifo, rr and deadline.
    pub fn is_realtime(&self) -> bool {
        matches!(
            self,
            SchedSpec::Fifo { .. } | SchedSpec::Rr { .. } | SchedSpec::Deadline { .. }
        )
    }
}

impl fmt::Display for SchedSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedSpec::Other { nice } => write!(f, "other:{nice}"),
            SchedSpec::Batch { nice } => write!(f, "batch:{nice}"),
            SchedSpec::Idle => f.write_str("idle"),
            SchedSpec::Fifo { priority } => write!(f, "fifo:{priority}"),
            SchedSpec::Rr { priority } => write!(f, "rr:{priority}"),
            SchedSpec::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => write!(
                f,
                "deadline:{}:{}:{}",
                compact(*runtime_ns),
                compact(*deadline_ns),
                compact(*period_ns)
            ),
        }
    }
}

fn compact(n: Nanos) -> String {
    n.to_string().replace(' ', "")
}

/// The timer probe's sleep methods (see the probe's documentation for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimerMethod {
    /// Absolute `clock_nanosleep`.
    Abs,
    /// Relative `clock_nanosleep` (Wilshire).
    Rel,
    /// Periodic timerfd.
    Timerfd,
    /// Periodic POSIX timer with a thread-directed signal.
    PosixTimer,
    /// Busy-wait.
    Spin,
    /// Sleep, then busy-wait the last margin.
    Hybrid,
}

impl TimerMethod {
    /// All methods.
    pub const ALL: [TimerMethod; 6] = [
        TimerMethod::Abs,
        TimerMethod::Rel,
        TimerMethod::Timerfd,
        TimerMethod::PosixTimer,
        TimerMethod::Spin,
        TimerMethod::Hybrid,
    ];

    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            TimerMethod::Abs => "abs",
            TimerMethod::Rel => "rel",
            TimerMethod::Timerfd => "timerfd",
            TimerMethod::PosixTimer => "posix-timer",
            TimerMethod::Spin => "spin",
            TimerMethod::Hybrid => "hybrid",
        }
    }

    /// True for `rel`: deadlines follow the previous wake and drift.
    pub fn is_relative(self) -> bool {
        self == TimerMethod::Rel
    }

    /// One line on what the method does.
    pub fn describe(self) -> &'static str {
        match self {
            TimerMethod::Abs => "clock_nanosleep to an absolute deadline (cyclictest default)",
            TimerMethod::Rel => "relative nanosleep of one period; deadlines drift (Wilshire test)",
            TimerMethod::Timerfd => "periodic timerfd, woken by read()",
            TimerMethod::PosixTimer => "periodic POSIX timer signalling the thread, sigwaitinfo()",
            TimerMethod::Spin => "busy-wait on the clock: the floor software can see",
            TimerMethod::Hybrid => "sleep to deadline minus a margin, then busy-wait",
        }
    }

    /// Parses a method name.
    pub fn parse(text: &str) -> Result<TimerMethod, SpecError> {
        let t = text.trim().to_ascii_lowercase();
        TimerMethod::ALL
            .into_iter()
            .find(|m| m.name() == t || (t == "posix" && *m == TimerMethod::PosixTimer))
            .ok_or_else(|| {
                SpecError(format!(
                    "unknown method '{text}': choose one of {}",
                    TimerMethod::ALL.map(|m| m.name()).join(", ")
                ))
            })
    }
}

impl fmt::Display for TimerMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The clock a probe reads and sleeps on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockName {
    /// `CLOCK_MONOTONIC` (default).
    Monotonic,
    /// `CLOCK_REALTIME`.
    Realtime,
    /// `CLOCK_BOOTTIME`.
    Boottime,
    /// `CLOCK_TAI`.
    Tai,
}

impl ClockName {
    /// Parses a clock name (`monotonic`, `realtime`, `boottime`, `tai`; cyclictest's
    /// `0` and `1` too).
    pub fn parse(text: &str) -> Result<ClockName, SpecError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "monotonic" | "0" => Ok(ClockName::Monotonic),
            "realtime" | "1" => Ok(ClockName::Realtime),
            "boottime" => Ok(ClockName::Boottime),
            "tai" => Ok(ClockName::Tai),
            _ => err(format!(
                "unknown clock '{text}': choose monotonic, realtime, boottime or tai"
            )),
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ClockName::Monotonic => "monotonic",
            ClockName::Realtime => "realtime",
            ClockName::Boottime => "boottime",
            ClockName::Tai => "tai",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(CpuSelection::parse("all"), Ok(CpuSelection::All));
        assert_eq!(
            CpuSelection::parse("3,0-1,1"),
            Ok(CpuSelection::List(vec![0, 1, 3]))
        );
        assert!(CpuSelection::parse("3-1")
            .unwrap_err()
            .0
            .contains("backwards"));
        assert!(CpuSelection::parse("x")
            .unwrap_err()
            .0
            .contains("not a CPU number"));
        assert!(CpuSelection::parse("").is_err());
        assert!(CpuSelection::parse("9000").is_err());
        assert_eq!(
            CpuSelection::parse("7,0-1"),
            Ok(CpuSelection::List(vec![0, 1, 7]))
        );
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
    }

    #[test]
    fn policies() {
        assert_eq!(
            SchedSpec::parse("f:95"),
            Ok(SchedSpec::Fifo { priority: 95 })
        );
        assert_eq!(
            SchedSpec::parse("fifo:1"),
            Ok(SchedSpec::Fifo { priority: 1 })
        );
        assert_eq!(SchedSpec::parse("r:50"), Ok(SchedSpec::Rr { priority: 50 }));
        assert_eq!(SchedSpec::parse("o:0"), Ok(SchedSpec::Other { nice: 0 }));
        assert_eq!(SchedSpec::parse("other"), Ok(SchedSpec::Other { nice: 0 }));
        assert_eq!(SchedSpec::parse("b:-5"), Ok(SchedSpec::Batch { nice: -5 }));
        assert_eq!(SchedSpec::parse("idle"), Ok(SchedSpec::Idle));
        assert_eq!(
            SchedSpec::parse("d:100us:1ms"),
            Ok(SchedSpec::Deadline {
                runtime_ns: Nanos(100_000),
                deadline_ns: Nanos(1_000_000),
                period_ns: Nanos(1_000_000)
            })
        );
        assert!(SchedSpec::parse("f:0").unwrap_err().0.contains("1 to 99"));
        assert!(SchedSpec::parse("f:100").unwrap_err().0.contains("1 to 99"));
        assert!(SchedSpec::parse("f")
            .unwrap_err()
            .0
            .contains("needs a priority"));
        assert!(SchedSpec::parse("o:30")
            .unwrap_err()
            .0
            .contains("-20 to 19"));
        assert!(SchedSpec::parse("x:1").unwrap_err().0.contains("unknown"));
        assert!(SchedSpec::parse("d:2ms:1ms")
            .unwrap_err()
            .0
            .contains("runtime <="));
        assert!(SchedSpec::parse("d:100ns:1ms")
            .unwrap_err()
            .0
            .contains("1024"));
        assert!(SchedSpec::parse("d:100:1ms")
            .unwrap_err()
            .0
            .contains("no unit"));
    }

    #[test]
    fn policy_round_trips_through_display() {
        for text in [
            "fifo:95",
            "rr:3",
            "other:0",
            "batch:-2",
            "idle",
            "deadline:100µs:1ms:1ms",
        ] {
            let spec = SchedSpec::parse(text).unwrap();
            assert_eq!(SchedSpec::parse(&spec.to_string()), Ok(spec), "{text}");
        }
    }

    #[test]
    fn methods_and_clocks() {
        for m in TimerMethod::ALL {
            assert_eq!(TimerMethod::parse(m.name()), Ok(m));
        }
        assert!(TimerMethod::parse("sleepy")
            .unwrap_err()
            .0
            .contains("abs, rel"));
        assert_eq!(ClockName::parse("0"), Ok(ClockName::Monotonic));
        assert!(ClockName::parse("sundial").is_err());
    }
}

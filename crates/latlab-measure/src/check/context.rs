//! What every check reads from: the files under the root, the target CPUs, the kernel
//! configuration and command line (read once), and the tasks in `/proc`.

use super::Check;
use crate::facts::{parse_kernel_cpu_list, FactReader};
use latlab_model::audit::{CheckResult, CheckVerdict, Evidence};
use std::io;
use std::sync::OnceLock;

/// Kernel configuration options the checks look at (only these lines are kept).
const CONFIG_PREFIXES: [&str; 18] = [
    "CONFIG_HZ",
    "CONFIG_PREEMPT",
    "CONFIG_NO_HZ",
    "CONFIG_HIGH_RES_TIMERS",
    "CONFIG_LOCKDEP",
    "CONFIG_PROVE_",
    "CONFIG_DEBUG_",
    "CONFIG_LOCK_STAT",
    "CONFIG_KASAN",
    "CONFIG_KCSAN",
    "CONFIG_KMSAN",
    "CONFIG_KCOV",
    "CONFIG_GCOV_KERNEL",
    "CONFIG_SLUB_DEBUG_ON",
    "CONFIG_IRQSOFF_TRACER",
    "CONFIG_PREEMPT_TRACER",
    "CONFIG_RT_GROUP_SCHED",
    "CONFIG_RCU_NOCB_CPU",
];

/// `PF_KTHREAD` in the flags field of `/proc/PID/stat`: the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// The lines of the kernel configuration the checks need, and where they came from.
#[derive(Debug, Clone)]
pub struct KernelConfig {
    /// The file read (`/proc/config.gz` or `/boot/config-RELEASE`).
    pub source: String,
    text: String,
}

impl KernelConfig {
    /// Builds one from configuration text (for tests and for the reader).
    pub fn new(source: impl Into<String>, text: impl Into<String>) -> KernelConfig {
        KernelConfig {
            source: source.into(),
            text: text.into(),
        }
    }

    /// The value of `key` (`y`, `m`, `250`), `None` when not set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.text.lines().find_map(|line| {
            let value = line.strip_prefix(key)?.strip_prefix('=')?;
            Some(value.trim().trim_matches('"'))
        })
    }

    /// True when `key` is `y` or `m`.
    pub fn enabled(&self, key: &str) -> bool {
        matches!(self.get(key), Some("y" | "m"))
    }
}

/// One thread in `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its name (`comm`).
    pub comm: String,
    /// A kernel thread (`PF_KTHREAD`).
    pub kernel: bool,
    /// Scheduling policy number (1 FIFO, 2 RR, 6 DEADLINE).
    pub policy: u32,
    /// Real-time priority, 0 for other policies.
    pub rt_priority: u32,
    /// For real-time tasks: the CPUs it may run on (`None` when not read).
    pub allowed: Option<Vec<usize>>,
}

impl Task {
    /// Runs at a real-time policy (FIFO, RR or DEADLINE).
    pub fn is_realtime(&self) -> bool {
        matches!(self.policy, 1 | 2 | 6)
    }

    /// The interrupt it handles, when it is a threaded interrupt handler (a kernel
    /// thread `irq/N-ACTION`: every device's on PREEMPT_RT, or with `threadirqs`).
    pub fn threaded_irq(&self) -> Option<i64> {
        self.kernel
            .then(|| latlab_model::explain::ThreadedIrq::number_of(&self.comm))
            .flatten()
    }

    /// `fifo:50`, `rr:10`, `deadline`.
    pub fn policy_label(&self) -> String {
        match self.policy {
            1 => format!("fifo:{}", self.rt_priority),
            2 => format!("rr:{}", self.rt_priority),
            6 => "deadline".to_string(),
            _ => "other".to_string(),
        }
    }
}

/// Why a fact a check needs could not be had: which file, and why in words a user acts
/// on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactError {
    /// A file could not be read.
    #[error("cannot read {path}: {why}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        why: IoWhy,
    },
    /// A directory could not be listed.
    #[error("cannot list {path}: {why}")]
    Unlistable {
        /// The directory.
        path: String,
        /// Why.
        why: IoWhy,
    },
    /// The kernel configuration is in neither place the kernel keeps it.
    #[error(
        "the kernel configuration is not readable (neither /proc/config.gz nor \
         /boot/config-RELEASE)"
    )]
    NoKernelConfig,
    /// A file lacks the line a check reads (`CapEff` of `/proc/self/status`).
    #[error("{path} has no {line} line")]
    NoLine {
        /// The file.
        path: &'static str,
        /// The line, as named in the file.
        line: String,
    },
    /// A value is not in the form the kernel writes it.
    #[error("{path} {value} is not {form}")]
    Malformed {
        /// The file.
        path: &'static str,
        /// The value, with the line it is on.
        value: String,
        /// The form expected (`hexadecimal`).
        form: &'static str,
    },
}

impl FactError {
    /// `path` could not be read, for `error`.
    pub fn unreadable(path: &str, error: &io::Error) -> FactError {
        FactError::Unreadable {
            path: path.to_string(),
            why: IoWhy::from(error),
        }
    }
}

/// Why a file could not be read, in words a user acts on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IoWhy {
    /// It is not there (the kernel lacks the feature, or the driver is not loaded).
    #[error("it does not exist")]
    NotFound,
    /// Only root may read it.
    #[error("permission denied (run as root to read it)")]
    PermissionDenied,
    /// Anything else, as the system says it.
    #[error("{0}")]
    Other(String),
}

impl From<&io::Error> for IoWhy {
    fn from(e: &io::Error) -> IoWhy {
        match e.kind() {
            io::ErrorKind::NotFound => IoWhy::NotFound,
            io::ErrorKind::PermissionDenied => IoWhy::PermissionDenied,
            _ => IoWhy::Other(e.to_string()),
        }
    }
}

/// Everything the checks read from, gathered once.
#[derive(Debug)]
pub struct CheckContext {
    /// Reads files under the root.
    pub files: FactReader,
    /// The CPUs the task will run on (judged for), ascending.
    pub cpus: Vec<usize>,
    /// Online CPUs (`/sys/devices/system/cpu/online`); empty when unreadable.
    pub online: Vec<usize>,
    /// The real-time priority the task runs at (1–99; 0 when it is not real-time).
    pub priority: u8,
    /// The kernel configuration, or why it could not be read.
    pub config: Result<KernelConfig, FactError>,
    /// The kernel command line (before any `--`), or why it could not be read.
    pub cmdline: Result<String, FactError>,
    /// The hypervisor or container seen, `None` on bare metal.
    pub virtualization: Option<String>,
    /// Latlab's own process, left out of task scans.
    self_pid: Option<u32>,
    tasks: OnceLock<Result<Vec<Task>, FactError>>,
}

impl CheckContext {
    /// Reads the context under `files`' root. `cpus` are the CPUs the task will run on
    /// (`None`: every online CPU); `priority` its real-time priority.
    pub fn new(files: FactReader, cpus: Option<&[usize]>, priority: u8) -> CheckContext {
        let online = files
            .read("/sys/devices/system/cpu/online")
            .map(|t| parse_kernel_cpu_list(&t))
            .unwrap_or_default();
        let cpus = match cpus {
            Some(list) => {
                let mut list = list.to_vec();
                list.sort_unstable();
                list.dedup();
                list
            }
            None => online.clone(),
        };
        let config = files
            .kernel_config(&CONFIG_PREFIXES)
            .map(|(source, text)| KernelConfig::new(source, text))
            .ok_or(FactError::NoKernelConfig);
        let cmdline = files
            .try_read("/proc/cmdline")
            .map(|line| match line.split_once(" -- ") {
                Some((kernel, _init)) => kernel.to_string(),
                None => line,
            })
            .map_err(|e| FactError::unreadable("/proc/cmdline", &e));
        let virtualization = files.virtualization();
        let self_pid = files
            .read("/proc/self/stat")
            .and_then(|s| s.split_whitespace().next()?.parse().ok());
        CheckContext {
            files,
            cpus,
            online,
            priority,
            config,
            cmdline,
            virtualization,
            self_pid,
            tasks: OnceLock::new(),
        }
    }

    /// Starts the result of `check`: reads made through it are kept as evidence.
    pub fn record(&self, check: &dyn Check) -> Recorder<'_> {
        Recorder {
            ctx: self,
            id: check.id(),
            title: check.title(),
            explanation: None,
            evidence: Vec::new(),
        }
    }

    /// The value of `name=` on the kernel command line (the last one counts).
    pub fn cmdline_param(&self, name: &str) -> Option<&str> {
        let line = self.cmdline.as_deref().ok()?;
        line.split_whitespace()
            .filter_map(|w| w.strip_prefix(name)?.strip_prefix('='))
            .next_back()
    }

    /// True when the bare word `name` is on the kernel command line.
    pub fn cmdline_flag(&self, name: &str) -> bool {
        self.cmdline
            .as_deref()
            .is_ok_and(|line| line.split_whitespace().any(|w| w == name))
    }

    /// True inside a virtual machine (a container alone is not one).
    pub fn in_vm(&self) -> bool {
        self.virtualization
            .as_deref()
            .is_some_and(|v| v.split(", ").any(|part| !part.ends_with("container")))
    }

    /// Online CPUs that are not target CPUs: where everything else can go.
    pub fn housekeeping(&self) -> Vec<usize> {
        super::outside(&self.online, &self.cpus)
    }

    /// The CPUs to isolate for the task: the targets, or, when they cover every
    /// online CPU, all but the first (one CPU must stay for housekeeping).
    pub fn isolation_candidates(&self) -> Vec<usize> {
        if self.housekeeping().is_empty() && self.cpus.len() > 1 {
            self.cpus[1..].to_vec()
        } else {
            self.cpus.clone()
        }
    }

    /// Every thread in `/proc` but latlab's own, scanned once.
    pub fn tasks(&self) -> Result<&[Task], &FactError> {
        self.tasks.get_or_init(|| self.scan_tasks()).as_deref()
    }

    fn scan_tasks(&self) -> Result<Vec<Task>, FactError> {
        let pids = self
            .files
            .list("/proc")
            .map_err(|e| FactError::Unlistable {
                path: "/proc".to_string(),
                why: IoWhy::from(&e),
            })?;
        let mut tasks = Vec::new();
        for pid in pids.iter().filter_map(|p| p.parse::<u32>().ok()) {
            if Some(pid) == self.self_pid {
                continue;
            }
            // A process can end between the listing and the read: skip it.
            let Ok(tids) = self.files.list(&format!("/proc/{pid}/task")) else {
                continue;
            };
            for tid in tids.iter().filter_map(|t| t.parse::<u32>().ok()) {
                let dir = format!("/proc/{pid}/task/{tid}");
                let Some(mut task) = self
                    .files
                    .read(&format!("{dir}/stat"))
                    .and_then(|s| parse_stat(pid, tid, &s))
                else {
                    continue;
                };
                if task.is_realtime() {
                    task.allowed = self.files.read(&format!("{dir}/status")).and_then(|s| {
                        s.lines()
                            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                            .map(|v| parse_kernel_cpu_list(v.trim()))
                    });
                }
                tasks.push(task);
            }
        }
        tasks.sort_by_key(|t| (t.pid, t.tid));
        Ok(tasks)
    }
}

/// Parses `/proc/PID/task/TID/stat`: the name sits in parentheses and may itself hold
/// spaces and parentheses, so fields are counted from the last `)`.
pub(crate) fn parse_stat(pid: u32, tid: u32, text: &str) -> Option<Task> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    // Field 3 (state) is rest[0], so field n is rest[n - 3].
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Task {
        pid,
        tid,
        comm,
        kernel: field(9)? & PF_KTHREAD != 0,
        rt_priority: field(40)? as u32,
        policy: field(41)? as u32,
        allowed: None,
    })
}

/// Collects the evidence of one check and ends it with a verdict.
#[derive(Debug)]
pub struct Recorder<'a> {
    ctx: &'a CheckContext,
    id: &'static str,
    title: &'static str,
    explanation: Option<String>,
    evidence: Vec<Evidence>,
}

impl Recorder<'_> {
    /// Reads a file under the root and keeps what was read (or why not) as evidence.
    /// The error says which file and why.
    pub fn read(&mut self, path: &str) -> Result<String, FactError> {
        match self.ctx.files.try_read(path) {
            Ok(value) => {
                // One line: tabs and newlines would break a table.
                let flat = value.split_whitespace().collect::<Vec<_>>().join(" ");
                self.note(path, super::clip(&flat, 200));
                Ok(value)
            }
            Err(e) => {
                let why = IoWhy::from(&e);
                self.note(path, format!("unreadable: {why}"));
                Err(FactError::Unreadable {
                    path: path.to_string(),
                    why,
                })
            }
        }
    }

    /// Reads a file without keeping it as evidence (for files only parts of which
    /// matter; note those parts).
    pub fn read_quietly(&self, path: &str) -> Result<String, FactError> {
        self.ctx
            .files
            .try_read(path)
            .map_err(|e| FactError::unreadable(path, &e))
    }

    /// Says why the finding earns its verdict (what it does to a real-time task).
    pub fn explain(&mut self, why: impl Into<String>) {
        self.explanation = Some(why.into());
    }

    /// Keeps a value as evidence.
    pub fn note(&mut self, source: impl Into<String>, value: impl Into<String>) {
        self.evidence.push(Evidence::new(source, value));
    }

    /// Keeps a kernel command-line parameter (or its absence) as evidence.
    pub fn note_param(&mut self, name: &str) -> Option<String> {
        let value = self.ctx.cmdline_param(name).map(str::to_string);
        let shown = match (&value, &self.ctx.cmdline) {
            (Some(v), _) => v.clone(),
            (None, Ok(_)) => "not set".to_string(),
            (None, Err(e)) => format!("unknown: {e}"),
        };
        self.note(format!("/proc/cmdline {name}="), shown);
        value
    }

    /// Ends the check.
    pub fn verdict(
        self,
        verdict: CheckVerdict,
        finding: impl Into<String>,
        fix: Option<String>,
    ) -> CheckResult {
        CheckResult {
            id: self.id.to_string(),
            title: self.title.to_string(),
            verdict,
            finding: finding.into(),
            explanation: self.explanation,
            evidence: self.evidence,
            fix,
        }
    }

    /// Ends the check: configured for real-time work.
    pub fn ok(self, finding: impl Into<String>) -> CheckResult {
        self.verdict(CheckVerdict::Ok, finding, None)
    }

    /// Ends the check: worth knowing; the fix is optional advice.
    pub fn info(self, finding: impl Into<String>, fix: Option<String>) -> CheckResult {
        self.verdict(CheckVerdict::Info, finding, fix)
    }

    /// Ends the check: likely to add latency.
    pub fn warn(self, finding: impl Into<String>, fix: impl Into<String>) -> CheckResult {
        self.verdict(CheckVerdict::Warn, finding, Some(fix.into()))
    }

    /// Ends the check: rules out bounded low latency.
    pub fn fail(self, finding: impl Into<String>, fix: impl Into<String>) -> CheckResult {
        self.verdict(CheckVerdict::Fail, finding, Some(fix.into()))
    }

    /// Ends a check that judges per CPU when there are no CPUs to judge.
    pub fn no_cpus(self) -> CheckResult {
        self.unknown("no CPUs to judge: /sys/devices/system/cpu/online is unreadable")
    }

    /// Ends the check: could not be judged, and why.
    pub fn unknown(self, reason: impl ToString) -> CheckResult {
        self.verdict(CheckVerdict::Unknown, reason.to_string(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_facts_say_which_file_and_what_to_do() {
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(
            FactError::unreadable("/proc/cmdline", &missing).to_string(),
            "cannot read /proc/cmdline: it does not exist"
        );
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(
            FactError::unreadable("/dev/cpu/0/msr", &denied).to_string(),
            "cannot read /dev/cpu/0/msr: permission denied (run as root to read it)"
        );
        let malformed = FactError::Malformed {
            path: "/proc/self/status",
            value: "CapEff 'xyz'".to_string(),
            form: "hexadecimal",
        };
        assert_eq!(
            malformed.to_string(),
            "/proc/self/status CapEff 'xyz' is not hexadecimal"
        );
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "50 (irq/24-ACPI:Ged) S 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 -51 0 1 0 15 0 0 \
                    18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 50 1 0 0 0 0 0 0 0 0 0 0 0";
        let t = parse_stat(50, 50, line).unwrap();
        assert_eq!(t.comm, "irq/24-ACPI:Ged");
        assert!(t.kernel);
        assert_eq!((t.policy, t.rt_priority), (1, 50));
        assert_eq!(t.policy_label(), "fifo:50");

        let odd = "7 (a) b (c)) R 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 8 0 0 \
                   18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 1 0 0 0 0 0";
        let t = parse_stat(7, 7, odd).unwrap();
        assert_eq!(t.comm, "a) b (c)");
        assert!(!t.kernel && !t.is_realtime());
        assert!(parse_stat(1, 1, "1 (short) S 0").is_none());
    }

    #[test]
    fn config_values() {
        let c = KernelConfig::new(
            "c",
            "CONFIG_HZ=250\nCONFIG_PREEMPT_RT=y\n# CONFIG_KASAN is not set\nCONFIG_X=\"a\"\n",
        );
        assert_eq!(c.get("CONFIG_HZ"), Some("250"));
        assert!(c.enabled("CONFIG_PREEMPT_RT"));
        assert!(!c.enabled("CONFIG_KASAN"));
        assert!(!c.enabled("CONFIG_PREEMPT"));
        assert_eq!(c.get("CONFIG_X"), Some("a"));
    }
}

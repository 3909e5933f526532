//! The telemetry sources of the measured CPUs: each file opened once, re-read from
//! offset 0 with `pread` at every interval boundary. A source that cannot be opened is
//! unknown, with the reason.

use super::parse;
use latlab_model::telemetry::{SeriesKind, Source};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Linux's USER_HZ, the unit of `/proc/stat`: 100 on every architecture Linux
/// supports (it is part of the ABI, unlike HZ).
const USER_HZ: u64 = 100;
/// MSR_SMI_COUNT (Intel SDM vol. 4, "MSRs in the Intel Core microarchitecture").
const MSR_SMI_COUNT: u64 = 0x34;

/// One series' value in one reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The CPU.
    pub cpu: usize,
    /// What it counts.
    pub kind: SeriesKind,
    /// Its name within the kind.
    pub name: String,
    /// The kernel's description.
    pub description: Option<String>,
    /// A counter (a change is taken between readings) or a level.
    pub value: u64,
}

/// A file kept open, read whole with `pread`.
struct Reread {
    file: File,
    buffer: Vec<u8>,
}

impl Reread {
    fn open(path: &Path) -> std::io::Result<Reread> {
        Ok(Reread {
            file: File::open(path)?,
            buffer: Vec::with_capacity(16 << 10),
        })
    }

    /// The file's text from offset 0 (`None`: the read failed).
    fn text(&mut self) -> Option<&str> {
        self.buffer.clear();
        let mut chunk = [0u8; 8192];
        loop {
            let n = self
                .file
                .read_at(&mut chunk, self.buffer.len() as u64)
                .ok()?;
            if n == 0 {
                break;
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
        std::str::from_utf8(&self.buffer).ok()
    }

    fn number(&mut self) -> Option<u64> {
        self.text()?.trim().parse().ok()
    }
}

/// A per-CPU file: its CPU, its series' kind and name, and the file.
struct CpuFile {
    cpu: usize,
    kind: SeriesKind,
    name: String,
    /// The multiplier into the series' unit (µs → ns for cpuidle).
    scale: u64,
    file: Reread,
}

/// Every source of the measured CPUs, open.
pub struct Sources {
    cpus: Vec<usize>,
    interrupts: Option<Reread>,
    softirqs: Option<Reread>,
    stat: Option<Reread>,
    per_cpu: Vec<CpuFile>,
    smi: Vec<(usize, File)>,
    /// Each source's state, as the Run lists them.
    pub states: Vec<Source>,
}

impl Sources {
    /// Opens the sources of `cpus` under `root` (`/` on the live system).
    pub fn open(root: &Path, cpus: &[usize]) -> Sources {
        let mut states = Vec::new();
        let mut table = |name: &str, path: &str| {
            let full = root.join(path.trim_start_matches('/'));
            match Reread::open(&full) {
                Ok(file) => {
                    states.push(Source::measured(name, path));
                    Some(file)
                }
                Err(e) => {
                    states.push(Source::unknown(
                        name,
                        path,
                        format!("cannot read {path}: {e}"),
                    ));
                    None
                }
            }
        };
        let interrupts = table("interrupts", "/proc/interrupts");
        let softirqs = table("softirqs", "/proc/softirqs");
        let stat = table("steal", "/proc/stat");
        let mut per_cpu = Vec::new();
        let cpu_dir = |cpu: usize| root.join(format!("sys/devices/system/cpu/cpu{cpu}"));
        let first = cpus.first().copied().unwrap_or(0);
        // Frequency: the kernel's estimate (cpufreq).
        let freq: Vec<CpuFile> = cpus
            .iter()
            .filter_map(|&cpu| {
                let file = Reread::open(&cpu_dir(cpu).join("cpufreq/scaling_cur_freq")).ok()?;
                Some(CpuFile {
                    cpu,
                    kind: SeriesKind::Frequency,
                    name: String::new(),
                    scale: 1,
                    file,
                })
            })
            .collect();
        states.push(state_of(
            !freq.is_empty(),
            "frequency",
            "/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq",
            || {
                format!(
                    "no /sys/devices/system/cpu/cpu{first}/cpufreq: no cpufreq driver runs this \
                     CPU (usual in a VM); APERF/MPERF through /dev/cpu/N/msr is not read by this \
                     version"
                )
            },
        ));
        per_cpu.extend(freq);
        // C-state residency (cpuidle), µs → ns.
        let mut idle = Vec::new();
        for &cpu in cpus {
            for state in 0.. {
                let dir = cpu_dir(cpu).join(format!("cpuidle/state{state}"));
                let Ok(name) = std::fs::read_to_string(dir.join("name")) else {
                    break;
                };
                if let Ok(file) = Reread::open(&dir.join("time")) {
                    idle.push(CpuFile {
                        cpu,
                        kind: SeriesKind::Cstate,
                        name: name.trim().to_string(),
                        scale: 1000,
                        file,
                    });
                }
            }
        }
        states.push(state_of(
            !idle.is_empty(),
            "cstates",
            "/sys/devices/system/cpu/cpuN/cpuidle/stateK/time",
            || format!("no /sys/devices/system/cpu/cpu{first}/cpuidle: no cpuidle driver"),
        ));
        per_cpu.extend(idle);
        // Thermal throttling (x86 therm_throt).
        let mut throttle = Vec::new();
        for &cpu in cpus {
            for which in ["core", "package"] {
                let path = cpu_dir(cpu).join(format!("thermal_throttle/{which}_throttle_count"));
                if let Ok(file) = Reread::open(&path) {
                    throttle.push(CpuFile {
                        cpu,
                        kind: SeriesKind::Throttle,
                        name: which.to_string(),
                        scale: 1,
                        file,
                    });
                }
            }
        }
        states.push(state_of(
            !throttle.is_empty(),
            "thermal-throttle",
            "/sys/devices/system/cpu/cpuN/thermal_throttle",
            || {
                format!(
                    "no /sys/devices/system/cpu/cpu{first}/thermal_throttle: the CPU reports no \
                     thermal events to this kernel (usual in a VM)"
                )
            },
        ));
        per_cpu.extend(throttle);
        // SMIs: MSR 0x34 through the msr driver.
        let mut smi = Vec::new();
        let mut smi_problem = None;
        for &cpu in cpus {
            let path = root.join(format!("dev/cpu/{cpu}/msr"));
            match File::open(&path) {
                Ok(file) => {
                    let mut word = [0u8; 8];
                    match file.read_exact_at(&mut word, MSR_SMI_COUNT) {
                        Ok(()) => smi.push((cpu, file)),
                        Err(e) => {
                            smi_problem.get_or_insert(format!(
                                "MSR 0x34 is not readable on CPU {cpu}: {e}"
                            ));
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    smi_problem.get_or_insert(format!(
                        "no /dev/cpu/{cpu}/msr: the msr module is not loaded (modprobe msr)"
                    ));
                }
                Err(e) => {
                    smi_problem.get_or_insert(format!(
                        "cannot open /dev/cpu/{cpu}/msr: {e} (run as root)"
                    ));
                }
            }
        }
        states.push(match (&smi_problem, smi.is_empty()) {
            (None, false) => Source::measured("smi", "/dev/cpu/N/msr (MSR 0x34)"),
            (problem, _) => Source::unknown(
                "smi",
                "/dev/cpu/N/msr (MSR 0x34)",
                problem
                    .clone()
                    .unwrap_or_else(|| "no CPU to read".to_string()),
            ),
        });
        if smi_problem.is_some() {
            smi.clear();
        }
        Sources {
            cpus: cpus.to_vec(),
            interrupts,
            softirqs,
            stat,
            per_cpu,
            smi,
            states,
        }
    }

    /// Reads every open source: one value per series of the measured CPUs. A source
    /// whose read fails gives nothing this time (its series are unknown there).
    pub fn read(&mut self) -> Vec<Reading> {
        let mut out = Vec::new();
        let cpus = &self.cpus;
        let tables = [
            (
                self.interrupts.as_mut(),
                "/proc/interrupts",
                SeriesKind::Irq,
            ),
            (
                self.softirqs.as_mut(),
                "/proc/softirqs",
                SeriesKind::Softirq,
            ),
        ];
        for (file, path, kind) in tables {
            let Some(rows) = file.and_then(|f| parse::cpu_table(path, f.text()?).ok()) else {
                continue;
            };
            for row in rows {
                for &(cpu, count) in row.counts.iter().filter(|(c, _)| cpus.contains(c)) {
                    out.push(Reading {
                        cpu,
                        kind,
                        name: row.name.clone(),
                        description: row.description.clone(),
                        value: count,
                    });
                }
            }
        }
        if let Some(text) = self.stat.as_mut().and_then(Reread::text) {
            for (cpu, ticks) in parse::steal_ticks(text)
                .into_iter()
                .filter(|(c, _)| cpus.contains(c))
            {
                out.push(Reading {
                    cpu,
                    kind: SeriesKind::Steal,
                    name: String::new(),
                    description: None,
                    value: ticks * (1_000_000_000 / USER_HZ),
                });
            }
        }
        for f in &mut self.per_cpu {
            if let Some(value) = f.file.number() {
                out.push(Reading {
                    cpu: f.cpu,
                    kind: f.kind,
                    name: f.name.clone(),
                    description: None,
                    value: value * f.scale,
                });
            }
        }
        for (cpu, file) in &self.smi {
            let mut word = [0u8; 8];
            if file.read_exact_at(&mut word, MSR_SMI_COUNT).is_ok() {
                out.push(Reading {
                    cpu: *cpu,
                    kind: SeriesKind::Smi,
                    name: String::new(),
                    description: None,
                    // The count is the low 32 bits.
                    value: u64::from_le_bytes(word) & 0xffff_ffff,
                });
            }
        }
        out
    }
}

/// A per-CPU source's state: measured when some CPU had its files, else unknown for
/// `why`.
fn state_of(found: bool, name: &str, origin: &str, why: impl FnOnce() -> String) -> Source {
    match found {
        true => Source::measured(name, origin),
        false => Source::unknown(name, origin, why()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_msr_cpufreq_or_thermal_has_them_unknown_with_the_reason() {
        let root = tempfile::tempdir().unwrap();
        let proc = root.path().join("proc");
        std::fs::create_dir_all(&proc).unwrap();
        std::fs::write(proc.join("interrupts"), "  CPU0\n 36: 5 virt\n").unwrap();
        std::fs::write(proc.join("softirqs"), "  CPU0\n NET_RX: 9\n").unwrap();
        let mut sources = Sources::open(root.path(), &[0]);
        let state = |name: &str| {
            sources
                .states
                .iter()
                .find(|s| s.name == name)
                .unwrap()
                .clone()
        };
        assert_eq!(state("interrupts").reason, None);
        assert!(state("smi")
            .reason
            .unwrap()
            .contains("msr module is not loaded"));
        assert!(state("frequency").reason.unwrap().contains("cpufreq"));
        assert!(state("thermal-throttle")
            .reason
            .unwrap()
            .contains("thermal_throttle"));
        assert!(state("steal").reason.unwrap().contains("/proc/stat"));
        let readings = sources.read();
        assert_eq!(readings.len(), 2, "{readings:?}");
        assert_eq!((readings[0].kind, readings[0].value), (SeriesKind::Irq, 5));
    }
}

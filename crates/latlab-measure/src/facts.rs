//! Facts about the host: kernel, preemption model, CPUs, virtualisation, clocksource.
//!
//! Every read goes through a root directory (normally `/`), so tests can point it at
//! a fixture tree of `/proc` and `/sys`.

use flate2::read::GzDecoder;
use latlab_model::run::{HostFacts, Preemption};
use latlab_model::spec::format_cpu_list;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// The kernel configuration options host facts read.
const CONFIG_PREFIXES: [&str; 3] = ["CONFIG_HZ", "CONFIG_PREEMPT", "CONFIG_NO_HZ"];

/// Reads host facts from the file system under `root`.
#[derive(Debug, Clone)]
pub struct FactReader {
    root: PathBuf,
}

impl FactReader {
    /// Reads the live system.
    pub fn system() -> FactReader {
        FactReader::at("/")
    }

    /// Reads a tree rooted at `root` (for fixtures).
    pub fn at(root: impl Into<PathBuf>) -> FactReader {
        FactReader { root: root.into() }
    }

    /// A temporary tree holding `files` (absolute path, content), for a
    /// [`FactReader::at`] in unit tests.
    #[cfg(test)]
    pub(crate) fn test_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let p = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        dir
    }

    fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// The root every path is read under (`/` for the live system).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A file's contents, trimmed; `None` if unreadable.
    pub fn read(&self, abs: &str) -> Option<String> {
        self.try_read(abs).ok()
    }

    /// A file's contents, trimmed, or why it could not be read.
    pub fn try_read(&self, abs: &str) -> std::io::Result<String> {
        fs::read_to_string(self.path(abs)).map(|s| s.trim().to_string())
    }

    /// The names in a directory (unsorted), or why it could not be listed.
    pub fn list(&self, abs: &str) -> std::io::Result<Vec<String>> {
        fs::read_dir(self.path(abs))?
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    /// True when something exists at the path.
    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// True when a directory is at the path.
    pub fn is_dir(&self, abs: &str) -> bool {
        self.path(abs).is_dir()
    }

    /// Eight bytes at `offset` of a file, as a little-endian number: one register of a
    /// device file such as `/dev/cpu/0/msr`, whose offsets are register numbers.
    pub fn read_u64_at(&self, abs: &str, offset: u64) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let mut bytes = [0u8; 8];
        fs::File::open(self.path(abs))?.read_exact_at(&mut bytes, offset)?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// The lines of the kernel configuration (`/proc/config.gz`, else
    /// `/boot/config-RELEASE`) that start with one of `prefixes`, with the file read.
    /// Streamed line by line: the whole configuration is never held in memory.
    pub fn kernel_config(&self, prefixes: &[&str]) -> Option<(String, String)> {
        let keep = |line: &str| prefixes.iter().any(|p| line.starts_with(p));
        let filtered = |reader: &mut dyn BufRead| -> Option<String> {
            let mut out = String::new();
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) => return Some(out),
                    Ok(_) if keep(&line) => out.push_str(&line),
                    Ok(_) => {}
                    Err(_) => return None,
                }
            }
        };
        if let Ok(file) = fs::File::open(self.path("/proc/config.gz")) {
            if let Some(text) = filtered(&mut BufReader::new(GzDecoder::new(file))) {
                return Some(("/proc/config.gz".to_string(), text));
            }
        }
        let release = self.read("/proc/sys/kernel/osrelease")?;
        let path = format!("/boot/config-{release}");
        let file = fs::File::open(self.path(&path)).ok()?;
        filtered(&mut BufReader::new(file)).map(|text| (path, text))
    }

    /// Gathers every fact.
    pub fn gather(&self) -> HostFacts {
        let config = self.kernel_config(&CONFIG_PREFIXES);
        let config_value = |key: &str| -> Option<String> {
            let (_, text) = config.as_ref()?;
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(|v| v.trim_matches('"').to_string())
        };
        let online = self
            .read("/sys/devices/system/cpu/online")
            .unwrap_or_default();
        let online_cpus = parse_kernel_cpu_list(&online);
        HostFacts {
            hostname: self.read("/proc/sys/kernel/hostname").unwrap_or_default(),
            rig: self.rig(std::env::var(latlab_model::rig::RIG_ENV).ok()),
            kernel_release: self.read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            kernel_version: self.read("/proc/sys/kernel/version").unwrap_or_default(),
            architecture: std::env::consts::ARCH.to_string(),
            preemption: self.preemption(config.as_ref().map(|(p, t)| (p.as_str(), t.as_str()))),
            cpu_model: self.cpu_model(),
            cpus_online: (!online_cpus.is_empty()).then_some(online_cpus.len()),
            cpus_online_list: (!online_cpus.is_empty()).then(|| format_cpu_list(&online_cpus)),
            virtualization: Some(
                self.virtualization()
                    .unwrap_or_else(|| latlab_model::run::BARE_METAL.to_string()),
            ),
            clocksource: self
                .read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            hz: config_value("CONFIG_HZ").and_then(|v| v.parse().ok()),
            isolated_cpus: self.cpu_list_file("/sys/devices/system/cpu/isolated"),
            // A kernel built without NO_HZ_FULL has no such file, and no such CPU.
            nohz_full_cpus: self
                .cpu_list_file("/sys/devices/system/cpu/nohz_full")
                .or_else(|| (!online_cpus.is_empty()).then(Vec::new)),
        }
    }

    /// The rig's identity ([`latlab_model::rig::rig_id`]): `named` (`LATLAB_RIG`),
    /// else a hash of the machine id. Not the boot-id fallback: a series must outlive a
    /// reboot, so without either the host name stands in for it.
    fn rig(&self, named: Option<String>) -> Option<String> {
        let machine = latlab_model::rig::MACHINE_ID_FILES
            .iter()
            .find_map(|f| self.read(f));
        latlab_model::rig::rig_id(named.as_deref(), machine.as_deref(), None, None)
    }

    /// A CPU list file of sysfs: `None` when unreadable (unknown), empty when it
    /// names no CPU (an empty line, or `(null)` as kernels before 5.x wrote it).
    fn cpu_list_file(&self, abs: &str) -> Option<Vec<usize>> {
        self.read(abs).map(|text| parse_kernel_cpu_list(&text))
    }

    /// Decides the preemption model from `/sys/kernel/realtime`, `uname -v`, the
    /// scheduler's debugfs file and the kernel configuration, recording each piece read.
    pub fn preemption(&self, config: Option<(&str, &str)>) -> Preemption {
        let mut evidence = Vec::new();
        let realtime = self.read("/sys/kernel/realtime");
        if let Some(v) = &realtime {
            evidence.push(format!("/sys/kernel/realtime = {v}"));
        }
        let version = self.read("/proc/sys/kernel/version").unwrap_or_default();
        evidence.push(format!("uname -v = {version}"));
        let words: Vec<&str> = version.split_whitespace().collect();
        let has = |w: &str| words.contains(&w);
        let config_set = |key: &str| {
            config.is_some_and(|(_, text)| text.lines().any(|l| l == format!("{key}=y")))
        };
        let debugfs_mode = self
            .read("/sys/kernel/debug/sched/preempt")
            .and_then(|line| {
                evidence.push(format!("/sys/kernel/debug/sched/preempt = {line}"));
                // The mode in force is the one in parentheses: "none voluntary (full) lazy".
                let start = line.find('(')?;
                let end = line[start..].find(')')? + start;
                Some(line[start + 1..end].to_string())
            });
        let model = if realtime.as_deref() == Some("1") || has("PREEMPT_RT") {
            "PREEMPT_RT"
        } else if has("PREEMPT_DYNAMIC") {
            "dynamic"
        } else if has("PREEMPT_LAZY") {
            "lazy"
        } else if has("PREEMPT") {
            "full"
        } else if config_set("CONFIG_PREEMPT_VOLUNTARY") {
            "voluntary"
        } else if config_set("CONFIG_PREEMPT_NONE") {
            "none"
        } else {
            "unknown"
        };
        let mut dynamic_mode = None;
        if model == "dynamic" {
            dynamic_mode = debugfs_mode.or_else(|| self.boot_preempt_mode(config, &mut evidence));
        }
        Preemption {
            model: model.to_string(),
            dynamic_mode,
            evidence,
        }
    }

    /// For PREEMPT_DYNAMIC without debugfs: the boot mode from `preempt=` on the
    /// command line, else the configured default.
    fn boot_preempt_mode(
        &self,
        config: Option<(&str, &str)>,
        evidence: &mut Vec<String>,
    ) -> Option<String> {
        let cmdline = self.read("/proc/cmdline").unwrap_or_default();
        if let Some(mode) = cmdline
            .split_whitespace()
            .find_map(|w| w.strip_prefix("preempt="))
        {
            evidence.push(format!("/proc/cmdline has preempt={mode}"));
            return Some(mode.to_string());
        }
        let (path, text) = config?;
        let default = [
            ("CONFIG_PREEMPT_NONE=y", "none"),
            ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
            ("CONFIG_PREEMPT_LAZY=y", "lazy"),
            ("CONFIG_PREEMPT=y", "full"),
        ]
        .into_iter()
        .find(|(line, _)| text.lines().any(|l| l == *line))?;
        evidence.push(format!(
            "{path} has {} and /proc/cmdline has no preempt=: boot default {} \
             (debugfs not mounted, mode not read directly)",
            default.0, default.1
        ));
        Some(default.1.to_string())
    }

    fn cpu_model(&self) -> Option<String> {
        let info = self.read("/proc/cpuinfo")?;
        ["model name", "Hardware", "Processor", "cpu model", "uarch"]
            .iter()
            .find_map(|key| {
                info.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.trim() == *key).then(|| v.trim().to_string())
                })
            })
    }

    /// The hypervisor (and container) the host runs in, if any is visible.
    pub fn virtualization(&self) -> Option<String> {
        let info = self.read("/proc/cpuinfo").unwrap_or_default();
        let flagged = info
            .lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "hypervisor"));
        let mut parts = Vec::new();
        if let Some(t) = self.read("/sys/hypervisor/type") {
            parts.push(t);
        } else if let Some(v) = self.read("/sys/class/dmi/id/sys_vendor") {
            if flagged {
                parts.push(v);
            }
        }
        if flagged && parts.is_empty() {
            let vendor = if self.root == Path::new("/") {
                latlab_rt::cpuid::hypervisor_vendor()
            } else {
                None
            };
            parts.push(match vendor.as_deref() {
                Some("KVMKVMKVM") => "kvm".to_string(),
                Some("Microsoft Hv") => "hyper-v".to_string(),
                Some("VMwareVMware") => "vmware".to_string(),
                Some("XenVMMXenVMM") => "xen".to_string(),
                Some(other) => other.to_string(),
                None => "hypervisor (cpuinfo flag)".to_string(),
            });
        }
        if self.path("/.dockerenv").exists() {
            parts.push("docker container".to_string());
        } else if self.path("/run/.containerenv").exists() {
            parts.push("podman container".to_string());
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// Parses the kernel's CPU list format (`0-3,5`).
pub fn parse_kernel_cpu_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.parse::<usize>().ok()),
        }
    }
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preempt_rt_from_sysfs() {
        let t = FactReader::test_tree(&[
            ("/sys/kernel/realtime", "1\n"),
            ("/proc/sys/kernel/version", "#1 SMP PREEMPT_RT Thu Jan 1"),
        ]);
        let p = FactReader::at(t.path()).preemption(None);
        assert_eq!(p.model, "PREEMPT_RT");
        assert!(p
            .evidence
            .iter()
            .any(|e| e.contains("/sys/kernel/realtime = 1")));
    }

    #[test]
    fn dynamic_mode_from_debugfs_or_boot_default() {
        let t = FactReader::test_tree(&[
            ("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC @0"),
            (
                "/sys/kernel/debug/sched/preempt",
                "none voluntary (full) lazy\n",
            ),
        ]);
        let p = FactReader::at(t.path()).preemption(None);
        assert_eq!(
            (p.model.as_str(), p.dynamic_mode.as_deref()),
            ("dynamic", Some("full"))
        );

        let t = FactReader::test_tree(&[("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC @0")]);
        let p = FactReader::at(t.path())
            .preemption(Some(("/proc/config.gz", "CONFIG_PREEMPT_NONE=y\n")));
        assert_eq!(p.dynamic_mode.as_deref(), Some("none"));

        let t = FactReader::test_tree(&[
            ("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC @0"),
            ("/proc/cmdline", "root=/dev/vda preempt=voluntary"),
        ]);
        let p = FactReader::at(t.path()).preemption(Some(("c", "CONFIG_PREEMPT_NONE=y")));
        assert_eq!(p.dynamic_mode.as_deref(), Some("voluntary"));
    }

    #[test]
    fn voluntary_and_none_from_config() {
        let t = FactReader::test_tree(&[("/proc/sys/kernel/version", "#1 SMP Debian 6.1")]);
        let r = FactReader::at(t.path());
        assert_eq!(
            r.preemption(Some(("c", "CONFIG_PREEMPT_VOLUNTARY=y")))
                .model,
            "voluntary"
        );
        assert_eq!(
            r.preemption(Some(("c", "CONFIG_PREEMPT_NONE=y"))).model,
            "none"
        );
        assert_eq!(r.preemption(None).model, "unknown");
    }

    #[test]
    fn a_rig_is_its_given_name_else_a_hash_of_its_machine_id() {
        let rig = |id: &str, named: Option<&str>| {
            let t = FactReader::test_tree(&[("/etc/machine-id", id)]);
            FactReader::at(t.path()).rig(named.map(str::to_string))
        };
        let a = rig("3d1219c7c4c5404aaa1f6d2a48adfda4\n", None).unwrap();
        assert!(a.starts_with("machine:") && a.len() == 24, "{a}");
        assert!(
            !a.contains("3d1219c7"),
            "the machine id itself is not given away"
        );
        assert_eq!(rig("3d1219c7c4c5404aaa1f6d2a48adfda4", None).unwrap(), a);
        assert_ne!(rig("0f1219c7c4c5404aaa1f6d2a48adfda4", None).unwrap(), a);
        assert_eq!(rig("x", Some(" bench-07 ")).as_deref(), Some("bench-07"));
        assert_eq!(
            rig("3d1219c7c4c5404aaa1f6d2a48adfda4", Some("two words")).unwrap(),
            a
        );
    }

    #[test]
    fn gathers_a_vm_fixture() {
        let t = FactReader::test_tree(&[
            ("/proc/sys/kernel/hostname", "rig7\n"),
            ("/proc/sys/kernel/osrelease", "6.18.0\n"),
            ("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC"),
            (
                "/proc/cpuinfo",
                "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu hypervisor\n",
            ),
            ("/sys/devices/system/cpu/online", "0-3\n"),
            (
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                "tsc\n",
            ),
            (
                "/boot/config-6.18.0",
                "CONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\n",
            ),
        ]);
        let f = FactReader::at(t.path()).gather();
        assert_eq!(f.hostname, "rig7");
        assert_eq!(f.rig, None, "no machine id, no name: unknown");
        assert_eq!(f.cpu_model.as_deref(), Some("AMD EPYC"));
        assert_eq!(f.cpus_online, Some(4));
        assert_eq!(f.cpus_online_list.as_deref(), Some("0-3"));
        assert_eq!(f.clocksource.as_deref(), Some("tsc"));
        assert_eq!(f.hz, Some(250));
        assert_eq!(
            f.virtualization.as_deref(),
            Some("hypervisor (cpuinfo flag)")
        );
        assert_eq!(f.preemption.dynamic_mode.as_deref(), Some("none"));
    }

    #[test]
    fn kernel_cpu_lists() {
        assert_eq!(parse_kernel_cpu_list("0-2,5\n"), vec![0, 1, 2, 5]);
        assert_eq!(parse_kernel_cpu_list(""), Vec::<usize>::new());
    }
}

//! Which CPUs a run may measure, and which it measures when none are named.
//!
//! A CPU set aside with `isolcpus=` is in no task's affinity by default — latlab's
//! own included — but any task may be pinned there, as `cyclictest -a` and `rtla -c`
//! do. So the CPUs a run may measure are the online CPUs inside latlab's cpuset (its
//! cgroup), not its affinity; only those offline or outside the cpuset are refused.
//!
//! When the kernel isolates CPUs (`isolcpus=`, `nohz_full=`), they are where the
//! time-critical task will run, so a run given no CPUs measures them — unless latlab
//! was started on CPUs of the user's choosing (`taskset`), which it then measures.
//! `-c all` measures every CPU it may.

use crate::facts::{parse_kernel_cpu_list, FactReader};
use latlab_model::run::CpuChoice;
use latlab_model::spec::{format_cpu_list, CpuSelection, SpecError};

/// The CPUs of this machine as a run sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuInventory {
    /// Online CPUs (`/sys/devices/system/cpu/online`).
    pub online: Vec<usize>,
    /// The online CPUs a thread of latlab may be pinned to: those inside its cpuset.
    pub usable: Vec<usize>,
    /// The CPUs latlab's threads start on (its affinity when it was started).
    pub affinity: Vec<usize>,
    /// CPUs set aside from the scheduler's domains (`isolcpus=`,
    /// `/sys/devices/system/cpu/isolated`).
    pub isolcpus: Vec<usize>,
    /// CPUs without the periodic tick when busy (`nohz_full=`,
    /// `/sys/devices/system/cpu/nohz_full`).
    pub nohz_full: Vec<usize>,
}

impl CpuInventory {
    /// This process on the live system: the cpuset as the kernel applies it (see
    /// [`latlab_rt::affinity::permitted_among`]), the rest from `/proc` and `/sys`.
    pub fn of_this_process() -> CpuInventory {
        let mut inventory = CpuInventory::read(&FactReader::system());
        if let Ok(affinity) = latlab_rt::affinity::allowed_cpus() {
            inventory.affinity = affinity;
        }
        let candidates = match inventory.online.is_empty() {
            true => inventory.affinity.clone(),
            false => inventory.online.clone(),
        };
        if let Ok(permitted) = latlab_rt::affinity::permitted_among(&candidates) {
            if !permitted.is_empty() {
                inventory.usable = permitted;
            }
        }
        if inventory.online.is_empty() {
            inventory.online = inventory.usable.clone();
        }
        inventory
    }

    /// Reads the files under `files`' root alone (a fixture tree, `latlab check
    /// --root`): the cpuset from the cgroup's `cpuset.cpus.effective` when readable,
    /// else every online CPU.
    pub fn read(files: &FactReader) -> CpuInventory {
        let list = |path: &str| {
            files
                .read(path)
                .map(|t| parse_kernel_cpu_list(&t))
                .unwrap_or_default()
        };
        let online = list("/sys/devices/system/cpu/online");
        let affinity = files
            .read("/proc/self/status")
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .map(|v| parse_kernel_cpu_list(v.trim()))
            })
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| online.clone());
        let usable = match cpuset_of(files) {
            Some(cpuset) if !online.is_empty() => among(&online, &cpuset),
            _ => online.clone(),
        };
        CpuInventory {
            isolcpus: list("/sys/devices/system/cpu/isolated"),
            // "(null)" on kernels before 5.x when none are: no CPU.
            nohz_full: list("/sys/devices/system/cpu/nohz_full"),
            online,
            usable,
            affinity,
        }
    }

    /// A machine whose CPUs `cpus` are all online and usable, none isolated (tests).
    pub fn plain(cpus: &[usize]) -> CpuInventory {
        CpuInventory {
            online: cpus.to_vec(),
            usable: cpus.to_vec(),
            affinity: cpus.to_vec(),
            isolcpus: Vec::new(),
            nohz_full: Vec::new(),
        }
    }

    /// The CPUs the kernel isolates (`isolcpus` or `nohz_full`) that latlab may use.
    pub fn isolated(&self) -> Vec<usize> {
        let mut isolated: Vec<usize> = self
            .isolcpus
            .iter()
            .chain(&self.nohz_full)
            .copied()
            .collect();
        isolated.sort_unstable();
        isolated.dedup();
        among(&isolated, &self.usable)
    }

    /// The CPUs a run given none measures, and why those.
    pub fn default_cpus(&self) -> (Vec<usize>, CpuChoice) {
        let isolated = self.isolated();
        let affinity = among(&self.affinity, &self.usable);
        // The affinity every task gets at boot: every usable CPU but the isolcpus ones.
        let boot_affinity: Vec<usize> = self
            .usable
            .iter()
            .copied()
            .filter(|c| !self.isolcpus.contains(c))
            .collect();
        let started_as_booted = affinity == boot_affinity || affinity == self.usable;
        if !isolated.is_empty() && started_as_booted {
            (isolated, CpuChoice::Isolated)
        } else if !affinity.is_empty() && affinity != self.usable {
            (affinity, CpuChoice::Affinity)
        } else {
            (self.usable.clone(), CpuChoice::Every)
        }
    }

    /// The CPUs `selection` names (`None`: none named, the default), each checked:
    /// only a CPU offline or outside latlab's cpuset is refused, saying which.
    pub fn resolve(
        &self,
        selection: Option<&CpuSelection>,
    ) -> Result<(Vec<usize>, CpuChoice), SpecError> {
        match selection {
            None => Ok(self.default_cpus()),
            Some(CpuSelection::All) => Ok((self.usable.clone(), CpuChoice::Every)),
            Some(CpuSelection::List(list)) => {
                for &cpu in list {
                    if !self.online.contains(&cpu) {
                        return Err(SpecError(format!(
                            "CPU {cpu} is not online (online: {}): choose from those",
                            format_cpu_list(&self.online)
                        )));
                    }
                    if !self.usable.contains(&cpu) {
                        return Err(SpecError(format!(
                            "CPU {cpu} is outside latlab's cpuset (it may use {}): choose \
                             from those, or start latlab in a cgroup whose cpuset.cpus \
                             holds CPU {cpu}",
                            format_cpu_list(&self.usable)
                        )));
                    }
                }
                Ok((list.clone(), CpuChoice::Given))
            }
        }
    }
}

/// The CPUs of the cpuset of this process, from `/proc/self/cgroup` and the cgroup's
/// `cpuset.cpus.effective` (v2; the nearest ancestor that has one) or
/// `cpuset.effective_cpus` (v1); `None` when not readable.
fn cpuset_of(files: &FactReader) -> Option<Vec<usize>> {
    let cgroups = files.read("/proc/self/cgroup")?;
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let (base, file) = match controllers {
            "" => ("/sys/fs/cgroup", "cpuset.cpus.effective"),
            c if c.split(',').any(|c| c == "cpuset") => {
                ("/sys/fs/cgroup/cpuset", "cpuset.effective_cpus")
            }
            _ => continue,
        };
        let mut dir = path.trim_end_matches('/').to_string();
        loop {
            if let Some(text) = files.read(&format!("{base}{dir}/{file}")) {
                let cpus = parse_kernel_cpu_list(&text);
                if !cpus.is_empty() {
                    return Some(cpus);
                }
            }
            match dir.rfind('/') {
                Some(at) => dir.truncate(at),
                None => break,
            }
        }
    }
    None
}

/// The CPUs of `cpus` that are in `of`, in `cpus`' order.
fn among(cpus: &[usize], of: &[usize]) -> Vec<usize> {
    cpus.iter().copied().filter(|c| of.contains(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-CPU machine booted with `isolcpus=1 nohz_full=1`: latlab starts on CPU 0.
    fn isolated_machine() -> CpuInventory {
        let root = FactReader::test_tree(&[
            ("/sys/devices/system/cpu/online", "0-1\n"),
            ("/sys/devices/system/cpu/isolated", "1\n"),
            ("/sys/devices/system/cpu/nohz_full", "1\n"),
            (
                "/proc/self/status",
                "Name:\tlatlab\nCpus_allowed_list:\t0\n",
            ),
            ("/proc/self/cgroup", "0::/\n"),
            ("/sys/fs/cgroup/cpuset.cpus.effective", "0-1\n"),
        ]);
        CpuInventory::read(&FactReader::at(root.path()))
    }

    #[test]
    fn an_isolated_cpu_is_measured_by_default_and_accepted_when_named() {
        let cpus = isolated_machine();
        assert_eq!(cpus.usable, [0, 1]);
        assert_eq!(cpus.default_cpus(), (vec![1], CpuChoice::Isolated));
        let one = CpuSelection::parse("1").unwrap();
        assert_eq!(
            cpus.resolve(Some(&one)).unwrap(),
            (vec![1], CpuChoice::Given)
        );
        let all = CpuSelection::All;
        assert_eq!(
            cpus.resolve(Some(&all)).unwrap(),
            (vec![0, 1], CpuChoice::Every)
        );
    }

    #[test]
    fn started_under_taskset_the_cpus_given_are_measured() {
        let mut cpus = isolated_machine();
        cpus.affinity = vec![1];
        assert_eq!(cpus.default_cpus(), (vec![1], CpuChoice::Affinity));
        let mut plain = CpuInventory::plain(&[0, 1, 2, 3]);
        plain.affinity = vec![2];
        assert_eq!(plain.default_cpus(), (vec![2], CpuChoice::Affinity));
        assert_eq!(
            CpuInventory::plain(&[0, 1]).default_cpus(),
            (vec![0, 1], CpuChoice::Every)
        );
    }

    #[test]
    fn nohz_full_alone_isolates_and_null_is_no_cpu() {
        let root = FactReader::test_tree(&[
            ("/sys/devices/system/cpu/online", "0-3\n"),
            ("/sys/devices/system/cpu/isolated", "\n"),
            ("/sys/devices/system/cpu/nohz_full", "2-3\n"),
        ]);
        let cpus = CpuInventory::read(&FactReader::at(root.path()));
        assert_eq!(cpus.default_cpus(), (vec![2, 3], CpuChoice::Isolated));
        let root = FactReader::test_tree(&[
            ("/sys/devices/system/cpu/online", "0-3\n"),
            ("/sys/devices/system/cpu/nohz_full", "(null)\n"),
        ]);
        let cpus = CpuInventory::read(&FactReader::at(root.path()));
        assert!(cpus.nohz_full.is_empty());
        assert_eq!(cpus.default_cpus(), (vec![0, 1, 2, 3], CpuChoice::Every));
    }

    #[test]
    fn only_cpus_offline_or_outside_the_cpuset_are_refused_saying_which() {
        let root = FactReader::test_tree(&[
            ("/sys/devices/system/cpu/online", "0-3\n"),
            ("/proc/self/cgroup", "0::/rigs/a\n"),
            ("/sys/fs/cgroup/rigs/cpuset.cpus.effective", "0-2\n"),
        ]);
        let cpus = CpuInventory::read(&FactReader::at(root.path()));
        assert_eq!(cpus.usable, [0, 1, 2]);
        let offline = CpuSelection::parse("5").unwrap();
        let e = cpus.resolve(Some(&offline)).unwrap_err().to_string();
        assert!(e.contains("CPU 5 is not online (online: 0-3)"), "{e}");
        let outside = CpuSelection::parse("3").unwrap();
        let e = cpus.resolve(Some(&outside)).unwrap_err().to_string();
        assert!(
            e.contains("CPU 3 is outside latlab's cpuset (it may use 0-2)"),
            "{e}"
        );
    }

    #[test]
    fn a_cgroup_v1_cpuset_is_read_too() {
        let root = FactReader::test_tree(&[
            ("/sys/devices/system/cpu/online", "0-3\n"),
            ("/proc/self/cgroup", "5:cpuset:/rt\n4:memory:/\n"),
            ("/sys/fs/cgroup/cpuset/rt/cpuset.effective_cpus", "2-3\n"),
        ]);
        let cpus = CpuInventory::read(&FactReader::at(root.path()));
        assert_eq!(cpus.usable, [2, 3]);
    }

    #[test]
    fn this_process_may_use_at_least_the_cpus_it_runs_on() {
        let cpus = CpuInventory::of_this_process();
        let affinity = latlab_rt::affinity::allowed_cpus().unwrap();
        assert!(affinity.iter().all(|c| cpus.usable.contains(c)), "{cpus:?}");
        assert_eq!(cpus.affinity, affinity);
    }
}

//! What the run asks of the system around the measurement: the memory lock, the
//! `/dev/cpu_dma_latency` request, and where the loads run and keep their files.

use super::layered::{Layered, Origin};
use super::{ResolveError, RunInput};
use crate::cpus::CpuInventory;
use latlab_model::run::MemoryLockPlan;
use latlab_model::scenario::Scenario;
use latlab_model::spec::CpuSelection;
use std::path::PathBuf;

/// The system setup, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPlan {
    /// What memory is locked.
    pub memory_lock: MemoryLockPlan,
    /// `/dev/cpu_dma_latency` request (`None` = leave the system alone).
    pub dma_latency_us: Option<i32>,
    /// CPUs the loads run on.
    pub load_cpus: Vec<usize>,
    /// Where the loads' temporary directories go (`None` = the system's temporary
    /// directory).
    pub load_dir: Option<PathBuf>,
}

/// The system setup from the flags and the scenario's `load_cpus`.
pub fn resolve(
    input: &RunInput,
    scenario: &Scenario,
    cpus: &CpuInventory,
) -> Result<SystemPlan, ResolveError> {
    if !(0..=1_000_000).contains(&input.dma_latency_us) {
        return Err(Origin::flag("--dma-latency").out_of_range("give 0 to 1000000 µs"));
    }
    let load_cpus = Layered::pick(
        "--load-cpus",
        input.load_cpus.as_deref(),
        &scenario.name,
        &[("load_cpus", scenario.load_cpus.as_deref())],
    )
    .or("all")
    .parse_with(|text| {
        let selection = CpuSelection::parse(text)?;
        cpus.resolve(Some(&selection)).map(|(list, _)| list)
    })?;
    if let Some(dir) = &input.load_dir {
        if !dir.is_dir() {
            return Err(Origin::flag("--load-dir")
                .out_of_range(format!("{} is not a directory", dir.display())));
        }
    }
    Ok(SystemPlan {
        memory_lock: memory_lock(input),
        dma_latency_us: (!input.no_tune).then_some(input.dma_latency_us),
        load_cpus: load_cpus.value,
        load_dir: input.load_dir.clone(),
    })
}

/// Every page the measurement touches by default; `--no-mlock` wins over `--mlock-all`.
fn memory_lock(input: &RunInput) -> MemoryLockPlan {
    match (input.no_mlock, input.mlock_all) {
        (true, _) => MemoryLockPlan::None,
        (false, true) => MemoryLockPlan::All,
        (false, false) => MemoryLockPlan::Touched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::scenarios;

    fn system_of(input: RunInput) -> Result<SystemPlan, ResolveError> {
        resolve(&input, &scenarios::none(), &CpuInventory::plain(&[0, 1]))
    }

    #[test]
    fn defaults_lock_touched_pages_ask_zero_latency_and_load_every_cpu() {
        let s = system_of(RunInput::default()).unwrap();
        assert_eq!(s.memory_lock, MemoryLockPlan::Touched);
        assert_eq!(s.dma_latency_us, Some(0));
        assert_eq!(s.load_cpus, [0, 1]);
        assert_eq!(s.load_dir, None);
    }

    #[test]
    fn no_tune_leaves_dma_alone_and_no_mlock_wins() {
        let s = system_of(RunInput {
            no_tune: true,
            no_mlock: true,
            mlock_all: true,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.dma_latency_us, None);
        assert_eq!(s.memory_lock, MemoryLockPlan::None);
    }

    #[test]
    fn bad_values_name_their_flag() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let cases = [
            (
                RunInput {
                    dma_latency_us: -1,
                    ..Default::default()
                },
                "--dma-latency",
            ),
            (
                RunInput {
                    load_cpus: Some("9".into()),
                    ..Default::default()
                },
                "--load-cpus",
            ),
            (
                RunInput {
                    load_dir: Some(file.path().to_path_buf()),
                    ..Default::default()
                },
                "--load-dir",
            ),
        ];
        for (input, start) in cases {
            let e = system_of(input).unwrap_err();
            assert!(e.to_string().starts_with(start), "{start}: {e}");
        }
    }
}

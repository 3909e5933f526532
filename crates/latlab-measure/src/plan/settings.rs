//! The settings every phase's probe is built with: where it runs, how it sleeps, what
//! its recorder keeps. Those only some probes use keep their origin, so that a phase
//! whose probe ignores one can name where it was given.

use super::layered::{Layered, Origin};
use super::{ResolveError, Sources};
use crate::cpus::CpuInventory;
use latlab_model::run::CpuChoice;
use latlab_model::spec::{ClockName, CpuSelection, SchedSpec};
use latlab_model::units::{parse_duration, Nanos};

/// The settings shared by every phase, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSettings {
    /// CPUs measured, one thread each unless a phase says how many.
    pub cpus: Vec<usize>,
    /// How they were chosen.
    pub cpu_choice: CpuChoice,
    /// CPUs partners may be placed on: those latlab was started on, and the measured
    /// ones.
    pub allowed_cpus: Vec<usize>,
    /// The measuring threads' policy.
    pub policy: Layered<SchedSpec>,
    /// The clock slept on and read.
    pub clock: Layered<ClockName>,
    /// Discarded span at the start of each phase.
    pub warm_up: Nanos,
    /// For the timer's hybrid sleep: how long before the deadline it spins.
    pub hybrid_margin: Layered<Nanos>,
    /// Timer slack of the measuring threads (`None` = as inherited), in ns.
    pub timer_slack: Option<u64>,
    /// Stop at the first sample over this.
    pub breaktrace: Layered<Option<Nanos>>,
    /// Keep every sample above this.
    pub spike: Option<Nanos>,
    /// How many samples above `spike` each thread keeps.
    pub spike_capacity: usize,
    /// How many of the largest samples each thread keeps.
    pub top: usize,
    /// The timeline's interval.
    pub interval: Nanos,
}

/// The shared settings from the flags, then the scenario's top level and `[timer]`.
pub fn resolve(sources: &Sources, cpus: &CpuInventory) -> Result<SharedSettings, ResolveError> {
    let (input, sn, timer) = (sources.input, sources.name(), &sources.scenario.timer);
    let (measured, cpu_choice) = measured_cpus(sources, cpus)?;
    let policy = Layered::pick(
        "--priority",
        input.priority.as_deref(),
        sn,
        &[("timer.priority", timer.priority.as_deref())],
    )
    .or("f:95")
    .parse_with(SchedSpec::parse)?;
    let clock = Layered::pick(
        "--clock",
        input.clock.as_deref(),
        sn,
        &[("timer.clock", timer.clock.as_deref())],
    )
    .or("monotonic")
    .parse_with(ClockName::parse)?;
    let warm_up = Layered::pick(
        "--warm-up",
        input.warm_up.as_deref(),
        sn,
        &[("warm_up", sources.scenario.warm_up.as_deref())],
    )
    .or("0")
    .parse_with(parse_duration)?;
    let hybrid_margin = Layered::pick(
        "--hybrid-margin",
        input.hybrid_margin.as_deref(),
        sn,
        &[("timer.hybrid_margin", timer.hybrid_margin.as_deref())],
    )
    .or("50us")
    .parse_with(parse_duration)?;
    let timer_slack = timer_slack(sources)?;
    let Recording {
        breaktrace,
        spike,
        interval,
        top,
    } = recording(sources)?;
    if input.spike_nodes > 1_000_000 {
        return Err(
            Origin::flag("--spike-nodes").out_of_range("keep at most 1000000 spikes per thread")
        );
    }
    // Partners go where latlab was started (its affinity: a `taskset` the user chose,
    // the housekeeping CPUs of an isolating kernel) and on the measured CPUs.
    let mut allowed_cpus: Vec<usize> = cpus
        .affinity
        .iter()
        .chain(&measured)
        .copied()
        .filter(|c| cpus.usable.contains(c))
        .collect();
    allowed_cpus.sort_unstable();
    allowed_cpus.dedup();
    Ok(SharedSettings {
        cpus: measured,
        cpu_choice,
        allowed_cpus,
        policy,
        clock,
        warm_up: warm_up.value,
        hybrid_margin,
        timer_slack,
        breaktrace,
        spike,
        spike_capacity: input.spike_nodes,
        top,
        interval,
    })
}

/// The CPUs measured and how they were chosen: at least one, each one this process may
/// be pinned to; when none are named, those [`CpuInventory::default_cpus`] gives.
fn measured_cpus(
    sources: &Sources,
    inventory: &CpuInventory,
) -> Result<(Vec<usize>, CpuChoice), ResolveError> {
    let named = Layered::pick(
        "--cpus",
        sources.input.cpus.as_deref(),
        sources.name(),
        &[("cpus", sources.scenario.cpus.as_deref())],
    )
    .parse_with(CpuSelection::parse)?;
    let (cpus, choice) = inventory
        .resolve(named.value.as_ref())
        .map_err(|e| named.origin.invalid(e))?;
    if cpus.is_empty() {
        return Err(named.refuse("no CPU selected"));
    }
    Ok((cpus, choice))
}

/// The measuring threads' timer slack, at most what the kernel's sleeps tolerate.
fn timer_slack(sources: &Sources) -> Result<Option<u64>, ResolveError> {
    let slack = Layered::pick(
        "--timer-slack",
        sources.input.timer_slack.as_deref(),
        sources.name(),
        &[(
            "timer.timer_slack",
            sources.scenario.timer.timer_slack.as_deref(),
        )],
    )
    .parse_with(parse_duration)?;
    let max_slack = Nanos(latlab_rt::slack::MAX_TIMER_SLACK_NS as i64);
    if slack.value.is_some_and(|n| n > max_slack) {
        return Err(slack.refuse(format!(
            "give at most {max_slack}: the kernel may delay every sleep by the slack"
        )));
    }
    Ok(slack.value.map(|n| n.0 as u64))
}

/// What the recorders keep.
struct Recording {
    breaktrace: Layered<Option<Nanos>>,
    spike: Option<Nanos>,
    interval: Nanos,
    top: usize,
}

/// What the recorders keep: the break-trace limit, the spike threshold, the timeline's
/// interval, the top-K.
fn recording(sources: &Sources) -> Result<Recording, ResolveError> {
    let (input, sn, timer) = (sources.input, sources.name(), &sources.scenario.timer);
    let breaktrace = Layered::pick(
        "--breaktrace",
        input.breaktrace.as_deref(),
        sn,
        &[("timer.breaktrace", timer.breaktrace.as_deref())],
    )
    .parse_with(parse_duration)?;
    let spike = Layered::pick(
        "--spike",
        input.spike.as_deref(),
        sn,
        &[("timer.spike", timer.spike.as_deref())],
    )
    .parse_with(parse_duration)?;
    let interval = Layered::pick(
        "--interval",
        input.interval.as_deref(),
        sn,
        &[("timer.interval", timer.interval.as_deref())],
    )
    .or("1s")
    .parse_with(parse_duration)?;
    if interval.value < Nanos::MILLISECOND {
        return Err(interval.refuse("the timeline interval must be at least 1ms"));
    }
    let top = Layered::pick("--top", input.top, sn, &[("timer.top", timer.top)]).or(10);
    if top.value > 1_000 {
        return Err(top.refuse("keep at most 1000 spikes per thread"));
    }
    // Explaining needs spikes to explain: without --spike, every sample above a default,
    // and never above the break-trace limit, so the sample that stops the run is one.
    let spike = match (spike.value, &input.explain) {
        (None, Some(_)) => Some(
            breaktrace
                .value
                .map_or(super::EXPLAIN_SPIKE_DEFAULT, |limit| {
                    limit.min(super::EXPLAIN_SPIKE_DEFAULT)
                }),
        ),
        (value, _) => value,
    };
    Ok(Recording {
        breaktrace,
        spike,
        interval: interval.value,
        top: top.value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{scenarios, RunInput};

    fn settings_of(input: RunInput) -> Result<SharedSettings, ResolveError> {
        let scenario = scenarios::none();
        resolve(
            &Sources {
                input: &input,
                scenario: &scenario,
            },
            &CpuInventory::plain(&[0, 1]),
        )
    }

    #[test]
    fn defaults_are_every_cpu_fifo_95_monotonic_top_ten_one_second_timeline() {
        let s = settings_of(RunInput::default()).unwrap();
        assert_eq!(s.cpus, [0, 1]);
        assert_eq!(s.policy.value, SchedSpec::Fifo { priority: 95 });
        assert!(!s.policy.origin.is_given());
        assert_eq!(s.clock.value, ClockName::Monotonic);
        assert_eq!(s.hybrid_margin.value, Nanos(50_000));
        assert_eq!((s.top, s.interval), (10, Nanos::from_secs(1)));
        assert_eq!(
            (s.spike, s.breaktrace.value, s.timer_slack),
            (None, None, None)
        );
    }

    #[test]
    fn a_scenarios_timer_table_is_read_and_named_in_errors() {
        let mut scenario = scenarios::none();
        scenario.name = "s".to_string();
        scenario.timer.clock = Some("boottime".to_string());
        scenario.timer.top = Some(5000);
        let input = RunInput::default();
        let sources = Sources {
            input: &input,
            scenario: &scenario,
        };
        let e = resolve(&sources, &CpuInventory::plain(&[0, 1])).unwrap_err();
        assert!(
            e.to_string().starts_with("s: timer.top: keep at most"),
            "{e}"
        );
        scenario.timer.top = None;
        let sources = Sources {
            input: &input,
            scenario: &scenario,
        };
        let s = resolve(&sources, &CpuInventory::plain(&[0, 1])).unwrap();
        assert_eq!(s.clock.value, ClockName::Boottime);
        assert_eq!(s.clock.origin.to_string(), "s: timer.clock");
    }

    #[test]
    fn out_of_range_values_name_their_flag() {
        let cases = [
            (
                RunInput {
                    cpus: Some("7".into()),
                    ..Default::default()
                },
                "--cpus: CPU 7",
            ),
            (
                RunInput {
                    interval: Some("10us".into()),
                    ..Default::default()
                },
                "--interval",
            ),
            (
                RunInput {
                    timer_slack: Some("2s".into()),
                    ..Default::default()
                },
                "--timer-slack",
            ),
            (
                RunInput {
                    spike_nodes: 2_000_000,
                    ..Default::default()
                },
                "--spike-nodes",
            ),
            (
                RunInput {
                    top: Some(5000),
                    ..Default::default()
                },
                "--top",
            ),
        ];
        for (input, start) in cases {
            let e = settings_of(input).unwrap_err();
            assert!(e.to_string().starts_with(start), "{start}: {e}");
        }
    }
}

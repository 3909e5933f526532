//! The phases: one per scenario phase (a run without a scenario has one, `main`), or
//! one per `--probe` for each of them; each with its period, duration, threads, loads,
//! and its probe, built now so that a bad setting is refused before anything runs.

use super::layered::{Layered, Origin};
use super::settings::SharedSettings;
use super::{loads, PhasePlan, ResolveError, Sources};
use crate::breaktrace::Tripwire;
use crate::load::LoadSpec;
use crate::probe::catalogue::{self, ProbeSpec};
use crate::probe::info::{BuildError, PlanError, ProbeInfo, ProbeSetup, Setting};
use crate::probe::Site;
use crate::runner::RunRequest;
use latlab_model::scenario::PhaseSection;
use latlab_model::spec::TimerMethod;
use latlab_model::units::{parse_duration, Nanos};
use std::sync::Arc;

/// Shortest period accepted: below it no timer method can keep up and the loop would
/// only count missed periods.
pub const MIN_PERIOD: Nanos = Nanos(1_000);
/// Longest period accepted.
pub const MAX_PERIOD: Nanos = Nanos(3_600_000_000_000);

/// A phase as the scenario (or the lack of one) and `--probe` name it.
#[derive(Debug, Clone)]
struct Section {
    /// The scenario's phase, renamed after its probe when `--probe` splits it.
    section: PhaseSection,
    /// The probe named for it, and where; `None` = the default probe.
    probe: Option<(ProbeSpec, Origin)>,
}

/// Every phase, in order, resolved and with its probe built.
pub fn resolve(
    sources: &Sources,
    shared: &SharedSettings,
    extra_loads: &[LoadSpec],
) -> Result<Vec<PhasePlan>, ResolveError> {
    sections(sources)?
        .iter()
        .map(|section| phase(sources, shared, extra_loads, section))
        .collect()
}

/// The scenario's phases; each `--probe` is a phase of its own, run with every phase
/// section's settings.
fn sections(sources: &Sources) -> Result<Vec<Section>, ResolveError> {
    let (sn, phases) = (sources.name(), &sources.scenario.phases);
    let flagged = Origin::flag("--probe");
    let probe_flags = sources
        .input
        .probes
        .iter()
        .map(|p| catalogue::parse(p).map_err(|e| flagged.invalid(e)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut sections = Vec::new();
    for section in phases {
        if probe_flags.is_empty() {
            let origin = Origin::field(sn, format!("phase {}: probe", section.name));
            let probe = match &section.probe {
                None => None,
                Some(text) => Some((
                    catalogue::parse(text).map_err(|e| origin.invalid(e))?,
                    origin,
                )),
            };
            sections.push(Section {
                section: section.clone(),
                probe,
            });
            continue;
        }
        for spec in &probe_flags {
            let mut named = section.clone();
            named.name = match phases.len() {
                1 => spec.to_string(),
                _ => format!("{}/{spec}", section.name),
            };
            sections.push(Section {
                section: named,
                probe: Some((spec.clone(), flagged.clone())),
            });
        }
    }
    Ok(sections)
}

/// One phase, resolved, its probe built.
fn phase(
    sources: &Sources,
    shared: &SharedSettings,
    extra_loads: &[LoadSpec],
    Section { section, probe }: &Section,
) -> Result<PhasePlan, ResolveError> {
    let method = method(sources, section)?;
    let period = period(sources, section)?;
    let duration = duration(sources, section, period.value)?;
    let cpus = placements(sources, section, &shared.cpus)?;
    let loads = loads::of_phase(sources.name(), section, extra_loads)?;
    // Without a probe named, the phase measures the default one (the timer), with the
    // scenario's method; a named probe's method is its parameter, or the flag.
    let (spec, spec_origin, method_param) = match probe {
        Some((spec, origin)) => (
            spec.clone(),
            origin.clone(),
            sources.input.method.as_deref(),
        ),
        None => (default_probe(), Origin::Default("--probe"), method.value),
    };
    let info = spec.info();
    refuse_unhonoured(
        info,
        [
            (Setting::Period, &period.origin),
            (Setting::Clock, &shared.clock.origin),
            (Setting::Method, &method.origin),
            (Setting::HybridMargin, &shared.hybrid_margin.origin),
            (Setting::Breaktrace, &shared.breaktrace.origin),
        ],
    )?;
    let mut params = spec.params.clone();
    if let (Some(method), true) = (method_param, info.honours(Setting::Method)) {
        // --method is short for the method parameter.
        params.insert("method".to_string(), method.to_string());
    }
    let spec = ProbeSpec { params, ..spec };
    let setup = setup_of(shared, &spec, period.value, duration, &cpus);
    let probe = info.prepare(&setup).map_err(|source| {
        let phase_origins = (&period.origin, &method.origin);
        ResolveError::Probe {
            origin: origin_of_fault(&source, shared, phase_origins, &spec_origin),
            source: Box::new(source),
        }
    })?;
    // A kernel tracer measures a CPU with its own thread and one buffer: two of
    // latlab's workers on a CPU would split what it wrote.
    let once_each = cpus.iter().enumerate().all(|(i, c)| !cpus[..i].contains(c));
    if probe.site() == Site::Elsewhere && !once_each {
        return Err(
            Origin::field(sources.name(), format!("phase {}: threads", section.name)).out_of_range(
                format!(
                    "the {} probe measures each CPU once, with the kernel's own thread: give at \
             most {} thread(s), one a measured CPU, or leave threads out",
                    info.name,
                    shared.cpus.len()
                ),
            ),
        );
    }
    Ok(PhasePlan {
        request: RunRequest {
            cpus,
            policy: shared.policy.value,
            timer_slack_ns: shared.timer_slack,
            duration,
            warm_up: shared.warm_up,
            phase: section.name.clone(),
            breaktrace: setup.breaktrace.clone(),
            feeds: Vec::new(),
            checkpoint: None,
            telemetry: (!sources.input.no_telemetry).then_some(shared.interval),
        },
        spec,
        setup,
        probe,
        loads,
    })
}

/// What the phase's probe is built from.
fn setup_of(
    shared: &SharedSettings,
    spec: &ProbeSpec,
    period: Nanos,
    duration: Option<Nanos>,
    placements: &[usize],
) -> ProbeSetup {
    let mut measured_cpus = placements.to_vec();
    measured_cpus.sort_unstable();
    measured_cpus.dedup();
    ProbeSetup {
        measured_cpus,
        params: spec.params.clone(),
        period,
        span: duration.map(|d| Nanos(d.0 + shared.warm_up.0)),
        policy: shared.policy.value,
        allowed_cpus: shared.allowed_cpus.clone(),
        clock: shared.clock.value,
        hybrid_margin: shared.hybrid_margin.value,
        timer_slack: shared.timer_slack,
        spike_threshold: shared.spike,
        spike_capacity: shared.spike_capacity,
        top_spikes: shared.top,
        timeline_interval: shared.interval,
        breaktrace: shared
            .breaktrace
            .value
            .map(|limit| Arc::new(Tripwire::new(limit))),
    }
}

/// Where the value a probe could not be built with came from: the setting at fault
/// (`phase`: the phase's period and method), or where the probe was named.
fn origin_of_fault(
    fault: &PlanError,
    shared: &SharedSettings,
    (period, method): (&Origin, &Origin),
    probe: &Origin,
) -> Origin {
    let setting = match fault {
        PlanError::Policy { .. } => return shared.policy.origin.clone(),
        PlanError::Build(BuildError::Setting { setting, .. }) => *setting,
        PlanError::Build(_) => return probe.clone(),
    };
    let origin = match setting {
        Setting::Clock => &shared.clock.origin,
        Setting::HybridMargin => &shared.hybrid_margin.origin,
        Setting::Period => period,
        Setting::Method => method,
        Setting::Breaktrace => probe,
    };
    origin.clone()
}

/// The probe a phase measures when none is named: the first of the catalogue.
fn default_probe() -> ProbeSpec {
    catalogue::parse(catalogue::CATALOGUE[0].name)
        .expect("the catalogue's first probe parses by its name")
}

/// The timer's sleep method: `--method`, else the phase's, else `[timer]`'s; checked
/// even where the phase's probe is not the timer, so that a typo is named as one.
fn method<'a>(
    sources: &'a Sources,
    section: &'a PhaseSection,
) -> Result<Layered<Option<&'a str>>, ResolveError> {
    let phase_field = format!("phase {}: method", section.name);
    let method = Layered::pick(
        "--method",
        sources.input.method.as_deref(),
        sources.name(),
        &[
            (&phase_field, section.method.as_deref()),
            ("timer.method", sources.scenario.timer.method.as_deref()),
        ],
    );
    if let Some(text) = method.value {
        TimerMethod::parse(text).map_err(|e| method.origin.invalid(e))?;
    }
    Ok(method)
}

/// The probe's cycle: `--period`, else the phase's, else `[timer]`'s, else 1 ms.
fn period(sources: &Sources, section: &PhaseSection) -> Result<Layered<Nanos>, ResolveError> {
    let phase_field = format!("phase {}: period", section.name);
    let period = Layered::pick(
        "--period",
        sources.input.period.as_deref(),
        sources.name(),
        &[
            (&phase_field, section.period.as_deref()),
            ("timer.period", sources.scenario.timer.period.as_deref()),
        ],
    )
    .or("1ms")
    .parse_with(|text| {
        // A bare 1-99 is cyclictest's `-p PRIO` habit, not a period.
        parse_duration(text).map_err(|e| match text.parse::<u8>() {
            Ok(p @ 1..=99) => format!(
                "{e}; if {p} is a priority, as cyclictest's -p takes, write -P f:{p} (or \
                 `latlab cyclictest -p {p} ...` for cyclictest's flags)"
            ),
            _ => e.to_string(),
        })
    })?;
    let value = period.value;
    if value < MIN_PERIOD {
        return Err(period.refuse(format!(
            "{value} is too short: the shortest period is {MIN_PERIOD}"
        )));
    }
    if value > MAX_PERIOD {
        return Err(period.refuse(format!("{value} is too long: the longest period is 1 h")));
    }
    Ok(period)
}

/// How long the phase measures (`None` = until stopped): `--duration`, else the phase's
/// `periods` or `duration`, else the scenario's, else 30 s. At least one period.
fn duration(
    sources: &Sources,
    section: &PhaseSection,
    period: Nanos,
) -> Result<Option<Nanos>, ResolveError> {
    let sn = sources.name();
    let field = |key: &str| Origin::field(sn, format!("phase {}: {key}", section.name));
    let text = |origin: Origin, text: &str| {
        Layered {
            value: text,
            origin,
        }
        .parse_with(parse_duration)
    };
    let duration = match (
        &sources.input.duration,
        section.periods,
        &section.duration,
        &sources.scenario.duration,
    ) {
        (Some(d), ..) => text(Origin::flag("--duration"), d)?,
        (None, Some(0), ..) => return Err(field("periods").out_of_range("give at least 1 period")),
        (None, Some(n), ..) => Layered {
            value: Nanos(period.0.saturating_mul(n as i64)),
            origin: field("periods"),
        },
        (None, None, Some(d), _) => text(field("duration"), d)?,
        (None, None, None, Some(d)) => text(Origin::field(sn, "duration"), d)?,
        (None, None, None, None) => Layered {
            value: Nanos::from_secs(30),
            origin: Origin::Default("--duration"),
        },
    };
    let d = duration.value;
    if d.0 == 0 {
        return Ok(None);
    }
    if d < period {
        return Err(duration.refuse(format!(
            "{d} is shorter than the period {period}: no sample would be taken; measure \
             for at least one period"
        )));
    }
    Ok(Some(d))
}

/// The measuring threads' CPUs: one per CPU, or the phase's `threads` placed
/// round-robin on them.
fn placements(
    sources: &Sources,
    section: &PhaseSection,
    cpus: &[usize],
) -> Result<Vec<usize>, ResolveError> {
    match section.threads {
        None => Ok(cpus.to_vec()),
        Some(0) | Some(1025..) => Err(Origin::field(
            sources.name(),
            format!("phase {}: threads", section.name),
        )
        .out_of_range("give 1 to 1024 threads")),
        Some(n) => Ok((0..n).map(|i| cpus[i % cpus.len()]).collect()),
    }
}

/// Refuses a setting, given by flag or by the scenario, that the phase's probe does not
/// use: it would be silently ignored.
fn refuse_unhonoured(info: &ProbeInfo, given: [(Setting, &Origin); 5]) -> Result<(), ResolveError> {
    let Some((setting, origin)) = given
        .into_iter()
        .find(|(setting, origin)| origin.is_given() && !info.honours(*setting))
    else {
        return Ok(());
    };
    let used: Vec<&str> = info.honours.iter().map(|s| s.flag()).collect();
    Err(ResolveError::Unhonoured {
        origin: origin.clone(),
        probe: info.name,
        setting,
        uses: if used.is_empty() {
            "none of the settings only some probes use".to_string()
        } else {
            used.join(", ")
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{scenarios, settings, RunInput};
    use latlab_model::scenario::Scenario;

    fn phases_of(input: &RunInput, scenario: &Scenario) -> Result<Vec<PhasePlan>, ResolveError> {
        let sources = Sources { input, scenario };
        let shared = settings::resolve(&sources, &crate::cpus::CpuInventory::plain(&[0, 1]))?;
        resolve(&sources, &shared, &[])
    }

    fn scenario(toml: &str) -> Scenario {
        Scenario::parse(&format!("name = \"s\"\ndescription = \"d\"\n{toml}"), "s").unwrap()
    }

    #[test]
    fn each_probe_flag_is_a_phase_of_each_scenario_phase() {
        let input = RunInput {
            probes: vec!["clock".into(), "noise".into()],
            ..Default::default()
        };
        let two = scenario("[[phase]]\nname = \"a\"\n[[phase]]\nname = \"b\"\n");
        let names: Vec<String> = phases_of(&input, &two)
            .unwrap()
            .into_iter()
            .map(|p| p.request.phase)
            .collect();
        assert_eq!(names.len(), 4);
        assert!(
            names[0].starts_with("a/clock") && names[3].starts_with("b/noise"),
            "{names:?}"
        );
        let one: Vec<String> = phases_of(&input, &scenarios::none())
            .unwrap()
            .into_iter()
            .map(|p| p.request.phase)
            .collect();
        assert!(
            one[0].starts_with("clock") && one[1].starts_with("noise"),
            "{one:?}"
        );
    }

    #[test]
    fn a_phases_period_and_periods_set_its_cycle_and_span() {
        let s = scenario(
            "duration = \"5s\"\n[timer]\nperiod = \"2ms\"\n\
             [[phase]]\nname = \"a\"\nperiod = \"4ms\"\nperiods = 10\n\
             [[phase]]\nname = \"b\"\nthreads = 3\n",
        );
        let phases = phases_of(&RunInput::default(), &s).unwrap();
        assert_eq!(phases[0].setup.period, Nanos(4_000_000));
        assert_eq!(phases[0].request.duration, Some(Nanos(40_000_000)));
        assert_eq!(phases[1].setup.period, Nanos(2_000_000));
        assert_eq!(phases[1].request.duration, Some(Nanos::from_secs(5)));
        assert_eq!(phases[1].request.cpus, [0, 1, 0]);
    }

    #[test]
    fn zero_duration_means_until_stopped() {
        let input = RunInput {
            duration: Some("0".into()),
            ..Default::default()
        };
        let phases = phases_of(&input, &scenarios::none()).unwrap();
        assert_eq!(phases[0].request.duration, None);
    }

    #[test]
    fn bad_values_name_their_flag_or_field() {
        let flag = |f: fn(&mut RunInput)| {
            let mut input = RunInput::default();
            f(&mut input);
            phases_of(&input, &scenarios::none())
                .unwrap_err()
                .to_string()
        };
        let cases = [
            (flag(|i| i.period = Some("100ns".into())), "--period: "),
            (flag(|i| i.period = Some("2h".into())), "--period: "),
            (
                flag(|i| {
                    i.duration = Some("1ms".into());
                    i.period = Some("10ms".into());
                }),
                "--duration: ",
            ),
            (flag(|i| i.method = Some("sleepy".into())), "--method: "),
            (
                flag(|i| i.priority = Some("d:2ms:1ms".into())),
                "--priority: ",
            ),
            (
                flag(|i| {
                    i.method = Some("timerfd".into());
                    i.clock = Some("tai".into());
                }),
                "--clock: ",
            ),
            (
                flag(|i| {
                    i.method = Some("hybrid".into());
                    i.hybrid_margin = Some("2ms".into());
                }),
                "--hybrid-margin: ",
            ),
        ];
        for (message, start) in &cases {
            assert!(message.starts_with(start), "{start}: {message}");
        }
        let field = |toml: &str| {
            phases_of(&RunInput::default(), &scenario(toml))
                .unwrap_err()
                .to_string()
        };
        assert!(field("[[phase]]\nname = \"x\"\nperiods = 0\n")
            .starts_with("s: phase x: periods: give at least 1 period"));
        assert!(
            field("[[phase]]\nname = \"x\"\nthreads = 0\n").starts_with("s: phase x: threads: ")
        );
        assert!(field("[[phase]]\nname = \"x\"\nprobe = \"nosuch\"\n")
            .starts_with("s: phase x: probe: "));
        assert!(
            field("[timer]\nmethod = \"sleepy\"\n[[phase]]\nname = \"x\"\n")
                .starts_with("s: timer.method: ")
        );
    }

    #[test]
    fn a_flag_the_probe_does_not_use_is_refused_naming_both() {
        let input = RunInput {
            probes: vec!["noise".into()],
            method: Some("rel".into()),
            ..Default::default()
        };
        let e = phases_of(&input, &scenarios::none()).unwrap_err();
        assert!(matches!(
            e,
            ResolveError::Unhonoured {
                probe: "noise",
                setting: Setting::Method,
                ..
            }
        ));
        assert!(
            e.to_string()
                .starts_with("--method: probe noise does not use --method: leave it out"),
            "{e}"
        );
    }

    #[test]
    fn a_scenarios_timer_setting_its_phases_probe_ignores_is_refused() {
        let cases = [
            (
                "[timer]\nmethod = \"rel\"\n",
                "noise",
                "s: timer.method: ",
                Setting::Method,
            ),
            (
                "[timer]\nclock = \"boottime\"\n",
                "clock",
                "s: timer.clock: ",
                Setting::Clock,
            ),
            (
                "[timer]\nhybrid_margin = \"20us\"\n",
                "msg",
                "s: timer.hybrid_margin: ",
                Setting::HybridMargin,
            ),
            (
                "[timer]\nperiod = \"2ms\"\n",
                "noise",
                "s: timer.period: ",
                Setting::Period,
            ),
        ];
        for (timer, probe, start, refused) in cases {
            let s = scenario(&format!(
                "{timer}[[phase]]\nname = \"x\"\nprobe = \"{probe}\"\n"
            ));
            let e = phases_of(&RunInput::default(), &s).unwrap_err();
            assert!(
                matches!(e, ResolveError::Unhonoured { setting, .. } if setting == refused),
                "{e}"
            );
            let message = e.to_string();
            assert!(message.starts_with(start), "{message}");
            assert!(
                message.contains(&format!("probe {probe} does not use")),
                "{message}"
            );
            assert!(message.contains("remove it from the scenario"), "{message}");
        }
        // The same setting in a phase measured by the timer is used, not refused.
        let s = scenario("[timer]\nmethod = \"rel\"\n[[phase]]\nname = \"x\"\n");
        let phases = phases_of(&RunInput::default(), &s).unwrap();
        assert_eq!(phases[0].spec.to_string(), "timer:method=rel");
    }

    #[test]
    fn a_phases_own_method_its_probe_ignores_is_refused_naming_the_phase() {
        let s = scenario("[[phase]]\nname = \"x\"\nprobe = \"sem\"\nmethod = \"spin\"\n");
        let e = phases_of(&RunInput::default(), &s).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("s: phase x: method: probe sem does not use --method"),
            "{e}"
        );
    }
}

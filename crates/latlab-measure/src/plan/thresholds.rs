//! The limits a run is judged by: the scenario's, with those the flags give replacing
//! its limit on the same metric.

use super::layered::Origin;
use super::{ResolveError, RunInput};
use latlab_model::scenario::Scenario;
use latlab_model::threshold::Threshold;

/// The scenario's limits, then the flags'. A metric limited twice in one place is
/// refused: which of the two was meant cannot be guessed.
pub fn resolve(input: &RunInput, scenario: &Scenario) -> Result<Vec<Threshold>, ResolveError> {
    let from_file = from_scenario(scenario)?;
    let from_flags = from_flags(input)?;
    for given in [&from_file, &from_flags] {
        refuse_twice_limited(given)?;
    }
    let mut thresholds: Vec<Threshold> = from_file
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| !from_flags.iter().any(|(_, f)| f.metric == t.metric))
        .collect();
    thresholds.extend(from_flags.into_iter().map(|(_, t)| t));
    Ok(thresholds)
}

/// The scenario's `[thresholds]`, each with its field.
fn from_scenario(scenario: &Scenario) -> Result<Vec<(Origin, Threshold)>, ResolveError> {
    scenario
        .thresholds
        .iter()
        .map(|(metric, limit)| {
            let origin = Origin::field(&scenario.name, format!("thresholds.{metric}"));
            let threshold = Threshold::new(metric, limit).map_err(|e| origin.invalid(e))?;
            Ok((origin, threshold))
        })
        .collect()
}

/// `--max`, the percentile flags and `--threshold`, each with its flag.
fn from_flags(input: &RunInput) -> Result<Vec<(Origin, Threshold)>, ResolveError> {
    let mut from_flags = Vec::new();
    if let Some(max) = &input.max {
        let origin = Origin::flag("--max");
        let threshold = Threshold::new("max", max).map_err(|e| origin.invalid(e))?;
        from_flags.push((origin, threshold));
    }
    for t in &input.percentile_limits {
        let origin = Origin::flag(format!("--{}", t.split('=').next().unwrap_or("threshold")));
        let threshold = Threshold::parse(t).map_err(|e| origin.invalid(e))?;
        from_flags.push((origin, threshold));
    }
    for t in &input.thresholds {
        let threshold = Threshold::parse(t).map_err(|e| Origin::flag("--threshold").invalid(e))?;
        from_flags.push((Origin::flag(format!("--threshold {t}")), threshold));
    }
    Ok(from_flags)
}

/// Refuses a second limit on a metric among limits given in one place.
fn refuse_twice_limited(given: &[(Origin, Threshold)]) -> Result<(), ResolveError> {
    for (i, (origin, threshold)) in given.iter().enumerate() {
        if let Some((first, _)) = given[..i]
            .iter()
            .find(|(_, t)| t.metric == threshold.metric)
        {
            return Err(ResolveError::LimitedTwice {
                origin: origin.clone(),
                first: first.clone(),
                metric: threshold.metric.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::scenarios;

    fn scenario_limiting(limits: &[(&str, &str)]) -> Scenario {
        let mut s = scenarios::none();
        s.name = "s".to_string();
        s.thresholds = limits
            .iter()
            .map(|(m, l)| (m.to_string(), l.to_string()))
            .collect();
        s
    }

    fn text(thresholds: &[Threshold]) -> Vec<String> {
        thresholds.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn thresholds_from_every_spelling() {
        let input = RunInput {
            max: Some("100us".into()),
            percentile_limits: vec!["p99=50us".into()],
            thresholds: vec!["mean=20us".into()],
            ..Default::default()
        };
        let t = resolve(&input, &scenarios::none()).unwrap();
        assert_eq!(text(&t), ["max <= 100 µs", "p99 <= 50 µs", "mean <= 20 µs"]);
    }

    #[test]
    fn a_flag_replaces_the_scenarios_limit_on_the_same_metric() {
        let s = scenario_limiting(&[("max", "100us"), ("p99", "20us")]);
        let input = RunInput {
            max: Some("5ms".into()),
            ..Default::default()
        };
        let t = resolve(&input, &s).unwrap();
        assert_eq!(text(&t), ["p99 <= 20 µs", "max <= 5 ms"]);
    }

    #[test]
    fn a_metric_limited_twice_in_one_place_is_refused_naming_both() {
        let s = scenario_limiting(&[("p99.9", "100us"), ("p99.90", "20us")]);
        let e = resolve(&RunInput::default(), &s).unwrap_err();
        assert!(e.to_string().contains("already limits p99.9"), "{e}");
        let input = RunInput {
            thresholds: vec!["p99.9=80us".into()],
            percentile_limits: vec!["p99.9=1ms".into()],
            ..Default::default()
        };
        let e = resolve(&input, &scenarios::none()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--threshold p99.9=80us: --p99.9 already limits p99.9: keep one of the two"
        );
    }

    #[test]
    fn a_bad_limit_names_its_field() {
        let s = scenario_limiting(&[("p999x", "1us")]);
        let e = resolve(&RunInput::default(), &s).unwrap_err();
        assert!(e.to_string().starts_with("s: thresholds.p999x: "), "{e}");
    }
}

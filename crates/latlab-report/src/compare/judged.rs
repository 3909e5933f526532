//! What `latlab compare` judges (`--metric`) and how much change it lets pass
//! (`--tolerance`).

use latlab_model::spec::SpecError;
use latlab_model::threshold::Metric;
use latlab_model::units::parse_duration;
use latlab_model::Nanos;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A figure two runs are judged on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judged {
    /// A latency figure: a percentile, the mean or the maximum.
    Latency(Metric),
    /// The missed-period rate: periods without a wake-up over the periods elapsed
    /// (`missed / (samples + missed)`).
    MissedRate,
    /// The spike rate: samples above a level per hour of measuring
    /// ([`latlab_model::rate`]); `None` until it is the base run's level.
    SpikeRate(Option<Nanos>),
}

impl Judged {
    /// What `--metric` says when none is given.
    pub const DEFAULT: Judged = Judged::Latency(Metric::Percentile(99.9));

    /// Parses `missed-rate` (or `missed`), `spike-rate` (above the base run's spike
    /// level) or `spike-rate:LEVEL` (`spike-rate:100us`), or a latency metric as
    /// [`Metric::parse`] reads it (`p99.9`, `mean`, `max`).
    pub fn parse(text: &str) -> Result<Judged, SpecError> {
        let lower = text.trim().to_ascii_lowercase();
        if let Some(level) = lower.strip_prefix("spike-rate:") {
            return match parse_duration(level) {
                Ok(level) if level.0 > 0 => Ok(Judged::SpikeRate(Some(level))),
                _ => Err(SpecError(format!(
                    "'{text}': give spike-rate:LEVEL with a latency above 0, e.g. spike-rate:100us"
                ))),
            };
        }
        match lower.as_str() {
            "missed-rate" | "missed" | "missed-periods" => Ok(Judged::MissedRate),
            "spike-rate" => Ok(Judged::SpikeRate(None)),
            _ => Metric::parse(text).map(Judged::Latency).map_err(|e| {
                SpecError(format!(
                    "{e}, or missed-rate (missed periods / periods), or spike-rate[:LEVEL] \
                     (samples above LEVEL per hour)"
                ))
            }),
        }
    }

    /// The figure as judged between `base` and later runs: a spike rate without its
    /// level takes the base run's ([`latlab_model::rate::level_of`]), so that both
    /// sides count above one level.
    pub fn for_base(self, base: &latlab_model::run::Run) -> Judged {
        match self {
            Judged::SpikeRate(None) => Judged::SpikeRate(Some(latlab_model::rate::level_of(base))),
            judged => judged,
        }
    }

    /// What the figure is called in a sentence.
    pub fn describe(&self) -> String {
        match self {
            Judged::Latency(metric) => metric.describe(),
            Judged::MissedRate => "the missed-period rate".to_string(),
            Judged::SpikeRate(Some(level)) => format!("the rate of samples above {level}"),
            Judged::SpikeRate(None) => "the rate of samples above the spike level".to_string(),
        }
    }
}

impl fmt::Display for Judged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Judged::Latency(metric) => metric.fmt(f),
            Judged::MissedRate => f.write_str("missed-rate"),
            Judged::SpikeRate(None) => f.write_str("spike-rate"),
            Judged::SpikeRate(Some(level)) => {
                // In the largest unit that keeps it whole, as --metric reads it back.
                let ns = level.0;
                let (value, unit) = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
                    .into_iter()
                    .find(|(scale, _)| ns % scale == 0)
                    .map_or((ns, "ns"), |(scale, unit)| (ns / scale, unit));
                write!(f, "spike-rate:{value}{unit}")
            }
        }
    }
}

impl Serialize for Judged {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// How much worse a new run may be before a significant difference is a regression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// A fraction of the base's value (`10%` is 0.1).
    Relative(f64),
    /// A latency (`5us`); a rate is then judged without tolerance.
    Absolute(Nanos),
}

impl Tolerance {
    /// No tolerance at all.
    pub const NONE: Tolerance = Tolerance::Relative(0.0);

    /// The tolerance of every verdict drawn without one given (`compare`, `report`,
    /// serve's comparison): 10 %, so that one pair of runs gets one verdict.
    pub const DEFAULT: Tolerance = Tolerance::Relative(0.10);

    /// [`DEFAULT`](Tolerance::DEFAULT) as `--tolerance` writes it.
    pub const DEFAULT_TEXT: &'static str = "10%";

    /// The highest a value may be, starting from `base`, before it is a regression;
    /// `latency` says whether the value is a latency (ns), which an absolute tolerance
    /// applies to.
    pub(crate) fn above(self, base: f64, latency: bool) -> f64 {
        match self {
            Tolerance::Relative(r) => base * (1.0 + r),
            Tolerance::Absolute(ns) if latency => base + ns.0 as f64,
            Tolerance::Absolute(_) => base,
        }
    }

    /// The lowest a value may be, starting from `base`, before it is an improvement.
    pub(crate) fn below(self, base: f64, latency: bool) -> f64 {
        match self {
            Tolerance::Relative(r) => base * (1.0 - r),
            Tolerance::Absolute(ns) if latency => base - ns.0 as f64,
            Tolerance::Absolute(_) => base,
        }
    }
}

impl FromStr for Tolerance {
    type Err = SpecError;

    /// Reads `10%` (relative) or a latency with its unit (`5us`); a bare number is
    /// refused, as `10` could mean 10 % or 1000 %. `0` means none.
    fn from_str(text: &str) -> Result<Tolerance, SpecError> {
        let t = text.trim();
        if let Some(percent) = t.strip_suffix('%') {
            return match percent.trim().parse::<f64>() {
                Ok(p) if (0.0..=1000.0).contains(&p) => Ok(Tolerance::Relative(p / 100.0)),
                _ => Err(SpecError(format!(
                    "'{text}' is not a percentage from 0% to 1000%: write e.g. 10%"
                ))),
            };
        }
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
            if t.parse::<f64>() == Ok(0.0) {
                return Ok(Tolerance::NONE);
            }
            return Err(SpecError(format!(
                "'{text}' has no unit: write {t}% for a relative tolerance, or a latency such \
                 as {t}us for an absolute one"
            )));
        }
        match parse_duration(t) {
            Ok(ns) if ns.0 >= 0 => Ok(Tolerance::Absolute(ns)),
            _ => Err(SpecError(format!(
                "'{text}' is not a tolerance: write a percentage (10%) or a latency with its \
                 unit (5us)"
            ))),
        }
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Relative(r) => write!(f, "{} %", (r * 1e4).round() / 100.0),
            Tolerance::Absolute(ns) => ns.fmt(f),
        }
    }
}

impl Serialize for Tolerance {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut t = s.serialize_struct("Tolerance", 2)?;
        match self {
            Tolerance::Relative(r) => {
                t.serialize_field("relative", r)?;
                t.serialize_field("absolute_ns", &None::<i64>)?;
            }
            Tolerance::Absolute(ns) => {
                t.serialize_field("relative", &None::<f64>)?;
                t.serialize_field("absolute_ns", &ns.0)?;
            }
        }
        t.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tolerance_needs_a_percent_sign_or_a_unit() {
        assert_eq!("10%".parse(), Ok(Tolerance::Relative(0.1)));
        assert_eq!(" 2.5 % ".parse(), Ok(Tolerance::Relative(0.025)));
        assert_eq!("5us".parse(), Ok(Tolerance::Absolute(Nanos(5_000))));
        assert_eq!("0".parse(), Ok(Tolerance::NONE));
        assert_eq!(Tolerance::DEFAULT_TEXT.parse(), Ok(Tolerance::DEFAULT));
        for bad in ["10", "0.1", "ten", "-5%", "-5us", "", "%"] {
            let err = bad.parse::<Tolerance>().unwrap_err().to_string();
            assert!(err.contains(&format!("'{bad}'")), "{bad}: {err}");
        }
        assert!("10"
            .parse::<Tolerance>()
            .unwrap_err()
            .to_string()
            .contains("write 10% for a relative tolerance, or a latency such as 10us"));
    }

    #[test]
    fn the_missed_period_rate_is_a_metric_by_name() {
        assert_eq!(Judged::parse("missed-rate").unwrap(), Judged::MissedRate);
        assert_eq!(Judged::parse("missed").unwrap(), Judged::MissedRate);
        assert_eq!(Judged::MissedRate.to_string(), "missed-rate");
        assert_eq!(
            Judged::parse("p99").unwrap(),
            Judged::Latency(Metric::Percentile(99.0))
        );
        let err = Judged::parse("p200").unwrap_err().to_string();
        assert!(err.contains("missed-rate"), "{err}");
    }

    #[test]
    fn an_absolute_tolerance_applies_to_latencies_only() {
        let t = Tolerance::Absolute(Nanos(5_000));
        assert_eq!(t.above(10_000.0, true), 15_000.0);
        assert_eq!(t.above(0.01, false), 0.01);
        assert_eq!(Tolerance::Relative(0.1).below(100.0, false), 90.0);
    }
}

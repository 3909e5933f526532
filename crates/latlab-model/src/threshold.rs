//! Pass/fail limits (`--max 100us`, `--p99 50us`, `--p99.99 80us`) and the verdict.

use crate::hist::{percentile_key, Percentile};
use crate::spec::SpecError;
use crate::units::{parse_duration, Nanos};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// What a threshold limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// The largest sample.
    Max,
    /// The mean.
    Mean,
    /// A percentile, 0 < p < 100 (p100 is `Max`).
    Percentile(f64),
}

impl Metric {
    /// Parses `max`, `mean`, `p99`, `p99.9`, `p99.999`, ...
    pub fn parse(text: &str) -> Result<Metric, SpecError> {
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "max" | "p100" => return Ok(Metric::Max),
            "mean" | "avg" => return Ok(Metric::Mean),
            _ => {}
        }
        let bad = || {
            SpecError(format!(
                "unknown metric '{text}': use max, mean, or a percentile such as p99, p99.9, p99.99"
            ))
        };
        let rank = t.strip_prefix('p').ok_or_else(bad)?;
        let p: f64 = rank.parse().map_err(|_| bad())?;
        if !(p > 0.0 && p < 100.0) {
            return Err(SpecError(format!(
                "percentile '{text}' is out of range: it must lie between p0 and p100"
            )));
        }
        // Results name a percentile by its key, six decimals at most: a finer one would
        // be stored as another (p99.99999999 as p100, which is the maximum).
        if percentile_key(p).parse::<f64>() != Ok(p) {
            return Err(SpecError(format!(
                "percentile '{text}' is finer than latlab records: give at most 6 decimals, \
                 e.g. p99.999999"
            )));
        }
        Ok(Metric::Percentile(p))
    }

    /// What the metric is called in a sentence: `the maximum`, `the mean`, `p99.9`.
    pub fn describe(&self) -> String {
        match self {
            Metric::Max => "the maximum".to_string(),
            Metric::Mean => "the mean".to_string(),
            Metric::Percentile(_) => self.to_string(),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Max => f.write_str("max"),
            Metric::Mean => f.write_str("mean"),
            Metric::Percentile(p) => write!(f, "p{}", percentile_key(*p)),
        }
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let text = String::deserialize(d)?;
        Metric::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A limit on one metric, applied to every stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The metric.
    pub metric: Metric,
    /// The largest acceptable value.
    pub limit_ns: Nanos,
}

impl Threshold {
    /// Parses `METRIC=DURATION`, e.g. `p99.9=80us`, `max=100us`.
    pub fn parse(text: &str) -> Result<Threshold, SpecError> {
        let (metric, limit) = text.split_once('=').ok_or_else(|| {
            SpecError(format!(
                "threshold '{text}' needs the form METRIC=LIMIT, e.g. p99.9=80us or max=100us"
            ))
        })?;
        Threshold::new(metric, limit)
    }

    /// Builds a threshold from a metric name and a limit with a unit.
    pub fn new(metric: &str, limit: &str) -> Result<Threshold, SpecError> {
        let metric = Metric::parse(metric)?;
        let limit_ns =
            parse_duration(limit).map_err(|e| SpecError(format!("limit for {metric}: {e}")))?;
        Ok(Threshold { metric, limit_ns })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} <= {}", self.metric, self.limit_ns)
    }
}

/// The outcome of judging a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every threshold held on every stream.
    Pass,
    /// Some threshold was exceeded (or a stream had no samples to judge).
    Fail,
    /// No threshold was exceeded, but some could not be judged: the figure is not
    /// known, or only a bound below the limit is.
    Undecided,
    /// No thresholds were set.
    None,
}

impl Status {
    /// The word a verdict is shown with: `PASS`, `FAIL`, `UNDECIDED`, `NO THRESHOLDS`.
    pub fn word(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Undecided => "UNDECIDED",
            Status::None => "NO THRESHOLDS",
        }
    }
}

/// One threshold judged on one stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The threshold.
    pub threshold: Threshold,
    /// Which stream (`cpu 1`), with its phase.
    pub stream: String,
    /// The observed value, or a lower bound of it (`null` when the stream had no
    /// samples, or its source lacked the figure).
    pub observed_ns: Option<Percentile>,
    /// Whether it held; `null` when that cannot be told (a bound below the limit, a
    /// figure the source lacked).
    pub passed: Option<bool>,
}

impl Check {
    /// Judges an observation against a limit.
    pub(crate) fn judge(observed: Option<Percentile>, samples: u64, limit: Nanos) -> Option<bool> {
        match observed {
            Some(Percentile::Exact(v)) => Some(v <= limit),
            // The value is above the bound: beyond the limit if the bound is.
            Some(Percentile::AtLeast { at_least_ns }) => (at_least_ns > limit).then_some(false),
            // Without samples nothing held; with samples the figure is unknown.
            None => (samples == 0).then_some(false),
        }
    }

    /// True when the check failed (not when it could not be judged).
    pub fn failed(&self) -> bool {
        self.passed == Some(false)
    }
}

/// The verdict of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Pass, fail, or none (no thresholds).
    pub status: Status,
    /// Every check made.
    pub checks: Vec<Check>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_thresholds() {
        let t = Threshold::parse("p99.9=80us").unwrap();
        assert_eq!(t.metric, Metric::Percentile(99.9));
        assert_eq!(t.limit_ns, Nanos(80_000));
        assert_eq!(Threshold::parse("max=1ms").unwrap().metric, Metric::Max);
        assert_eq!(t.to_string(), "p99.9 <= 80 µs");
        assert!(Threshold::parse("p99")
            .unwrap_err()
            .0
            .contains("METRIC=LIMIT"));
        assert!(Threshold::parse("p100.5=1us")
            .unwrap_err()
            .0
            .contains("range"));
        let fine = Threshold::parse("p99.99999999=1ms").unwrap_err().0;
        assert!(fine.contains("at most 6 decimals"), "{fine}");
        let t = Threshold::parse("p99.999999=1ms").unwrap();
        assert_eq!(t.metric.to_string(), "p99.999999");
        assert!(Threshold::parse("median=1us")
            .unwrap_err()
            .0
            .contains("unknown metric"));
        assert!(Threshold::parse("max=100")
            .unwrap_err()
            .0
            .contains("no unit"));
    }

    #[test]
    fn metric_serialises_as_text() {
        let json = serde_json::to_string(&Threshold::parse("p99.99=5us").unwrap()).unwrap();
        assert_eq!(json, r#"{"metric":"p99.99","limit_ns":5000}"#);
        let back: Threshold = serde_json::from_str(&json).unwrap();
        assert_eq!(back.metric, Metric::Percentile(99.99));
    }
}

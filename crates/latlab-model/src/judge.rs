//! Judging a Run's streams against its thresholds: the one place where the limits of
//! [`threshold`](crate::threshold) meet the figures of [`run`](crate::run), so that
//! neither module needs the other.

use crate::hist::{Edge, Percentile};
use crate::run::Stream;
use crate::threshold::{Check, Metric, Status, Threshold, Verdict};
use crate::units::Nanos;

impl Metric {
    /// Evaluates the metric on a stream: `None` when the stream has no samples or its
    /// source lacked the figure (an imported mean, a histogram). Reported percentiles
    /// come from its statistics; any other is computed from its histogram, decoded only
    /// then.
    pub fn observe(&self, stream: &Stream) -> Option<Percentile> {
        let stats = &stream.stats;
        match self {
            Metric::Max => stats.max_ns.map(Percentile::Exact),
            Metric::Mean => stats
                .mean_ns
                .map(|m| Percentile::Exact(Nanos(m.round() as i64))),
            Metric::Percentile(p) => match stats.percentile(*p) {
                Some(v) => Some(v),
                None => {
                    let (min, max) = (stats.min_ns?, stats.max_ns?);
                    stream
                        .decode_histogram()
                        .ok()??
                        // Thresholds judge latlab's own samples (imports have none).
                        .percentile_within(*p, min, max, Edge::Highest)
                }
            },
        }
    }
}

impl Verdict {
    /// Judges streams against thresholds.
    pub fn judge(thresholds: &[Threshold], streams: &[Stream]) -> Verdict {
        if thresholds.is_empty() {
            return Verdict {
                status: Status::None,
                checks: Vec::new(),
            };
        }
        let mut checks = Vec::new();
        for threshold in thresholds {
            for stream in streams {
                let observed = threshold.metric.observe(stream);
                checks.push(Check {
                    threshold: *threshold,
                    stream: format!("{} [{}]", stream.label(), stream.phase),
                    observed_ns: observed,
                    passed: Check::judge(observed, stream.samples, threshold.limit_ns),
                });
            }
        }
        let status = if checks.iter().any(Check::failed) {
            Status::Fail
        } else if checks.iter().any(|c| c.passed.is_none()) {
            Status::Undecided
        } else {
            Status::Pass
        };
        Verdict { status, checks }
    }
}

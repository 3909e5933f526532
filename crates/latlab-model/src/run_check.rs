//! What a Run document must hold to be read: the checks a Run file (from `latlab run
//! --json`, or edited, or damaged) passes before anything uses it, as strict as the
//! foreign formats' importers. Each failure names the field.

use crate::hist::HIGHEST_NS;
use crate::run::{percentile_key, Percentile, Run, RunFormatError, Stream, REPORTED_PERCENTILES};
use crate::Nanos;

/// How far a mean may lie outside the extremes: imported means are printed truncated or
/// rounded to whole µs.
const MEAN_SLACK_NS: f64 = 1_000.0;

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> RunFormatError {
    RunFormatError::Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

impl Run {
    /// Checks that the document is one latlab could have written: a run id of latlab's
    /// shape, RFC 3339 UTC times, and in every stream counts that add up (histogram
    /// total = samples) and statistics in order (min ≤ percentiles ≤ max, mean between).
    pub fn check(&self) -> Result<(), RunFormatError> {
        match self.published.as_ref() {
            Some(record) if crate::run::is_reference_id(&self.id, &record.name) => {}
            _ => check_id(&self.id)?,
        }
        let times = [
            ("started_at", self.started_at.as_deref()),
            ("ended_at", self.ended_at.as_deref()),
        ];
        for (field, time) in times {
            if let Some(t) = time {
                instant(field, t)?;
            }
        }
        if let (Some(start), Some(end)) = (&self.started_at, &self.ended_at) {
            if instant("ended_at", end)? < instant("started_at", start)? {
                return Err(invalid(
                    "ended_at",
                    format!("{end} is before started_at {start}"),
                ));
            }
        }
        for (i, phase) in self.phases.iter().enumerate() {
            if let Some(t) = &phase.started_at {
                instant(&format!("phases[{i}].started_at"), t)?;
            }
            if phase.elapsed_ns.is_some_and(|e| e.0 < 0) {
                return Err(invalid(format!("phases[{i}].elapsed_ns"), "is negative"));
            }
        }
        self.check_labels()?;
        if let Some(import) = &self.import {
            instant("import.imported_at", &import.imported_at)?;
        }
        for (i, stream) in self.streams.iter().enumerate() {
            check_stream(&format!("streams[{i}]"), stream)?;
        }
        Ok(())
    }

    /// The user's name, tags and note, as `latlab run` accepts them.
    fn check_labels(&self) -> Result<(), RunFormatError> {
        use crate::labels::{check_name, check_note, check_tag};
        if let Some(name) = &self.name {
            check_name(name).map_err(|e| invalid("name", e.to_string()))?;
        }
        for (key, value) in &self.tags {
            check_tag(key, value)
                .map_err(|e| invalid(format!("tags.{}", key.escape_debug()), e.to_string()))?;
        }
        if let Some(note) = &self.note {
            check_note(note).map_err(|e| invalid("note", e.to_string()))?;
        }
        Ok(())
    }
}

/// latlab's run ids: `20261121T001012Z-3f9a2c` (UTC start, 6 hex digits). Nothing else
/// may name a run: not `last`, not a path, not text with terminal escapes.
fn check_id(id: &str) -> Result<(), RunFormatError> {
    let shaped = crate::stamp::is_run_id(id);
    if shaped {
        Ok(())
    } else {
        Err(invalid(
            "id",
            format!(
                "{:?} is not a latlab run id (like 20261121T001012Z-3f9a2c)",
                id.chars().take(40).collect::<String>()
            ),
        ))
    }
}

/// An RFC 3339 UTC instant (`2026-11-21T00:10:12.345Z`), as seconds since the epoch.
fn instant(field: &str, text: &str) -> Result<std::time::SystemTime, RunFormatError> {
    humantime::parse_rfc3339(text).map_err(|_| {
        invalid(
            field,
            format!(
                "{:?} is not an RFC 3339 UTC time (like 2026-11-21T00:10:12.345Z)",
                text.chars().take(40).collect::<String>()
            ),
        )
    })
}

fn check_stream(at: &str, s: &Stream) -> Result<(), RunFormatError> {
    let field = |name: &str| format!("{at}.{name}");
    let st = &s.stats;
    if let Some(h) = &s.histogram {
        let decoded = h
            .decode()
            .map_err(|e| invalid(field("histogram.data"), e.to_string()))?;
        if h.total != decoded.len() || h.total != s.samples {
            return Err(invalid(
                field("samples"),
                format!(
                    "{} samples, but histogram.total is {} and the histogram holds {}",
                    s.samples,
                    h.total,
                    decoded.len()
                ),
            ));
        }
        let bounded = h.overflows.iter().map(|o| o.count).sum::<u64>() + h.clamped;
        if bounded > h.total || h.overflows.iter().any(|o| o.at_least_ns > HIGHEST_NS) {
            return Err(invalid(
                field("histogram"),
                "holds more clamped or overflowed samples than samples, or an overflow beyond 60 s",
            ));
        }
    }
    if s.early_wakes.is_some_and(|e| e > s.samples) {
        return Err(invalid(field("early_wakes"), "more than the samples"));
    }
    if !s.timeline.count.is_empty() && s.timeline.count.iter().sum::<u64>() != s.samples {
        return Err(invalid(
            field("timeline.count"),
            format!("adds up to other than the {} samples", s.samples),
        ));
    }
    let (min, max) = match (s.samples, st.min_ns, st.max_ns) {
        (0, None, None) if st.mean_ns.is_none() && st.percentiles_ns.is_empty() => return Ok(()),
        (0, ..) => {
            return Err(invalid(
                field("stats"),
                "figures for a stream without samples",
            ))
        }
        (_, Some(min), Some(max)) if min <= max => (min, max),
        (_, Some(min), Some(max)) => {
            return Err(invalid(
                field("stats.min_ns"),
                format!("{min} is above max_ns {max}"),
            ))
        }
        // A source without extremes (they are unknown) leaves nothing to order.
        _ => (Nanos(i64::MIN), Nanos(i64::MAX)),
    };
    if let Some(mean) = st.mean_ns {
        let (low, high) = (min.0 as f64 - MEAN_SLACK_NS, max.0 as f64 + MEAN_SLACK_NS);
        if !mean.is_finite() || mean < low || mean > high {
            return Err(invalid(
                field("stats.mean_ns"),
                format!("{mean} lies outside min_ns {min} and max_ns {max}"),
            ));
        }
    }
    if st.stddev_ns.is_some_and(|sd| !sd.is_finite() || sd < 0.0) {
        return Err(invalid(field("stats.stddev_ns"), "is not a deviation"));
    }
    let mut previous: Option<Nanos> = None;
    for key in st.percentiles_ns.keys() {
        if !REPORTED_PERCENTILES
            .iter()
            .any(|&p| percentile_key(p) == *key)
        {
            return Err(invalid(
                field("stats.percentiles_ns"),
                format!("'{key}' is not one of the reported percentiles"),
            ));
        }
    }
    for p in REPORTED_PERCENTILES {
        let Some(value) = st.percentile(p) else {
            continue;
        };
        let v = value.value();
        let out_of_order = match value {
            Percentile::Exact(v) => v < min || v > max,
            Percentile::AtLeast { at_least_ns } => at_least_ns > max,
        } || previous.is_some_and(|before| v < before);
        if out_of_order {
            return Err(invalid(
                field(&format!("stats.percentiles_ns.{}", percentile_key(p))),
                format!(
                    "{value} is out of order (min_ns {min}, max_ns {max}, the percentile \
                     before it {})",
                    previous.map_or("none".to_string(), |b| b.to_string())
                ),
            ));
        }
        previous = Some(v);
    }
    if s.spikes.top.iter().any(|t| t.value_ns > max) {
        return Err(invalid(field("spikes.top"), "a spike above max_ns"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_latlabs_shape() {
        assert!(check_id("20261121T001012Z-3f9a2c").is_ok());
        for bad in [
            "",
            "last",
            "../../etc/passwd",
            "20261121T001012Z-3F9A2C",
            "20261121T001012Z-3f9a2\u{1b}",
        ] {
            let e = check_id(bad).unwrap_err().to_string();
            assert!(e.starts_with("id: "), "{e}");
        }
    }

    #[test]
    fn only_a_reference_run_has_a_reference_id() {
        let mut run = crate::published::reference_run("rr-table4").unwrap();
        assert!(run.check().is_ok());
        let record = run.published.take();
        let e = run.check().unwrap_err().to_string();
        assert!(e.starts_with("id: \"ref:rr-table4\""), "{e}");
        run.published = record;
        for bad in ["ref:../x", "ref:RR", "ref:", "rr-table4"] {
            run.id = bad.to_string();
            run.published.as_mut().unwrap().name = bad.trim_start_matches("ref:").to_string();
            assert!(run.check().is_err(), "{bad}");
        }
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert!(instant("started_at", "2026-11-21T00:10:12.345Z").is_ok());
        let e = instant("started_at", "yesterday").unwrap_err().to_string();
        assert!(e.starts_with("started_at: \"yesterday\""), "{e}");
    }
}

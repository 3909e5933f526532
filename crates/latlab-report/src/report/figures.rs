//! The numbers every report kind shows, formatted once (microseconds with three
//! decimals, spans, CPU lists), and a run's streams with their decoded histograms.

use super::ReportError;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{Run, Stream};
use latlab_model::Nanos;

/// What a table cell says when a figure does not exist (a stream without samples).
pub(crate) const MISSING: &str = "–";

/// A latency in µs with three decimals, without its unit (tables carry it in the
/// header).
pub(crate) fn us(value: Option<Nanos>) -> String {
    value.map_or_else(
        || MISSING.to_string(),
        |v| format!("{:.3}", v.as_micros_f64()),
    )
}

/// A mean or standard deviation (ns, float) in µs with three decimals, without unit.
pub(crate) fn us_f64(value_ns: Option<f64>) -> String {
    value_ns.map_or_else(|| MISSING.to_string(), |v| format!("{:.3}", v / 1e3))
}

/// A latency with its unit: `12.345 µs`.
pub(crate) fn us_unit(value: Nanos) -> String {
    value.display_us()
}

/// A span in seconds with its unit: `5.017 s`.
pub(crate) fn seconds(value: Nanos) -> String {
    format!("{:.3} s", value.as_secs_f64())
}

/// A span for a title: seconds up to 2 min, then minutes up to 2 h, then hours.
pub(crate) fn span(value: Nanos) -> String {
    let secs = value.as_secs_f64();
    if secs < 120.0 {
        format!("{secs:.3} s")
    } else if secs < 7_200.0 {
        format!("{:.1} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3_600.0)
    }
}

/// `yes` or `NO` (capitals: a missing condition must stand out).
pub(crate) fn yes_no(value: bool) -> &'static str {
    if value {
        "yes"
    } else {
        "NO"
    }
}

/// A CPU list in the kernel's form: `0-3,5`.
pub(crate) fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    if parts.is_empty() {
        MISSING.to_string()
    } else {
        parts.join(",")
    }
}

/// The distinct values of `values` in first-seen order, joined by `, `.
pub(crate) fn distinct(values: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(", ")
}

/// What a report shows for a field an imported Run holds a stand-in for.
pub(crate) const UNKNOWN: &str = "unknown";

/// The fields of an imported Run that hold stand-ins because its source did not have
/// them (`host`, `streams[].policy`, ...): reports show them as unknown, not as values.
pub(crate) struct Unknowns<'a>(&'a Run);

impl<'a> Unknowns<'a> {
    /// The unknown fields of `run` (none for a Run latlab measured).
    pub fn of(run: &'a Run) -> Unknowns<'a> {
        Unknowns(run)
    }

    /// True when the field at `path` (`host.hz`, `streams[].policy`), or one holding it
    /// (`host`), is unknown.
    pub fn has(&self, path: &str) -> bool {
        self.0.is_unknown(path)
    }

    /// `value()`, or `unknown` when the field at `path` is.
    pub fn or(&self, path: &str, value: impl FnOnce() -> String) -> String {
        if self.has(path) {
            UNKNOWN.to_string()
        } else {
            value()
        }
    }
}

/// How long a run measured: its phases' spans added up (a stream's span when the run
/// has no phase record).
pub(crate) fn measured(run: &Run) -> Nanos {
    if run.phases.is_empty() {
        return run
            .streams
            .iter()
            .map(|s| s.elapsed_ns)
            .max()
            .unwrap_or_default();
    }
    Nanos(run.phases.iter().map(|p| p.elapsed_ns.0).sum())
}

/// A run's name in captions, legends and headings: id, host and scenario, each when
/// known.
pub(crate) fn run_label(run: &Run) -> String {
    let host = (!Unknowns::of(run).has("host.hostname")).then_some(&run.host.hostname);
    std::iter::once(&run.id)
        .chain(host)
        .chain(run.scenario.as_ref())
        .filter(|part| !part.is_empty())
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" · ")
}

/// One stream of a run, ready for tables and plots.
pub(crate) struct DecodedStream<'a> {
    /// The stream.
    pub stream: &'a Stream,
    /// Its name: `cpu 1`, with `[phase]` when the run has several phases.
    pub name: String,
    /// Its histogram, decoded.
    pub histogram: LatencyHistogram,
    /// Where its phase starts, from the start of the run (the phases' spans before it).
    pub offset: Nanos,
    /// Its palette index, the same in every table and plot of the run.
    pub colour: usize,
}

/// A run with its streams decoded.
pub(crate) struct DecodedRun<'a> {
    /// The run.
    pub run: &'a Run,
    /// Its streams, in the Run's order.
    pub streams: Vec<DecodedStream<'a>>,
    /// True when the run has several phases (stream names then carry the phase).
    pub phased: bool,
}

impl<'a> DecodedRun<'a> {
    /// Decodes every stream's histogram.
    pub fn decode(run: &'a Run) -> Result<DecodedRun<'a>, ReportError> {
        let phased = run.phases.len() > 1;
        let streams = run
            .streams
            .iter()
            .enumerate()
            .map(|(colour, stream)| {
                let name = if phased {
                    format!("{} [{}]", stream.label(), stream.phase)
                } else {
                    stream.label()
                };
                let histogram =
                    stream
                        .decode_histogram()
                        .map_err(|source| ReportError::Histogram {
                            run: run.id.clone(),
                            stream: format!("{} [{}]", stream.label(), stream.phase),
                            source,
                        })?;
                Ok(DecodedStream {
                    stream,
                    name,
                    histogram,
                    offset: phase_offset(run, &stream.phase),
                    colour,
                })
            })
            .collect::<Result<Vec<_>, ReportError>>()?;
        Ok(DecodedRun {
            run,
            streams,
            phased,
        })
    }
}

/// The start of phase `name` from the start of the run: the spans of the phases before
/// it (0 for an unknown phase).
fn phase_offset(run: &Run, name: &str) -> Nanos {
    let before = run.phases.iter().take_while(|p| p.name != name);
    let found = run.phases.iter().any(|p| p.name == name);
    if found {
        Nanos(before.map(|p| p.elapsed_ns.0).sum())
    } else {
        Nanos::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_compressed() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(cpu_list(&[4]), "4");
        assert_eq!(cpu_list(&[]), MISSING);
    }

    #[test]
    fn microseconds_have_three_decimals() {
        assert_eq!(us(Some(Nanos(2_176))), "2.176");
        assert_eq!(us(None), MISSING);
        assert_eq!(us_f64(Some(6_637.842)), "6.638");
        assert_eq!(us_unit(Nanos(82_047)), "82.047 µs");
        assert_eq!(seconds(Nanos(5_017_250_671)), "5.017 s");
        assert_eq!(span(Nanos(5_017_250_671)), "5.017 s");
        assert_eq!(span(Nanos::from_secs(600)), "10.0 min");
        assert_eq!(span(Nanos::from_secs(86_400)), "24.0 h");
    }

    #[test]
    fn unknown_fields_cover_what_they_hold() {
        let text = include_str!("../../../../docs/example-run.json");
        let mut run = Run::from_json(text).unwrap();
        run.import = Some(latlab_model::run::ImportRecord {
            format: "cyclictest-hist".into(),
            file: "hist.txt".into(),
            imported_at: run.started_at.clone(),
            lacks: vec![],
            unknown_fields: vec!["host".into(), "streams[].policy".into()],
        });
        let unknowns = Unknowns::of(&run);
        assert!(unknowns.has("host") && unknowns.has("host.hz"));
        assert!(!unknowns.has("hostname") && !unknowns.has("streams[].period_ns"));
        assert_eq!(
            unknowns.or("streams[].policy", || "fifo:95".into()),
            UNKNOWN
        );
        assert_eq!(unknowns.or("plan.cpus", || "0-1".into()), "0-1");
    }

    #[test]
    fn distinct_keeps_first_seen_order() {
        let values = ["abs", "rel", "abs"].into_iter().map(String::from);
        assert_eq!(distinct(values), "abs, rel");
    }
}

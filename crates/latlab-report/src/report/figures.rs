//! The numbers every report kind shows, formatted once (microseconds with three
//! decimals, spans, CPU lists), and a run's streams with their decoded histograms.

use super::ReportError;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{Percentile, Run, Stream};
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

/// A rate per hour to three significant digits, at most: `10800`, `12.3`, `0.0253`.
pub(crate) fn per_hour(value: f64) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    let digits = (2 - value.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{value:.digits$}")
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

/// What a report shows for a fact an imported Run's source did not have.
pub(crate) const UNKNOWN: &str = "unknown";

/// What a table cell shows for a figure an imported Run's source did not have.
pub(crate) const NOT_IN_SOURCE: &str = "?";

/// A fact, or `unknown` when the Run does not know it.
pub(crate) fn fact<T>(value: Option<T>, show: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| UNKNOWN.to_string(), show)
}

/// A table cell: the figure, or `?` when the Run's source did not have it.
pub(crate) fn cell<T>(value: Option<T>, show: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| NOT_IN_SOURCE.to_string(), show)
}

/// A statistic's cell for figures of `samples` samples (`None`: not counted): `value`;
/// `–` without samples (the statistic does not exist); `?` when it is not `known` (the
/// source lacked it).
pub(crate) fn stat(samples: Option<u64>, value: String, known: bool) -> String {
    match (samples, known) {
        (Some(0), _) => MISSING.to_string(),
        (_, false) => NOT_IN_SOURCE.to_string(),
        (_, true) => value,
    }
}

/// A percentile in µs with three decimals, without its unit: `12.345`, `≥ 400.000` for a
/// bound, `–` when there is none.
pub(crate) fn us_percentile(value: Option<Percentile>) -> String {
    value.map_or_else(
        || MISSING.to_string(),
        |v| format!("{}{}", v.prefix(), us(Some(v.value()))),
    )
}

/// How long a run measured: its phases' spans added up (a stream's span when the run
/// has no phase record); `None` when a span is not known.
pub(crate) fn measured(run: &Run) -> Option<Nanos> {
    if run.phases.is_empty() {
        return run.streams.iter().map(|s| s.elapsed_ns).max().flatten();
    }
    run.phases
        .iter()
        .map(|p| p.elapsed_ns)
        .sum::<Option<Nanos>>()
}

/// A run's name in captions, legends and headings: id, host and scenario, each when
/// known.
pub(crate) fn run_label(run: &Run) -> String {
    let host = run.host.as_ref().map(|h| &h.hostname);
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
    /// Its histogram, decoded (`None`: its source kept none).
    pub histogram: Option<LatencyHistogram>,
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
        let histograms = run
            .streams
            .iter()
            .map(|stream| {
                stream
                    .decode_histogram()
                    .map_err(|source| ReportError::Histogram {
                        run: run.id.clone(),
                        stream: format!("{} [{}]", stream.label(), stream.phase),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, ReportError>>()?;
        Ok(Self::with(run, histograms))
    }

    /// Names and places every stream without decoding a histogram (every
    /// [`DecodedStream::histogram`] is `None`), for what reads only the Run's own
    /// figures: the run summary. A decoded histogram holds every bucket up to the
    /// largest sample (over 100 KiB for a few milliseconds), which `latlab run` would
    /// otherwise add to its peak memory just to print a summary.
    pub fn figures_only(run: &'a Run) -> DecodedRun<'a> {
        Self::with(run, run.streams.iter().map(|_| None).collect())
    }

    /// The run with `histograms`, one per stream in order.
    fn with(run: &'a Run, histograms: Vec<Option<LatencyHistogram>>) -> DecodedRun<'a> {
        let phased = run.phases.len() > 1;
        let streams = run
            .streams
            .iter()
            .zip(histograms)
            .enumerate()
            .map(|(colour, (stream, histogram))| DecodedStream {
                stream,
                name: if phased {
                    format!("{} [{}]", stream.label(), stream.phase)
                } else {
                    stream.label()
                },
                histogram,
                offset: phase_offset(run, &stream.phase),
                colour,
            })
            .collect();
        DecodedRun {
            run,
            streams,
            phased,
        }
    }
}

/// The start of phase `name` from the start of the run: the spans of the phases before
/// it (0 for an unknown phase; only imported Runs, which have one phase, lack spans).
fn phase_offset(run: &Run, name: &str) -> Nanos {
    let before = run.phases.iter().take_while(|p| p.name != name);
    let found = run.phases.iter().any(|p| p.name == name);
    if found {
        Nanos(before.filter_map(|p| p.elapsed_ns).map(|e| e.0).sum())
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
    fn unknown_is_never_a_value() {
        assert_eq!(fact(None::<u64>, |v| v.to_string()), UNKNOWN);
        assert_eq!(cell(None::<u64>, |v| v.to_string()), NOT_IN_SOURCE);
        assert_eq!(cell(Some(0u64), |v| v.to_string()), "0");
        let bound = Percentile::AtLeast {
            at_least_ns: Nanos(400_000),
        };
        assert_eq!(us_percentile(Some(bound)), "≥ 400.000");
        assert_eq!(
            us_percentile(Some(Percentile::Exact(Nanos(2_176)))),
            "2.176"
        );
    }

    #[test]
    fn distinct_keeps_first_seen_order() {
        let values = ["abs", "rel", "abs"].into_iter().map(String::from);
        assert_eq!(distinct(values), "abs, rel");
    }
}

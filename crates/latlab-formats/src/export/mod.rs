//! Exports: a Run in the formats other tools read, one file per format behind one
//! trait (as hyperfine does it).

mod causes_csv;
mod csv;
mod cyclictest;
mod cyclictest_json;
mod json;
mod junit;
mod openmetrics;
mod series;

use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{Run, Stream};
use std::collections::BTreeMap;

pub use series::narrow;

/// Why a Run could not be exported.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExportError(pub String);

/// One output format.
pub trait Exporter {
    /// Its name on the command line.
    fn name(&self) -> &'static str;
    /// One line on what reads it.
    fn describe(&self) -> &'static str;
    /// The Run, as text in this format.
    fn export(&self, run: &Run) -> Result<String, ExportError>;
    /// Whether the format holds one series of wake-up latencies, one phase of one
    /// probe (cyclictest's formats): a Run of more is [`narrow`]ed first, or refused.
    fn holds_one_series(&self) -> bool {
        false
    }
}

/// Every format.
pub fn exporters() -> Vec<&'static dyn Exporter> {
    vec![
        &json::Json,
        &csv::Csv,
        &causes_csv::CausesCsv,
        &cyclictest::Cyclictest,
        &cyclictest_json::CyclictestJson,
        &openmetrics::OpenMetrics,
        &openmetrics::PrometheusText,
        &junit::Junit,
    ]
}

/// Looks a format up by name.
pub fn exporter(name: &str) -> Option<&'static dyn Exporter> {
    exporters().into_iter().find(|e| e.name() == name)
}

/// The Run's streams, refused when it has none: a file of no rows would read as a run
/// that measured nothing. `format` names the format in the refusal, which names the fix.
fn streams_to_export<'a>(run: &'a Run, format: &str) -> Result<&'a [Stream], ExportError> {
    if !run.streams.is_empty() {
        return Ok(&run.streams);
    }
    let why = match &run.published {
        Some(_) => {
            "its published rows give no sample count, so its figures are in its \
                    published record only"
        }
        None => "it measured nothing",
    };
    Err(ExportError(format!(
        "{} has no streams to export as {format}: {why}; export --format json writes all \
         it holds",
        run.id
    )))
}

/// A stream's histogram, decoded (`None` when its source kept none), or an export
/// error naming the stream.
fn histogram_of(stream: &Stream) -> Result<Option<LatencyHistogram>, ExportError> {
    stream
        .decode_histogram()
        .map_err(|e| ExportError(format!("{} [{}]: {e}", stream.label(), stream.phase)))
}

/// A stream's samples per microsecond, as cyclictest bins them.
pub(crate) struct MicrosecondBins {
    /// Count per µs (µs → count) of the samples whose value is known.
    pub(crate) bins: BTreeMap<i64, u64>,
    /// Samples known only to lie at or above `overflow_from_us` (a source's overflow
    /// bucket): they belong in no bin.
    pub(crate) overflowed: u64,
    /// Where the lowest such bound lies, in µs.
    pub(crate) overflow_from_us: Option<i64>,
}

/// A stream's samples per microsecond (µs → count), as cyclictest bins them: the
/// smallest and largest samples in the bins of the exact minimum and maximum (the
/// histogram buckets holding them are narrower than 0.1 %, but may straddle a µs), the
/// others by their bucket, negative samples (early wakes) left out, as cyclictest's
/// unsigned bins leave them out (`cycles` minus the histogram's total counts them), and
/// samples known only as bounds counted apart. `None` when the stream has no histogram.
pub(crate) fn microsecond_bins(stream: &Stream) -> Result<Option<MicrosecondBins>, ExportError> {
    let Some(histogram) = histogram_of(stream)? else {
        return Ok(None);
    };
    let us = |n: Option<latlab_model::Nanos>| n.map(|n| n.0 / 1_000);
    let (min, max) = (us(stream.stats.min_ns), us(stream.stats.max_ns));
    let low = min.unwrap_or(0).max(0);
    let high = max.unwrap_or(i64::MAX).max(low);
    let mut buckets = histogram.known_buckets();
    if let Some(zero) = buckets.first_mut().filter(|b| b.0 == 0) {
        // Early wakes not known (an import whose source could not tell them apart):
        // its first bucket is written as the source had it.
        zero.1 = zero.1.saturating_sub(stream.early_wakes.unwrap_or(0));
    }
    buckets.retain(|b| b.1 > 0);
    let last = buckets.len().saturating_sub(1);
    let mut bins = BTreeMap::new();
    for (i, &(value, count)) in buckets.iter().enumerate() {
        let natural = (value.min(i64::MAX as u64) as i64 / 1_000).clamp(low, high);
        let first_is_min = i == 0 && min.is_some_and(|m| m >= 0);
        match (first_is_min, i == last && max.is_some()) {
            // One bucket holds both: the maximum is one sample, the rest go with the minimum.
            (true, true) if low != high => {
                *bins.entry(low).or_insert(0) += count - 1;
                *bins.entry(high).or_insert(0) += 1;
            }
            (true, _) => *bins.entry(low).or_insert(0) += count,
            (false, true) => *bins.entry(high).or_insert(0) += count,
            (false, false) => *bins.entry(natural).or_insert(0) += count,
        }
    }
    Ok(Some(MicrosecondBins {
        bins,
        overflowed: histogram.bounded(),
        overflow_from_us: histogram
            .bounds()
            .map(|b| (b.at_least_ns / 1_000) as i64)
            .min(),
    }))
}

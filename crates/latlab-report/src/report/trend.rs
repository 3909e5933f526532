//! Trends: one figure of many runs against the time each started, one line per group
//! of runs (a host, a kernel, a scenario, a tag's value, or a combination of them):
//! OSADL's long-term view of a farm, for `latlab trend`, `latlab report --trend` and
//! the trend pages of `latlab serve`.
//!
//! A run's figure is its worst stream's: the largest p99.9 of its streams, say. A bound
//! stays a bound (`≥`, drawn hollow); a figure a run does not have is unknown, listed and
//! not drawn; a run whose start is unknown cannot be placed in time, and is listed and
//! not drawn either. Nothing is averaged: a group's median is one of its runs' figures.

use super::chart::{latency_axis, Axis, Chart, Mark, Series};
use super::document::{Block, Document, Table};
use super::latency_scale::{LatencyScale, TAIL_RATIO};
use super::{html, markdown, plot, text, Ansi, LatencyAxis, ReportError};
use latlab_model::rate::{self, SpikeRate};
use latlab_model::run::{percentile_key, Percentile, Run, REPORTED_PERCENTILES};
use latlab_model::series::SeriesKey;
use latlab_model::stamp::{parse_rfc3339, rfc3339};
use latlab_model::text::counted;
use latlab_model::width::Width;
use latlab_model::Nanos;
use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a trend could not be asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrendError {
    /// A metric's name was not recognised.
    #[error(
        "unknown metric '{0}': choose p50, p90, p99, p99.9, p99.99, p99.999, max, missed or \
         spike-rate[:LEVEL in whole µs]"
    )]
    UnknownMetric(String),
    /// A grouping was not recognised.
    #[error(
        "cannot group by '{0}': give series, or host, kernel, scenario or tag:KEY, separated \
         by commas"
    )]
    UnknownGroup(String),
    /// A series was chosen among groups that are not series.
    #[error("a series is chosen among runs grouped by series: give by=series with it")]
    SeriesNotGrouped,
}

/// The figure a trend follows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TrendMetric {
    /// A percentile of the samples (`p99.9`): one of the Run's reported ranks.
    Percentile(f64),
    /// The largest sample.
    Max,
    /// Missed periods per million periods.
    Missed,
    /// Samples above a level per hour of measuring ([`SpikeRate`]): above the level
    /// given, else each run's own spike level.
    SpikeRate(Option<Nanos>),
}

impl TrendMetric {
    /// The names [`FromStr`] reads, for messages.
    pub const CHOICES: &'static str =
        "p50, p90, p99, p99.9, p99.99, p99.999, max, missed or spike-rate[:LEVEL]";

    /// Its name, as [`FromStr`] reads it: `p99.9`, `max`, `missed`.
    pub fn name(self) -> String {
        match self {
            TrendMetric::Percentile(rank) => format!("p{}", percentile_key(rank)),
            TrendMetric::Max => "max".to_string(),
            TrendMetric::Missed => "missed".to_string(),
            TrendMetric::SpikeRate(None) => "spike-rate".to_string(),
            TrendMetric::SpikeRate(Some(level)) => format!("spike-rate:{}us", level.0 / 1_000),
        }
    }

    /// True when it is a latency (in ns); else a rate.
    pub fn is_latency(self) -> bool {
        !matches!(self, TrendMetric::Missed | TrendMetric::SpikeRate(_))
    }

    /// The unit of a figure that is not a latency: `per million periods`, `per hour`.
    pub fn rate_unit(self) -> &'static str {
        match self {
            TrendMetric::SpikeRate(_) => "per hour",
            _ => "per million periods",
        }
    }

    /// The title of its column, with its unit.
    fn column(self) -> String {
        match self {
            TrendMetric::Missed => "missed periods per million".to_string(),
            TrendMetric::SpikeRate(None) => "samples above the spike level per hour".to_string(),
            TrendMetric::SpikeRate(Some(level)) => format!("samples above {level} per hour"),
            latency => format!("{} (µs)", latency.name()),
        }
    }

    /// The figure of `run`'s streams of `probe`: their worst (a bound when a stream's
    /// is one), or, for missed periods, over every one that counts them; `None` when no
    /// such stream has it.
    pub fn of(self, run: &Run, probe: &str) -> Option<Figure> {
        let streams = || run.streams.iter().filter(|s| s.probe == probe);
        let worst = |values: Vec<Percentile>| {
            let value = values.iter().map(|p| p.value()).max()?;
            Some(Figure::Latency(match values.iter().any(|p| p.is_bound()) {
                true => Percentile::AtLeast { at_least_ns: value },
                false => Percentile::Exact(value),
            }))
        };
        match self {
            TrendMetric::Percentile(rank) => {
                worst(streams().filter_map(|s| s.stats.percentile(rank)).collect())
            }
            TrendMetric::Max => worst(
                streams()
                    .filter_map(|s| s.stats.max_ns.map(Percentile::Exact))
                    .collect(),
            ),
            TrendMetric::Missed => {
                let counted: Vec<(u64, u64)> = streams()
                    .filter_map(|s| Some((s.missed_periods?, s.samples)))
                    .collect();
                let missed: u64 = counted.iter().map(|(m, _)| m).sum();
                let periods: u64 = counted.iter().map(|(m, s)| m + s).sum();
                (periods > 0).then(|| Figure::PerMillion(missed as f64 * 1e6 / periods as f64))
            }
            TrendMetric::SpikeRate(level) => {
                let level = level.unwrap_or_else(|| rate::level_of(run));
                let rates: Vec<SpikeRate> = streams()
                    .map(|s| SpikeRate::of_stream(s, level, rate::CONFIDENCE))
                    .collect::<Option<_>>()?;
                SpikeRate::combined(&rates).map(|r| Figure::PerHour(r.per_hour))
            }
        }
    }
}

impl fmt::Display for TrendMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for TrendMetric {
    type Err = TrendError;

    /// `p` and a reported rank (`p99.9`), `max` or `missed`, case-insensitively.
    fn from_str(text: &str) -> Result<TrendMetric, TrendError> {
        let name = text.trim().to_ascii_lowercase();
        match name.as_str() {
            "max" => return Ok(TrendMetric::Max),
            "missed" => return Ok(TrendMetric::Missed),
            "spike-rate" => return Ok(TrendMetric::SpikeRate(None)),
            _ => {}
        }
        if let Some(level) = name.strip_prefix("spike-rate:") {
            return match latlab_model::units::parse_duration(level) {
                Ok(level) if level.0 >= 1_000 && level.0 % 1_000 == 0 => {
                    Ok(TrendMetric::SpikeRate(Some(level)))
                }
                _ => Err(TrendError::UnknownMetric(text.to_string())),
            };
        }
        name.strip_prefix('p')
            .and_then(|rank| {
                REPORTED_PERCENTILES
                    .into_iter()
                    .find(|&p| percentile_key(p) == rank)
            })
            .map(TrendMetric::Percentile)
            .ok_or_else(|| TrendError::UnknownMetric(text.to_string()))
    }
}

/// One run's figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    /// A latency, or a lower bound of one.
    Latency(Percentile),
    /// A rate per million.
    PerMillion(f64),
    /// A rate per hour.
    PerHour(f64),
}

impl Figure {
    /// The number drawn: µs for a latency (its bound for a bound), the rate itself.
    fn drawn(self) -> f64 {
        match self {
            Figure::Latency(p) => p.value().as_micros_f64(),
            Figure::PerMillion(rate) | Figure::PerHour(rate) => rate,
        }
    }

    /// True when only a lower bound is known.
    pub fn is_bound(self) -> bool {
        matches!(self, Figure::Latency(p) if p.is_bound())
    }

    /// The number for a table cell, without its unit: `12.345`, `≥ 400.000`.
    fn cell(self) -> String {
        match self {
            Figure::Latency(p) => format!("{}{:.3}", p.prefix(), p.value().as_micros_f64()),
            Figure::PerMillion(rate) | Figure::PerHour(rate) => format!("{rate:.3}"),
        }
    }
}

impl fmt::Display for Figure {
    /// With its unit: `12.345 µs`, `≥ 400 µs`, `1.234 per million`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Figure::Latency(p) => write!(f, "{p}"),
            Figure::PerMillion(rate) => write!(f, "{rate:.3} per million"),
            Figure::PerHour(rate) => write!(f, "{rate:.3} per hour"),
        }
    }
}

/// What runs are grouped by. Whatever it is, a group holds one probe's figures: a
/// run that ran several probes is in one group per probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupBy {
    /// The series ([`SeriesKey`]): the same rig, origin, probe, settings and load.
    Series,
    /// The host name.
    Host,
    /// The kernel release.
    Kernel,
    /// The scenario.
    Scenario,
    /// A tag's value.
    Tag(String),
}

impl GroupBy {
    /// A comma-separated list: `host,kernel,tag:board`.
    pub fn parse_list(text: &str) -> Result<Vec<GroupBy>, TrendError> {
        text.split(',')
            .map(|part| match part.trim() {
                "series" => Ok(GroupBy::Series),
                "host" => Ok(GroupBy::Host),
                "kernel" => Ok(GroupBy::Kernel),
                "scenario" => Ok(GroupBy::Scenario),
                other => match other.strip_prefix("tag:") {
                    Some(key) if !key.is_empty() => Ok(GroupBy::Tag(key.to_string())),
                    _ => Err(TrendError::UnknownGroup(part.to_string())),
                },
            })
            .collect()
    }

    /// Its name: `host`, `tag:board`.
    pub fn name(&self) -> String {
        match self {
            GroupBy::Series => "series".to_string(),
            GroupBy::Host => "host".to_string(),
            GroupBy::Kernel => "kernel".to_string(),
            GroupBy::Scenario => "scenario".to_string(),
            GroupBy::Tag(key) => format!("tag:{key}"),
        }
    }

    /// What a group's label says where the run has no value: a host or kernel not
    /// known, a scenario or tag the run does not have.
    fn absent(&self) -> &'static str {
        match self {
            GroupBy::Series | GroupBy::Host | GroupBy::Kernel => "unknown",
            GroupBy::Scenario | GroupBy::Tag(_) => "none",
        }
    }

    fn value_of(&self, run: &Run, series: &SeriesKey) -> Option<String> {
        match self {
            GroupBy::Series => Some(series.to_string()),
            GroupBy::Host => run.host.as_ref().map(|h| h.hostname.clone()),
            GroupBy::Kernel => run.host.as_ref().map(|h| h.kernel_release.clone()),
            GroupBy::Scenario => run.scenario.clone(),
            GroupBy::Tag(key) => run.tags.get(key).cloned(),
        }
    }
}

/// One run of a trend.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendPoint {
    /// The run's id.
    pub run: String,
    /// When it started; `None`: not known, so not placed in time.
    pub started_at: Option<SystemTime>,
    /// Its figure; `None`: it has none.
    pub figure: Option<Figure>,
    /// Its samples, every stream together.
    pub samples: u64,
}

/// The runs of one group, earliest first (those not placed in time last).
#[derive(Debug, Clone, PartialEq)]
pub struct TrendGroup {
    /// The probe whose figures it holds.
    pub probe: String,
    /// The group's value of each grouping, in the order asked (`None`: absent).
    pub values: Vec<Option<String>>,
    /// The series' id, when the runs are grouped by series alone.
    pub series: Option<String>,
    /// Its runs.
    pub points: Vec<TrendPoint>,
}

impl TrendGroup {
    /// Its name: `probe=timer, host=rig07, kernel=6.18.0-rt`; a series' label alone
    /// (it names its probe).
    pub fn label(&self, by: &[GroupBy]) -> String {
        if let ([GroupBy::Series], [Some(series)]) = (by, self.values.as_slice()) {
            return series.clone();
        }
        let values = by
            .iter()
            .zip(&self.values)
            .map(|(g, v)| format!("{}={}", g.name(), v.as_deref().unwrap_or(g.absent())));
        std::iter::once(format!("probe={}", self.probe))
            .chain(values)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The figures known, smallest first.
    fn sorted(&self) -> Vec<Figure> {
        let mut figures: Vec<Figure> = self.points.iter().filter_map(|p| p.figure).collect();
        figures.sort_by(|a, b| a.drawn().total_cmp(&b.drawn()));
        figures
    }

    /// The worst figure of its runs; a bound when any is one (the run with a bound
    /// may be worse than it shows).
    pub fn worst(&self) -> Option<Figure> {
        let figures = self.sorted();
        let worst = *figures.last()?;
        Some(match (worst, figures.iter().any(|f| f.is_bound())) {
            (Figure::Latency(p), true) => Figure::Latency(Percentile::AtLeast {
                at_least_ns: p.value(),
            }),
            (figure, _) => figure,
        })
    }

    /// The median of its runs' figures (the lower middle one of an even count); a bound
    /// when a bound lies at or below it (its run may be above it).
    pub fn median(&self) -> Option<Figure> {
        let figures = self.sorted();
        let middle = figures.len().checked_sub(1)? / 2;
        Some(
            match (
                figures[middle],
                figures[..=middle].iter().any(|f| f.is_bound()),
            ) {
                (Figure::Latency(p), true) => Figure::Latency(Percentile::AtLeast {
                    at_least_ns: p.value(),
                }),
                (figure, _) => figure,
            },
        )
    }
}

/// A metric over time, per group of runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// The figure followed.
    pub metric: TrendMetric,
    /// What the runs are grouped by.
    pub by: Vec<GroupBy>,
    /// The groups, by their values.
    pub groups: Vec<TrendGroup>,
}

impl Trend {
    /// The trend of `metric` over `runs`, grouped `by`, each group of one probe.
    pub fn of(runs: &[Run], metric: TrendMetric, by: Vec<GroupBy>) -> Trend {
        let mut groups: Vec<TrendGroup> = Vec::new();
        let by_series = by == [GroupBy::Series];
        for run in runs {
            for series in SeriesKey::of_run(run) {
                let values: Vec<Option<String>> =
                    by.iter().map(|g| g.value_of(run, &series)).collect();
                let point = TrendPoint {
                    run: run.id.clone(),
                    started_at: run.started_at.as_deref().and_then(parse_rfc3339),
                    figure: metric.of(run, &series.probe),
                    samples: run
                        .streams
                        .iter()
                        .filter(|s| s.probe == series.probe)
                        .map(|s| s.samples)
                        .sum(),
                };
                match groups
                    .iter_mut()
                    .find(|g| g.probe == series.probe && g.values == values)
                {
                    Some(group) => group.points.push(point),
                    None => groups.push(TrendGroup {
                        probe: series.probe.clone(),
                        values,
                        series: by_series.then(|| series.id()),
                        points: vec![point],
                    }),
                }
            }
        }
        groups.sort_by(|a, b| (&a.probe, &a.values).cmp(&(&b.probe, &b.values)));
        for group in &mut groups {
            // Unknown starts last, then by id, so that the order never depends on input.
            group.points.sort_by(|a, b| {
                (a.started_at.is_none(), a.started_at, &a.run).cmp(&(
                    b.started_at.is_none(),
                    b.started_at,
                    &b.run,
                ))
            });
        }
        Trend { metric, by, groups }
    }

    /// The trend of the series whose id ([`SeriesKey::id`]) is `id` alone, or (`None`)
    /// of every group; a series is chosen only among runs grouped by series.
    pub fn of_series(mut self, id: Option<&str>) -> Result<Trend, TrendError> {
        let Some(id) = id else {
            return Ok(self);
        };
        if self.by != [GroupBy::Series] {
            return Err(TrendError::SeriesNotGrouped);
        }
        self.groups.retain(|g| g.series.as_deref() == Some(id));
        Ok(self)
    }

    /// How many runs it holds (a run of several probes once).
    pub fn runs(&self) -> usize {
        let ids: std::collections::BTreeSet<&str> = self.points().map(|p| p.run.as_str()).collect();
        ids.len()
    }

    /// How many runs are not drawn: their start or their figure is unknown.
    pub fn not_drawn(&self) -> usize {
        self.points().filter(|p| !is_drawn(p)).count()
    }

    fn points(&self) -> impl Iterator<Item = &TrendPoint> {
        self.groups.iter().flat_map(|g| &g.points)
    }

    fn by_names(&self) -> String {
        self.by
            .iter()
            .map(GroupBy::name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn is_drawn(point: &TrendPoint) -> bool {
    point.started_at.is_some() && point.figure.is_some()
}

/// What [`render_trend`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendFormat {
    /// A self-contained HTML page: the plot, then a table per group.
    Html,
    /// GitHub-flavoured Markdown: the tables.
    Markdown,
    /// Terminal text: the tables.
    Text,
    /// The plot as a standalone SVG document.
    Svg,
}

/// Writes `trend` as `format`, its latency axis drawn as `axis` says.
pub fn render_trend(
    trend: &Trend,
    format: TrendFormat,
    axis: LatencyAxis,
) -> Result<String, ReportError> {
    match format {
        TrendFormat::Html => html::render(&document(trend, axis)),
        TrendFormat::Markdown => Ok(markdown::render(&document(trend, axis))),
        TrendFormat::Text => Ok(text::render(
            &document(trend, axis),
            Ansi::Off,
            Width::Unlimited,
        )),
        TrendFormat::Svg => plot::standalone(&chart(trend, axis)),
    }
}

/// The trend as a page: what it shows, the plot, then each group's runs.
pub(crate) fn document(trend: &Trend, axis: LatencyAxis) -> Document {
    let title = format!("Trend of {} by {}", trend.metric, trend.by_names());
    let mut blocks = vec![
        Block::Heading {
            level: 1,
            text: format!("latlab: {title}"),
        },
        Block::Paragraph(format!(
            "{} in {}. Each run's {} is {}; times are the runs' starts (UTC).",
            counted(trend.runs() as u64, "run"),
            counted(trend.groups.len() as u64, "group"),
            trend.metric,
            match trend.metric {
                TrendMetric::Missed | TrendMetric::SpikeRate(_) => "over its streams together",
                _ => "its worst stream's",
            }
        )),
    ];
    if trend.not_drawn() > 0 {
        blocks.push(Block::Paragraph(format!(
            "Not drawn: {} whose start time or {} is unknown (listed below).",
            counted(trend.not_drawn() as u64, "run"),
            trend.metric
        )));
    }
    blocks.push(Block::Figure(chart(trend, axis)));
    for (colour, group) in trend.groups.iter().enumerate() {
        let shown =
            |figure: Option<Figure>| figure.map_or("unknown".to_string(), |f| f.to_string());
        blocks.push(Block::Heading {
            level: 2,
            text: group.label(&trend.by),
        });
        blocks.push(Block::Facts(vec![
            ("runs".to_string(), group.points.len().to_string()),
            (format!("worst {}", trend.metric), shown(group.worst())),
            (format!("median {}", trend.metric), shown(group.median())),
        ]));
        let metric = trend.metric.column();
        let mut table = Table::new(&[
            ("started (UTC)", false),
            ("run", false),
            (&metric, true),
            ("samples", true),
        ]);
        for point in &group.points {
            let started = point
                .started_at
                .map_or("unknown: not placed".to_string(), |t| {
                    rfc3339(t)
                        .get(..19)
                        .unwrap_or_default()
                        .replacen('T', " ", 1)
                });
            table.push(
                vec![
                    started,
                    point.run.clone(),
                    point.figure.map_or("unknown".to_string(), Figure::cell),
                    point.samples.to_string(),
                ],
                Some(colour),
            );
        }
        blocks.push(Block::Table(table));
    }
    Document { title, blocks }
}

/// The plot: one line per group, each run a mark (hollow for a bound).
fn chart(trend: &Trend, axis: LatencyAxis) -> Chart {
    // Days, so that the axis' round numbers fall on midnights.
    let days = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() / 86_400.0)
    };
    let drawn: Vec<(f64, Figure)> = trend
        .points()
        .filter_map(|p| Some((days(p.started_at?), p.figure?)))
        .collect();
    let (first, last) = drawn
        .iter()
        .fold((f64::INFINITY, 0f64), |(lo, hi), (t, _)| {
            (lo.min(*t), hi.max(*t))
        });
    // One run, or runs started together, still get an axis: an hour either side.
    let (first, last) = match last - first {
        span if span >= 1.0 / 1_440.0 => (first - span * 0.03, last + span * 0.03),
        _ => (first - 1.0 / 24.0, last + 1.0 / 24.0),
    };
    let mut values: Vec<f64> = drawn.iter().map(|(_, f)| f.drawn()).collect();
    values.sort_by(f64::total_cmp);
    let highest = values.last().copied().unwrap_or(0.0);
    let median = values.get(values.len().saturating_sub(1) / 2).copied();
    let scale = latency_scale(axis, highest, median);
    let y_axis = match (trend.metric.is_latency(), highest > 0.0) {
        (true, true) => {
            let lowest = values.iter().copied().find(|v| *v > 0.0).unwrap_or(highest);
            latency_axis(&scale, lowest, highest * 1.1)
        }
        (false, true) => Axis::Linear { max: highest * 1.1 },
        (_, false) => Axis::Linear { max: 1.0 },
    };
    let y_of = |value: f64| match y_axis {
        Axis::Log { min, .. } => value.max(min),
        _ => value,
    };
    let series = trend
        .groups
        .iter()
        .enumerate()
        .filter_map(|(colour, group)| {
            let marks: Vec<Mark> = group
                .points
                .iter()
                .filter_map(|p| {
                    let figure = p.figure?;
                    Some(Mark {
                        at: (days(p.started_at?), y_of(figure.drawn())),
                        hollow: figure.is_bound(),
                        label: None,
                    })
                })
                .collect();
            let worst = group.worst()?;
            (!marks.is_empty()).then(|| Series {
                label: format!("{} · worst {worst}", group.label(&trend.by)),
                colour,
                segments: vec![marks.iter().map(|m| m.at).collect()],
                marks,
            })
        })
        .collect();
    let (y_label, scale_words) = match trend.metric.is_latency() {
        true => (
            match scale.log {
                true => format!("{} (µs, log scale)", trend.metric),
                false => format!("{} (µs)", trend.metric),
            },
            format!(" Latency axis: {}.", scale.reason),
        ),
        false => (trend.metric.column(), String::new()),
    };
    Chart {
        name: "trend",
        caption: format!("{} by {}", trend.metric, trend.by_names()),
        x_label: "run started (UTC)".to_string(),
        y_label,
        x_axis: Axis::Dates {
            min: first,
            max: last,
        },
        y_axis,
        series,
        explanation: format!(
            "Each run's {} (its worst stream's) against the time it started, one line per \
             {}; a hollow mark is a lower bound (the run's value is at least that). Runs \
             whose start or figure is unknown are listed in the tables, not drawn.{scale_words}",
            trend.metric,
            trend.by_names()
        ),
    }
}

/// The latency axis of a trend: `axis` when it is not [`LatencyAxis::Auto`], else log
/// when the highest value (µs) exceeds [`TAIL_RATIO`] times the median one.
fn latency_scale(axis: LatencyAxis, highest: f64, median: Option<f64>) -> LatencyScale {
    match (axis, median) {
        (LatencyAxis::Auto, Some(median))
            if median > 0.0 && highest > TAIL_RATIO as f64 * median =>
        {
            LatencyScale {
                log: true,
                reason: format!(
                    "log scale as the highest {} > {TAIL_RATIO} × the median {}",
                    Nanos((highest * 1e3) as i64),
                    Nanos((median * 1e3) as i64)
                ),
            }
        }
        (LatencyAxis::Auto, _) => LatencyScale {
            log: false,
            reason: format!("linear as the highest ≤ {TAIL_RATIO} × the median"),
        },
        (axis, _) => LatencyScale::choose(axis, []),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::run::Stream;

    /// The documented example run (two streams, p99.9 82.047 and 144.895 µs, max of
    /// each, 2 missed periods of 5000 each), as run `id` on `host`, started at `start`.
    fn run(id: &str, host: &str, start: Option<&str>) -> Run {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
        let mut run = Run::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
        run.id = id.to_string();
        run.host.as_mut().unwrap().hostname = host.to_string();
        run.started_at = start.map(str::to_string);
        run
    }

    /// `run` with every stream's p99.9 set to `p999`.
    fn with_p999(mut run: Run, p999: Percentile) -> Run {
        for stream in &mut run.streams {
            stream.stats.percentiles_ns.insert("99.9".to_string(), p999);
        }
        run
    }

    fn exact(us: i64) -> Percentile {
        Percentile::Exact(Nanos(us * 1_000))
    }

    fn bound(us: i64) -> Percentile {
        Percentile::AtLeast {
            at_least_ns: Nanos(us * 1_000),
        }
    }

    fn p999() -> TrendMetric {
        "p99.9".parse().unwrap()
    }

    #[test]
    fn metrics_and_groupings_read_their_names() {
        for name in [
            "p50",
            "p99",
            "p99.9",
            "p99.99",
            "max",
            "missed",
            "spike-rate",
            "spike-rate:100us",
        ] {
            assert_eq!(name.parse::<TrendMetric>().unwrap().name(), name);
        }
        assert_eq!(
            "p42".parse::<TrendMetric>().unwrap_err().to_string(),
            "unknown metric 'p42': choose p50, p90, p99, p99.9, p99.99, p99.999, max, missed or \
             spike-rate[:LEVEL in whole µs]"
        );
        assert_eq!(
            GroupBy::parse_list("host, kernel,tag:board").unwrap(),
            [
                GroupBy::Host,
                GroupBy::Kernel,
                GroupBy::Tag("board".to_string())
            ]
        );
        assert!(matches!(
            GroupBy::parse_list("host,tag:"),
            Err(TrendError::UnknownGroup(g)) if g == "tag:"
        ));
    }

    #[test]
    fn runs_are_grouped_and_ordered_by_start_unknown_last() {
        let runs = [
            run("c", "rig2", Some("2026-11-03T00:00:00Z")),
            run("b", "rig1", None),
            run("a", "rig1", Some("2026-11-02T00:00:00Z")),
            run("d", "rig1", Some("2026-11-01T00:00:00Z")),
        ];
        let trend = Trend::of(&runs, p999(), vec![GroupBy::Host]);
        let ids = |g: &TrendGroup| g.points.iter().map(|p| p.run.clone()).collect::<Vec<_>>();
        assert_eq!(trend.groups.len(), 2);
        assert_eq!(trend.groups[0].label(&trend.by), "probe=timer, host=rig1");
        assert_eq!(ids(&trend.groups[0]), ["d", "a", "b"]);
        assert_eq!(ids(&trend.groups[1]), ["c"]);
        assert_eq!((trend.runs(), trend.not_drawn()), (4, 1));
        // The worst stream's: 144.895 µs of the example's two.
        assert_eq!(
            trend.groups[1].points[0].figure,
            Some(Figure::Latency(Percentile::Exact(Nanos(144_895))))
        );
        assert_eq!(trend.groups[1].points[0].samples, 9_996);
    }

    #[test]
    fn a_tag_and_a_scenario_group_runs_without_them_as_none() {
        let mut tagged = run("a", "rig1", None);
        tagged.tags.insert("board".to_string(), "x1".to_string());
        let runs = [tagged, run("b", "rig1", None)];
        let by = GroupBy::parse_list("scenario,tag:board").unwrap();
        let trend = Trend::of(&runs, p999(), by);
        let labels: Vec<String> = trend.groups.iter().map(|g| g.label(&trend.by)).collect();
        assert_eq!(
            labels,
            [
                "probe=timer, scenario=none, tag:board=none",
                "probe=timer, scenario=none, tag:board=x1"
            ]
        );
    }

    #[test]
    fn a_bound_stays_a_bound_in_the_run_the_worst_and_the_median() {
        let runs = [
            with_p999(run("a", "h", Some("2026-11-01T00:00:00Z")), exact(10)),
            with_p999(run("b", "h", Some("2026-11-02T00:00:00Z")), exact(30)),
            with_p999(run("c", "h", Some("2026-11-03T00:00:00Z")), bound(20)),
        ];
        let group = &Trend::of(&runs, p999(), vec![GroupBy::Host]).groups[0];
        assert_eq!(group.points[2].figure, Some(Figure::Latency(bound(20))));
        // c may be worse than b's 30 µs, and is the median's run.
        assert_eq!(group.worst(), Some(Figure::Latency(bound(30))));
        assert_eq!(group.median(), Some(Figure::Latency(bound(20))));
        assert_eq!(group.median().unwrap().to_string(), "≥ 20 µs");
        // A bound above the median cannot move it.
        let runs = [
            with_p999(run("a", "h", None), exact(10)),
            with_p999(run("b", "h", None), exact(30)),
            with_p999(run("c", "h", None), bound(40)),
        ];
        let group = &Trend::of(&runs, p999(), vec![GroupBy::Host]).groups[0];
        assert_eq!(group.median(), Some(Figure::Latency(exact(30))));
    }

    #[test]
    fn a_figure_a_run_lacks_is_unknown_and_not_drawn() {
        let mut empty = run("a", "h", Some("2026-11-01T00:00:00Z"));
        empty.streams.clear();
        let mut unpaced: Run = run("b", "h", Some("2026-11-02T00:00:00Z"));
        for stream in &mut unpaced.streams {
            stream.missed_periods = None;
        }
        let runs = [empty, unpaced];
        let missed = Trend::of(&runs, TrendMetric::Missed, vec![GroupBy::Host]);
        assert!(missed.groups[0].points.iter().all(|p| p.figure.is_none()));
        assert_eq!(missed.groups[0].worst(), None);
        assert_eq!(missed.groups[0].median(), None);
        assert_eq!(missed.not_drawn(), 2);
        assert!(chart(&missed, LatencyAxis::Auto).series.is_empty());
        let max = Trend::of(&runs, TrendMetric::Max, vec![GroupBy::Host]);
        assert_eq!(max.not_drawn(), 1);
        assert_eq!(chart(&max, LatencyAxis::Auto).series[0].marks.len(), 1);
    }

    #[test]
    fn missed_periods_are_counted_per_million_periods() {
        let mut one: Run = run("a", "h", None);
        let stream: &mut Stream = &mut one.streams[0];
        stream.samples = 999_990;
        stream.missed_periods = Some(10);
        one.streams.truncate(1);
        let probe = one.streams[0].probe.clone();
        assert_eq!(
            TrendMetric::Missed.of(&one, &probe),
            Some(Figure::PerMillion(10.0))
        );
    }

    /// An OS-noise gap and a wake-up latency never share a line, whatever the runs
    /// are grouped by; by series, an import is not a measurement either.
    #[test]
    fn probes_never_share_a_line_and_imports_are_their_own_series() {
        let at = Some("2026-11-01T00:00:00Z");
        let timer = run("a", "h", at);
        let mut noise = run("b", "h", at);
        for s in &mut noise.streams {
            s.probe = "noise".to_string();
        }
        let mut imported = run("c", "h", at);
        imported.import = Some(latlab_model::run::ImportRecord {
            format: "cyclictest-json".to_string(),
            file: "ct.json".to_string(),
            imported_at: "2026-11-02T00:00:00Z".to_string(),
            lacks: Vec::new(),
        });
        let runs = [timer, noise, imported];
        let by_series = Trend::of(&runs, p999(), vec![GroupBy::Series]);
        assert_eq!(by_series.groups.len(), 3);
        assert!(by_series.groups.iter().all(|g| g.points.len() == 1));
        assert!(by_series.groups.iter().all(|g| g.series.is_some()));
        let by_host = Trend::of(&runs, p999(), vec![GroupBy::Host]);
        let probes: Vec<(&str, usize)> = by_host
            .groups
            .iter()
            .map(|g| (g.probe.as_str(), g.points.len()))
            .collect();
        assert_eq!(
            probes,
            [("noise", 1), (runs[0].streams[0].probe.as_str(), 2)]
        );
        assert!(by_host.groups[0]
            .label(&by_host.by)
            .starts_with("probe=noise, host=h"));
        // One series chosen by its id: the farm view's link to a series' trend.
        let noise = SeriesKey::of_run(&runs[1])[0].id();
        let one = by_series.clone().of_series(Some(&noise)).unwrap();
        assert_eq!(one.groups.len(), 1);
        assert_eq!(one.groups[0].probe, "noise");
        assert_eq!(by_series.clone().of_series(None).unwrap(), by_series);
        assert_eq!(
            by_host.of_series(Some(&noise)),
            Err(TrendError::SeriesNotGrouped)
        );
    }

    #[test]
    fn bounds_are_drawn_hollow_and_a_far_value_turns_the_axis_logarithmic() {
        let runs = [
            with_p999(run("a", "h", Some("2026-11-01T00:00:00Z")), exact(10)),
            with_p999(run("b", "h", Some("2026-11-02T00:00:00Z")), exact(12)),
            with_p999(run("c", "h", Some("2026-11-03T00:00:00Z")), bound(9_000)),
        ];
        let chart = chart(
            &Trend::of(&runs, p999(), vec![GroupBy::Host]),
            LatencyAxis::Auto,
        );
        let hollow: Vec<bool> = chart.series[0].marks.iter().map(|m| m.hollow).collect();
        assert_eq!(hollow, [false, false, true]);
        assert_eq!(chart.series[0].segments[0].len(), 3);
        assert!(
            matches!(chart.y_axis, Axis::Log { .. }),
            "{}",
            chart.y_label
        );
        assert!(matches!(chart.x_axis, Axis::Dates { min, max } if min < max));
    }

    #[test]
    fn the_text_trend_lists_every_group_and_run() {
        let runs = [
            with_p999(run("r1", "rig1", Some("2026-11-01T00:00:00Z")), exact(10)),
            with_p999(run("r2", "rig1", Some("2026-11-02T06:30:00Z")), bound(25)),
            with_p999(run("r3", "rig2", None), exact(12)),
        ];
        let trend = Trend::of(&runs, p999(), vec![GroupBy::Host]);
        let text = render_trend(&trend, TrendFormat::Text, LatencyAxis::Auto).unwrap();
        insta::assert_snapshot!(text);
    }

    /// A run's spike rate is its streams' samples above the level per hour of their
    /// measured spans together.
    #[test]
    fn a_spike_rate_is_per_hour_of_the_streams_spans() {
        let one: Run = run("a", "h", Some("2026-11-01T00:00:00Z"));
        let probe = one.streams[0].probe.clone();
        let level = Nanos(1_000);
        let rates: Vec<SpikeRate> = one
            .streams
            .iter()
            .map(|s| SpikeRate::of_stream(s, level, rate::CONFIDENCE).unwrap())
            .collect();
        let expected = SpikeRate::combined(&rates).unwrap().per_hour;
        assert_eq!(
            TrendMetric::SpikeRate(Some(level)).of(&one, &probe),
            Some(Figure::PerHour(expected))
        );
        assert!(expected > 0.0);
        let trend = Trend::of(
            &[one],
            TrendMetric::SpikeRate(Some(level)),
            vec![GroupBy::Series],
        );
        assert_eq!(trend.metric.rate_unit(), "per hour");
        assert!(!trend.metric.is_latency());
    }
}

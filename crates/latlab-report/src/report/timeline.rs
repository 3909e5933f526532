//! The timeline plot: the largest sample of each interval against the time into the
//! run, at most one point per pixel column ([`COLUMNS`]).

use super::chart::{latency_axis, scale_sentence, Axis, Chart, Mark, Series, COLUMNS};
use super::figures;
use super::latency_scale::LatencyScale;
use super::PlotKind;
use latlab_model::run::Timeline;
use latlab_model::Nanos;

/// A timeline to draw as one line: one or several streams' timelines, each starting at
/// its offset into the run.
pub(crate) struct TimelineLine<'a> {
    /// Its name in the legend.
    pub name: String,
    /// Its palette index.
    pub colour: usize,
    /// Each timeline with where it starts.
    pub parts: Vec<(Nanos, &'a Timeline)>,
}

/// The unit of a timeline's axis for a span: seconds up to 10 min, minutes up to 10 h,
/// hours beyond.
fn time_unit(span: Nanos) -> (&'static str, f64) {
    let secs = span.as_secs_f64();
    if secs <= 600.0 {
        ("s", 1e9)
    } else if secs <= 36_000.0 {
        ("min", 60e9)
    } else {
        ("h", 3_600e9)
    }
}

/// Timeline: the largest sample per interval against the time into the run, on the
/// figure set's latency scale.
pub(crate) fn timeline(
    caption: String,
    per: &str,
    lines: Vec<TimelineLine>,
    scale: &LatencyScale,
) -> Chart {
    let span_ns = lines
        .iter()
        .flat_map(|l| &l.parts)
        .map(|(offset, t)| offset.0 + t.interval_ns.0 * t.max_ns.len() as i64)
        .max()
        .unwrap_or(0);
    let (unit, time_scale) = time_unit(Nanos(span_ns));
    let mut highest_us = 0f64;
    let mut lowest_us = f64::INFINITY;
    let maxima: Vec<(&TimelineLine, Vec<Option<i64>>)> = lines
        .iter()
        .map(|line| (line, column_maxima(&line.parts, span_ns)))
        .collect();
    for value in maxima.iter().flat_map(|(_, c)| c.iter().flatten()) {
        highest_us = highest_us.max(*value as f64 / 1e3);
        if *value > 0 {
            lowest_us = lowest_us.min(*value as f64 / 1e3);
        }
    }
    let y_axis = if highest_us > 0.0 {
        latency_axis(scale, lowest_us, highest_us / 1.02 * 1.1)
    } else {
        Axis::Linear { max: 1.0 }
    };
    // A maximum of 0 has no place on a log axis: it is drawn on the axis.
    let y_of = |value: i64| match y_axis {
        Axis::Log { min, .. } => (value as f64 / 1e3).max(min),
        Axis::Linear { .. } | Axis::Dates { .. } => value as f64 / 1e3,
    };
    let largest = largest_sample(&lines);
    let series: Vec<Series> = maxima
        .iter()
        .enumerate()
        .filter_map(|(index, (line, columns))| {
            let line_max = columns.iter().flatten().max().copied()?;
            let x = |col: usize| (col as f64 + 0.5) * span_ns as f64 / COLUMNS as f64 / time_scale;
            let mut segments = Vec::new();
            let mut current = Vec::new();
            for (col, value) in columns.iter().enumerate() {
                match value {
                    Some(v) => current.push((x(col), y_of(*v))),
                    None if !current.is_empty() => segments.push(std::mem::take(&mut current)),
                    None => {}
                }
            }
            if !current.is_empty() {
                segments.push(current);
            }
            // The run's largest sample, marked where it happened.
            let marks = largest
                .filter(|l| l.line == index)
                .map(|l| Mark {
                    at: (l.at_ns as f64 / time_scale, y_of(l.value_ns)),
                    hollow: false,
                    label: Some(format!(
                        "max {} at {:.1} {unit}",
                        figures::us_unit(Nanos(l.value_ns)),
                        l.at_ns as f64 / time_scale
                    )),
                })
                .into_iter()
                .collect();
            Some(Series {
                label: format!("{} · max {}", line.name, figures::us_unit(Nanos(line_max))),
                colour: line.colour,
                segments,
                marks,
            })
        })
        .collect();
    let intervals = figures::distinct(
        lines
            .iter()
            .flat_map(|l| &l.parts)
            .map(|(_, t)| t.interval_ns.to_string()),
    );
    // One interval is named in the title (OSADL's "5-minute maxima"); several are
    // named in the explanation.
    let mut widths: Vec<Nanos> = lines
        .iter()
        .flat_map(|l| &l.parts)
        .map(|(_, t)| t.interval_ns)
        .collect();
    widths.sort_unstable();
    widths.dedup();
    let each = match widths.as_slice() {
        [width] => width.to_string(),
        _ => "interval".to_string(),
    };
    Chart {
        name: PlotKind::Timeline.name(),
        caption: format!("Largest sample per {each} · {caption}"),
        x_label: format!("time into the run ({unit})"),
        // A vertical axis has no room for the reason: the caption says it.
        y_label: if scale.log {
            "largest sample per interval (µs, log scale)".to_string()
        } else {
            "largest sample per interval (µs)".to_string()
        },
        x_axis: Axis::Linear {
            max: (span_ns as f64 / time_scale).max(f64::MIN_POSITIVE),
        },
        y_axis,
        series,
        explanation: format!(
            "The largest sample of each interval ({intervals}) against the time into the \
             run, one line per {per}; each pixel column shows the largest of its intervals, \
             and gaps are intervals without samples.{}",
            scale_sentence(scale)
        ),
    }
}

/// Where the largest sample of all lines is: the line, the middle of its interval
/// (ns into the run) and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Largest {
    line: usize,
    at_ns: i64,
    value_ns: i64,
}

/// The largest sample of `lines` (the first of equals); `None` without samples.
fn largest_sample(lines: &[TimelineLine]) -> Option<Largest> {
    let mut largest: Option<Largest> = None;
    for (line, timeline_line) in lines.iter().enumerate() {
        for (offset, timeline) in &timeline_line.parts {
            let width = timeline.interval_ns.0.max(1);
            for (i, value) in timeline.max_ns.iter().enumerate() {
                let Some(value) = value else { continue };
                if largest.is_none_or(|l| value.0 > l.value_ns) {
                    largest = Some(Largest {
                        line,
                        at_ns: offset.0 + i as i64 * width + width / 2,
                        value_ns: value.0,
                    });
                }
            }
        }
    }
    largest
}

/// The largest sample in each of [`COLUMNS`] columns over `span_ns`; an interval wider
/// than a column fills every column it covers.
fn column_maxima(parts: &[(Nanos, &Timeline)], span_ns: i64) -> Vec<Option<i64>> {
    let mut columns: Vec<Option<i64>> = vec![None; COLUMNS];
    if span_ns <= 0 {
        return columns;
    }
    let to_column = |t: i64| (t.max(0) as u128 * COLUMNS as u128 / span_ns as u128) as usize;
    for (offset, timeline) in parts {
        let width = timeline.interval_ns.0.max(1);
        for (i, value) in timeline.max_ns.iter().enumerate() {
            let Some(value) = value else { continue };
            let start = offset.0 + i as i64 * width;
            let first = to_column(start).min(COLUMNS - 1);
            // The column holding the interval's last nanosecond.
            let last = to_column(start + width - 1).clamp(first, COLUMNS - 1);
            for column in &mut columns[first..=last] {
                *column = Some(column.map_or(value.0, |c| c.max(value.0)));
            }
        }
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timelines_keep_each_columns_largest() {
        let timeline = Timeline {
            interval_ns: Nanos::SECOND,
            max_ns: (0..86_400).map(|i| Some(Nanos(i % 1_000))).collect(),
            count: vec![1; 86_400],
        };
        let columns = column_maxima(&[(Nanos::ZERO, &timeline)], 86_400_000_000_000);
        assert_eq!(columns.len(), COLUMNS);
        assert!(columns.iter().all(|c| c.is_some()));
        assert_eq!(columns.iter().flatten().max(), Some(&999));
    }

    #[test]
    fn wide_intervals_fill_their_columns_and_gaps_stay_empty() {
        let timeline = Timeline {
            interval_ns: Nanos::SECOND,
            max_ns: vec![Some(Nanos(5)), None, Some(Nanos(7))],
            count: vec![1, 0, 1],
        };
        let columns = column_maxima(&[(Nanos::ZERO, &timeline)], 3_000_000_000);
        assert_eq!(columns[0], Some(5));
        assert_eq!(columns[COLUMNS / 3 - 1], Some(5));
        assert_eq!(columns[COLUMNS / 2], None);
        assert_eq!(columns[COLUMNS - 1], Some(7));
    }

    /// A 24 h stream's timeline as a run's recorder leaves it: 1 s intervals doubled
    /// five times to fit 4096 slots, 32 s each, 2700 of them; a body of 5–60 µs, and
    /// one 5 ms sample in slot 1500 (at 13 h 20 min).
    fn day_long() -> Timeline {
        let max_ns = (0..2_700u64)
            .map(|i| match i {
                1_500 => Some(Nanos(5_000_000)),
                _ => Some(Nanos(5_000 + ((i * 7_919) % 55_000) as i64)),
            })
            .collect();
        Timeline {
            interval_ns: Nanos::from_secs(32),
            max_ns,
            count: vec![32_000; 2_700],
        }
    }

    #[test]
    fn a_day_long_run_is_drawn_in_hours_with_its_largest_sample_marked() {
        let day = day_long();
        let scale = LatencyScale {
            log: true,
            reason: "log scale, as asked".to_string(),
        };
        let chart = timeline(
            "run r".to_string(),
            "stream",
            vec![TimelineLine {
                name: "cpu 0".to_string(),
                colour: 0,
                parts: vec![(Nanos::ZERO, &day)],
            }],
            &scale,
        );
        assert_eq!(chart.x_label, "time into the run (h)");
        assert_eq!(chart.x_axis, Axis::Linear { max: 24.0 });
        // The interval is named; 2700 intervals are at most one point per column.
        assert!(
            chart.caption.starts_with("Largest sample per 32 s"),
            "{}",
            chart.caption
        );
        let points: usize = chart.series[0].segments.iter().map(Vec::len).sum();
        assert!(points <= COLUMNS, "{points}");
        assert_eq!(chart.series[0].segments.len(), 1, "no gap");
        // The one mark is the largest sample, in the middle of its interval.
        let marks = &chart.series[0].marks;
        assert_eq!(marks.len(), 1);
        let (x, y) = marks[0].at;
        assert!((x - (1_500.5 * 32.0) / 3_600.0).abs() < 1e-9, "{x}");
        assert_eq!(y, 5_000.0);
        assert_eq!(marks[0].label.as_deref(), Some("max 5000.000 µs at 13.3 h"));
    }

    #[test]
    fn time_units_follow_the_span() {
        assert_eq!(time_unit(Nanos::from_secs(30)).0, "s");
        assert_eq!(time_unit(Nanos::from_secs(3_600)).0, "min");
        assert_eq!(time_unit(Nanos::from_secs(86_400)).0, "h");
    }
}

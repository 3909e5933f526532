//! The live display's text, laid out for a width: the per-CPU table a terminal redraws
//! in place while a run measures, or a line per CPU for a log. The binary writes it and
//! moves the cursor; every line here fits the width, so the rows a frame takes are
//! known and the next frame lands exactly on it.

use latlab_measure::live::LiveSnapshot;
use latlab_model::width::Width;
use std::fmt::Write as _;

/// One figure of the table: its title, its width (the figures keep theirs from frame to
/// frame, so nothing jumps), and what it shows.
struct Figure {
    title: &'static str,
    width: usize,
    show: fn(&LiveSnapshot) -> String,
}

/// The figures after the CPU, in the table's order.
const FIGURES: [Figure; 7] = [
    Figure {
        title: "samples",
        width: 10,
        show: |s| s.samples.to_string(),
    },
    Figure {
        title: "min",
        width: 10,
        show: |s| us(s.min_ns),
    },
    Figure {
        title: "current",
        width: 10,
        show: |s| us(s.current_ns),
    },
    Figure {
        title: "mean",
        width: 10,
        show: |s| us(s.mean_ns.map(|m| m.round() as i64)),
    },
    Figure {
        title: "p99≈",
        width: 10,
        show: |s| us(s.p99_ns),
    },
    Figure {
        title: "max",
        width: 11,
        show: |s| us(s.max_ns),
    },
    Figure {
        title: "missed",
        width: 7,
        show: |s| s.missed_periods.to_string(),
    },
];

/// The figures given up to fit a narrow terminal, first to last; p99 and max, what a
/// run is judged by, stay.
const GIVEN_UP_FIRST: [&str; 5] = ["current", "mean", "min", "samples", "missed"];

/// The width of the CPU's column.
const CPU: usize = 4;

/// A latency in µs with three decimals; `-` before the first sample.
fn us(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |n| format!("{:.3}", n as f64 / 1e3))
}

/// The table: a line of titles, then one line per CPU (`labels`, one per snapshot),
/// with `progress` (how far the run is) and the unit after the titles, or on a line of
/// its own above them when that does not fit `width`. The figures least needed are
/// given up until the titles fit.
pub fn frame(
    labels: &[String],
    snapshots: &[LiveSnapshot],
    progress: &str,
    width: Width,
) -> String {
    let unit = format!("latency in µs, {progress}");
    let mut shown: Vec<&Figure> = FIGURES.iter().collect();
    let line_width = |shown: &[&Figure]| CPU + shown.iter().map(|f| 1 + f.width).sum::<usize>();
    let mut given_up = GIVEN_UP_FIRST.iter();
    while line_width(&shown) > width.or(usize::MAX) {
        let Some(next) = given_up.next() else { break };
        shown.retain(|f| f.title != *next);
    }
    let mut titles = format!("{:>CPU$}", "CPU");
    for f in &shown {
        let _ = write!(titles, " {:>w$}", f.title, w = f.width);
    }
    let beside = format!("{titles}   {unit}");
    let mut text = match width.fits(&beside) {
        true => format!("{beside}\n"),
        false => format!("{}\n{titles}\n", width.wrap(&unit, "", "")),
    };
    for (label, s) in labels.iter().zip(snapshots) {
        let _ = write!(text, "{label:>CPU$}");
        for f in &shown {
            let _ = write!(text, " {:>w$}", (f.show)(s), w = f.width);
        }
        text.push('\n');
    }
    width.fold(&text)
}

/// One line per CPU for a log (or a terminal that cannot move its cursor), each with
/// `progress` and every figure with its unit; wrapped, indented, where it does not fit
/// `width`, never between a figure and its name or unit.
pub fn lines(
    labels: &[String],
    snapshots: &[LiveSnapshot],
    progress: &str,
    width: Width,
) -> String {
    let mut text = String::new();
    for (label, s) in labels.iter().zip(snapshots) {
        let items = [
            format!("[{progress}] cpu {label}:"),
            format!("samples {}", s.samples),
            format!("min {} µs", us(s.min_ns)),
            format!("current {} µs", us(s.current_ns)),
            format!("mean {} µs", us(s.mean_ns.map(|m| m.round() as i64))),
            format!("p99≈ {} µs", us(s.p99_ns)),
            format!("max {} µs", us(s.max_ns)),
            format!("missed {}", s.missed_periods),
        ];
        // Wrapped at the spaces between items only: those within one are held by
        // no-break spaces until the line is laid out.
        let held: Vec<String> = items.iter().map(|i| i.replace(' ', "\u{a0}")).collect();
        let line = width.wrap(&held.join(" "), "", "    ");
        text.push_str(&line.replace('\u{a0}', " "));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CPUs three seconds into a run: figures as `docs/example-run.json` has them.
    fn snapshots() -> (Vec<String>, Vec<LiveSnapshot>) {
        let snapshot = |samples, min, current, mean, p99, max, missed| LiveSnapshot {
            samples,
            min_ns: Some(min),
            max_ns: Some(max),
            current_ns: Some(current),
            mean_ns: Some(mean),
            p99_ns: Some(p99),
            missed_periods: missed,
            early_wakes: 0,
            finished: false,
        };
        let snapshots = vec![
            snapshot(2877, 2_176, 5_850, 6_638.4, 26_527, 2_283_378, 2),
            snapshot(2869, 2_177, 4_690, 7_340.2, 25_807, 1_944_916, 12),
        ];
        (vec!["0".to_string(), "1".to_string()], snapshots)
    }

    const PROGRESS: &str = "2.9 s of 3.0 s";

    #[test]
    fn the_frame_at_200_columns_is_as_it_always_was() {
        let (labels, snapshots) = snapshots();
        let frame = frame(&labels, &snapshots, PROGRESS, Width::Columns(200));
        assert_eq!(
            frame,
            super::frame(&labels, &snapshots, PROGRESS, Width::Unlimited)
        );
        insta::assert_snapshot!(frame, @r"
         CPU    samples        min    current       mean       p99≈         max  missed   latency in µs, 2.9 s of 3.0 s
           0       2877      2.176      5.850      6.638     26.527    2283.378       2
           1       2869      2.177      4.690      7.340     25.807    1944.916      12
        ");
    }

    #[test]
    fn at_80_columns_the_progress_goes_above_the_table() {
        let (labels, snapshots) = snapshots();
        let frame = frame(&labels, &snapshots, PROGRESS, Width::Columns(80));
        assert!(Width::Columns(80).fits(&frame));
        insta::assert_snapshot!(frame, @r"
        latency in µs, 2.9 s of 3.0 s
         CPU    samples        min    current       mean       p99≈         max  missed
           0       2877      2.176      5.850      6.638     26.527    2283.378       2
           1       2869      2.177      4.690      7.340     25.807    1944.916      12
        ");
    }

    #[test]
    fn narrower_the_figures_least_needed_are_given_up() {
        let (labels, snapshots) = snapshots();
        let frame = frame(&labels, &snapshots, PROGRESS, Width::Columns(40));
        assert!(Width::Columns(40).fits(&frame));
        insta::assert_snapshot!(frame, @r"
        latency in µs, 2.9 s of 3.0 s
         CPU       p99≈         max  missed
           0     26.527    2283.378       2
           1     25.807    1944.916      12
        ");
    }

    #[test]
    fn a_log_line_wraps_only_where_it_does_not_fit() {
        let (labels, snapshots) = snapshots();
        let wide = lines(&labels, &snapshots, PROGRESS, Width::Unlimited);
        assert_eq!(wide.lines().count(), 2);
        assert_eq!(
            wide,
            lines(&labels, &snapshots, PROGRESS, Width::Columns(200))
        );
        let narrow = lines(&labels, &snapshots, PROGRESS, Width::Columns(80));
        assert!(Width::Columns(80).fits(&narrow));
        insta::assert_snapshot!(narrow, @r"
        [2.9 s of 3.0 s] cpu 0: samples 2877 min 2.176 µs current 5.850 µs mean 6.638 µs
            p99≈ 26.527 µs max 2283.378 µs missed 2
        [2.9 s of 3.0 s] cpu 1: samples 2869 min 2.177 µs current 4.690 µs mean 7.340 µs
            p99≈ 25.807 µs max 1944.916 µs missed 12
        ");
    }
}

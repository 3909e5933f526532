//! Every number latlab shows is measured or unknown: a figure an imported file lacked
//! is unknown in every consumer, a percentile among overflowed samples is a bound, a
//! source's own figures are kept as it printed them, and a Run file that latlab could
//! not have written is refused, naming the field.

use crate::common::{fixture, with_store};

use latlab_model::run::{Percentile, Run};
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/example-run.json")
}

/// Imports `files` (as given) into `store`; returns the new runs' ids in file order.
fn import(store: &Path, files: &[&Path], extra: &[&str]) -> Vec<String> {
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, text, err) = with_store(store, &args);
    assert_eq!(code, 0, "{err}");
    text.lines()
        .filter_map(|l| l.split(" as ").nth(1))
        .map(|rest| rest.split(':').next().unwrap().to_string())
        .collect()
}

fn export(store: &Path, id: &str, format: &str) -> String {
    let (code, text, err) = with_store(store, &["export", id, "--format", format]);
    assert_eq!(code, 0, "{format}: {err}");
    text
}

#[test]
fn an_imported_mean_without_a_deviation_is_compared_as_it_is_never_as_zero() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let ids = import(&store, &[&example(), &fixture("cyclictest-2t.json")], &[]);
    let (measured, imported) = (&ids[0], &ids[1]);
    // cyclictest printed avg 11.44 and 11.81 µs over 500 cycles each, and no deviation.
    for (base, new) in [(measured, imported), (imported, measured)] {
        let (code, text, err) = with_store(&store, &["compare", base, new, "--metric", "mean"]);
        assert!(code == 0 || code == 1, "{err}");
        assert!(text.contains("11.625 µs"), "{text}");
        assert!(!text.contains(" 0.000 µs"), "a stand-in 0: {text}");
        assert!(!text.contains("-100.0 %"), "{text}");
        assert!(text.contains("a standard deviation is unknown"), "{text}");
    }
    // The table: missed periods unknown (cyclictest does not count them), mean known.
    let (_, text, _) = with_store(&store, &["compare", measured, imported]);
    let row = text
        .lines()
        .find(|l| l.contains(imported.as_str()))
        .unwrap();
    assert!(row.contains(" ? ") && row.contains("11.625"), "{row}");
    let (code, html, err) = with_store(&store, &["report", measured, imported]);
    assert_eq!(code, 0, "{err}");
    assert!(
        html.contains("11.625") && !html.contains(">0.000<"),
        "report"
    );
}

#[test]
fn compare_reads_an_imported_histogram_as_show_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    // One thread: the compare table's merged p50 is the stream's own.
    let ids = import(&store, &[&fixture("cyclictest-1t.hist.txt")], &[]);
    let run = Run::from_json(&export(&store, &ids[0], "json")).unwrap();
    let p50 = run.streams[0]
        .stats
        .percentile(50.0)
        .unwrap()
        .exact()
        .unwrap();
    assert_eq!(p50.0 % 1_000, 0, "a whole-µs bucket edge of cyclictest's");
    let (code, text, err) = with_store(&store, &["compare", &ids[0], &ids[0]]);
    assert_eq!(code, 0, "{err}");
    let row = text.lines().find(|l| l.contains(ids[0].as_str())).unwrap();
    let shown = format!(" {:.3} ", p50.0 as f64 / 1e3);
    assert!(row.contains(&shown), "{shown} in {row}");
}

#[test]
fn a_figure_the_source_lacked_is_unknown_in_every_export() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let ids = import(&store, &[&fixture("cyclictest-2t.hist.txt")], &[]);
    let id = &ids[0];
    // json: null, never 0.
    let run = Run::from_json(&export(&store, id, "json")).unwrap();
    for s in &run.streams {
        assert_eq!(s.missed_periods, None);
        assert_eq!(s.policy, None);
        assert_eq!(s.stats.stddev_ns, None);
    }
    assert_eq!(run.conditions, None);
    assert_eq!(run.host, None);
    // csv: empty cells.
    let csv = export(&store, id, "csv");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let missed = header.iter().position(|c| *c == "missed_periods").unwrap();
    let policy = header.iter().position(|c| *c == "policy").unwrap();
    for row in csv.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[missed], "", "{row}");
        assert_eq!(cells[policy], "", "{row}");
    }
    // OpenMetrics: no missed-periods sample rather than a 0.
    let metrics = export(&store, id, "openmetrics");
    assert!(
        !metrics.contains("latlab_missed_periods_total{"),
        "{metrics}"
    );
    // cyclictest JSON: no made-up host facts or times.
    let json = export(&store, id, "cyclictest-json");
    assert!(!json.contains("\"sysinfo\"") && !json.contains("\"start_time\""));
    // show: `?`.
    let (code, shown, err) = with_store(&store, &["show", id]);
    assert_eq!(code, 0, "{err}");
    // The headline is a wrapped paragraph.
    let words = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("host unknown"), "{shown}");
}

#[test]
fn comparing_on_a_figure_a_run_lacks_says_so_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    // cyclictest without -h keeps no histogram: no percentiles.
    let ids = import(
        &store,
        &[&example(), &fixture("cyclictest-nohist.json")],
        &[],
    );
    // cyclictest ran on CPU 1 alone: a difference, let pass.
    let compare = |metric: &str| {
        let args = ["compare", &ids[0], &ids[1], "--metric", metric, "--force"];
        with_store(&store, &args)
    };
    let (code, text, err) = compare("p99");
    assert_eq!(code, 2, "{text}{err}");
    assert!(text.contains("CANNOT BE JUDGED"), "{text}");
    assert!(text.contains("p99 is unknown"), "{text}");
    assert!(err.contains("--metric"), "{err}");
    // The maximum it has: judged.
    let (code, text, _) = compare("max");
    assert!(code == 0 || code == 1, "{text}");
}

#[test]
fn percentiles_among_overflowed_samples_are_bounds_not_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    // `cyclictest -h400 -N`: every sample is above the 400 ns range.
    let all_over = import(
        &store,
        &[&fixture("cyclictest-overflow-ns.hist.txt")],
        &["--unit", "ns"],
    );
    let run = Run::from_json(&export(&store, &all_over[0], "json")).unwrap();
    for s in &run.streams {
        let p50 = s.stats.percentile(50.0).unwrap();
        assert!(p50.is_bound(), "{p50:?}");
        assert_eq!(p50.value(), s.stats.min_ns.unwrap(), "the best bound known");
        assert_eq!(
            s.stats.percentile(99.999),
            s.stats.max_ns.map(Percentile::Exact)
        );
    }
    let csv = export(&store, &all_over[0], "csv");
    // A bound stays a number in its column, with `at_least` beside it.
    assert!(
        csv.lines().skip(1).all(|row| row.contains(",at_least,")),
        "{csv}"
    );
    assert!(!csv.contains(">="), "{csv}");
    let (_, shown, _) = with_store(&store, &["show", &all_over[0]]);
    assert!(shown.contains("≥ "), "{shown}");
    // The store's listing keeps the bound too.
    let (_, listed, _) = with_store(&store, &["runs"]);
    let row = listed.lines().find(|l| l.contains(&all_over[0])).unwrap();
    assert!(row.contains("≥ "), "{row}");
    // jitterdebugger: 164 of its 1991 samples are at 1000 µs or more.
    let some_over = import(&store, &[&fixture("jitterdebugger-overflow.json")], &[]);
    let run = Run::from_json(&export(&store, &some_over[0], "json")).unwrap();
    let s = &run.streams[0];
    assert_eq!(s.samples, 1991);
    assert!(s.stats.percentile(50.0).unwrap().exact().is_some());
    assert_eq!(
        s.stats.percentile(99.0),
        Some(Percentile::AtLeast {
            at_least_ns: latlab_model::Nanos(1_000_000)
        })
    );
}

#[test]
fn a_reexported_cyclictest_histogram_keeps_its_overflows() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let ids = import(&store, &[&fixture("cyclictest-2t.hist.txt")], &[]);
    let text = export(&store, &ids[0], "cyclictest");
    let original = std::fs::read_to_string(fixture("cyclictest-2t.hist.txt")).unwrap();
    let line = |text: &str, label: &str| {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap()
            .to_string()
    };
    for label in [
        "# Histogram Overflows:",
        "# Total:",
        "# Min Latencies:",
        "# Max Latencies:",
    ] {
        assert_eq!(line(&text, label), line(&original, label), "{label}");
    }
    let rows = text.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(rows, 100, "the source's 100 µs range");
}

#[test]
fn oslat_figures_are_kept_as_oslat_printed_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let ids = import(&store, &[&fixture("oslat.txt")], &[]);
    let (code, shown, err) = with_store(&store, &["show", &ids[0]]);
    assert_eq!(code, 0, "{err}");
    // oslat printed Minimum 1, Average 1.001, Maximum 2702 (µs).
    let row = shown
        .lines()
        .find(|l| l.contains("noise") && l.contains("busy-loop") && l.contains('│'))
        .unwrap();
    for figure in ["1.000", "1.001", "2702.000"] {
        assert!(row.contains(figure), "{figure} in {row}");
    }
}

/// The example Run with one change, written to a file in `dir`.
fn edited(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example()).unwrap()).unwrap();
    edit(&mut value);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    path
}

#[test]
fn a_run_file_latlab_could_not_have_written_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            edited(dir.path(), "samples.json", |v| {
                v["streams"][0]["samples"] = 999_999.into()
            }),
            "streams[0].samples",
        ),
        (
            edited(dir.path(), "max.json", |v| {
                let p99 = v["streams"][0]["stats"]["percentiles_ns"]["99"]
                    .as_i64()
                    .unwrap();
                v["streams"][0]["stats"]["max_ns"] = (p99 - 1).into();
            }),
            "streams[0].stats",
        ),
        (
            edited(dir.path(), "mean.json", |v| {
                v["streams"][0]["stats"]["mean_ns"] = 1e30.into()
            }),
            "streams[0].stats.mean_ns",
        ),
        (
            edited(dir.path(), "hist.json", |v| {
                v["streams"][0]["histogram"]["data"] = "AAAA".into()
            }),
            "streams[0].histogram.data",
        ),
        (
            edited(dir.path(), "empty-id.json", |v| v["id"] = "".into()),
            "id",
        ),
        (
            edited(dir.path(), "last.json", |v| v["id"] = "last".into()),
            "id",
        ),
        (
            edited(dir.path(), "path.json", |v| {
                v["id"] = "../../etc/passwd".into()
            }),
            "id",
        ),
        (
            edited(dir.path(), "escape.json", |v| {
                v["id"] = "20261121T001012Z-\u{1b}[2J".into()
            }),
            "id",
        ),
        (
            edited(dir.path(), "time.json", |v| {
                v["started_at"] = "yesterday".into()
            }),
            "started_at",
        ),
    ];
    for (file, field) in &cases {
        let (code, _, err) = with_store(&store, &["import", &file.display().to_string()]);
        assert_eq!(code, 2, "{}: {err}", file.display());
        assert!(
            err.contains(&format!("{}: {field}", file.display())),
            "{}: {err}",
            file.display()
        );
        assert!(!err.contains('\u{1b}'), "{err}");
    }
    let (_, runs, _) = with_store(&store, &["runs"]);
    assert!(!runs.contains("20261121"), "nothing was stored: {runs}");
}

#[test]
fn foreign_counts_past_what_a_count_holds_are_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let original = std::fs::read_to_string(fixture("cyclictest-1t.hist.txt")).unwrap();
    let huge = original.replacen("000005 000014", "000005 18446744073709551615", 1);
    assert_ne!(huge, original, "the fixture has the row to edit");
    let file = dir.path().join("huge.hist.txt");
    std::fs::write(&file, huge).unwrap();
    let (code, _, err) = with_store(&store, &["import", &file.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("huge.hist.txt:"), "{err}");
    assert!(err.contains("2^63"), "{err}");
    // One count past what a histogram's encoding holds, the figures made to match: it
    // could be imported but never read back.
    let past = original
        .replacen("000005 000014", "000005 9223372036854775808", 1)
        .replacen("# Total: 000000499", "# Total: 9223372036854776293", 1);
    assert_ne!(past, original);
    let file = dir.path().join("past.hist.txt");
    std::fs::write(&file, past).unwrap();
    let (code, _, err) = with_store(&store, &["import", &file.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("past.hist.txt:") && err.contains("2^63"),
        "{err}"
    );
    // An average above the maximum.
    let avg = original.replacen("# Avg Latencies: 00012", "# Avg Latencies: 99999", 1);
    assert_ne!(avg, original);
    let file = dir.path().join("avg.hist.txt");
    std::fs::write(&file, avg).unwrap();
    let (code, _, err) = with_store(&store, &["import", &file.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("avg.hist.txt:") && err.contains("mean"),
        "{err}"
    );
}

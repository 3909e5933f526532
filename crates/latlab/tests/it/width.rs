//! Output follows the terminal's width: every table and listing fits 80 columns (a
//! board's serial console), is as it always was at 200 and into a pipe, and
//! `--format wide` keeps it whole; the live view redraws exactly over its last frame in
//! a terminal of 80 columns. Stores are filled from `docs/example-run.json`, so the
//! snapshots hold nothing that changes from run to run but the time a run was added,
//! which is masked.

use crate::common::{latlab, needs, shared, text};
use latlab_model::run::Run;
use latlab_model::stamp::rfc3339;
use latlab_model::width::{columns, rows};
use std::path::{Path, PathBuf};

fn example() -> Run {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/example-run.json");
    Run::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A store in `dir` (as `runs.sqlite`, so its name is the same in every listing) with
/// the example run and two made from it: renamed, tagged, one of a scenario.
fn store(dir: &Path) {
    let mut other = example();
    other.id = "20261121T010000Z-000001".to_string();
    other.streams.truncate(1);
    let mut third = example();
    third.id = "20261121T020000Z-000002".to_string();
    third.scenario = Some("wilshire-disk".to_string());
    for (run, labels) in [
        (
            example(),
            vec!["--name", "baseline", "--tag", "board=imx8mp"],
        ),
        (other, vec!["--name", "one-cpu"]),
        (third, vec!["--tag", "kernel=rt"]),
    ] {
        let file = dir.join(format!("{}.json", run.id));
        std::fs::write(&file, run.to_json_pretty()).unwrap();
        let out = latlab()
            .current_dir(dir)
            .args(["import", "--store", "runs.sqlite"])
            .arg(&file)
            .args(labels)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

/// `latlab ARGS` in `dir` with `COLUMNS` (none: a pipe, nothing narrowed): stdout.
fn at(dir: &Path, columns: Option<&str>, args: &[&str]) -> String {
    let mut command = latlab();
    command.current_dir(dir).args(args);
    if let Some(columns) = columns {
        command.env("COLUMNS", columns);
    }
    let out = command.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Fails unless every line of `output` is at most `width` columns wide.
fn assert_fits(output: &str, width: usize, what: &str) {
    for line in output.lines() {
        let w = columns(line);
        assert!(
            w <= width,
            "{what}: a line of {w} columns:\n{line}\n{output}"
        );
    }
}

/// The times the runs were added (now, to the minute) masked, as wide as they were.
fn masked(listing: &str) -> String {
    // This minute and the two before, as the table shows them (UTC): the imports may
    // have crossed a minute.
    let now = std::time::SystemTime::now();
    let mut out = listing.to_string();
    for back in [0, 60, 120] {
        let stamp = rfc3339(now - std::time::Duration::from_secs(back));
        out = out.replace(&stamp[..16].replacen('T', " ", 1), "YYYY-MM-DD hh:mm");
    }
    out
}

fn check_fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../latlab-measure/tests/fixtures/check")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_table_fits_80_columns_and_is_whole_in_a_pipe_and_with_format_wide() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let vm = check_fixture("vm");
    let store = ["--store", "runs.sqlite"];
    let commands: Vec<Vec<&str>> = vec![
        vec!["runs"],
        vec!["runs", "--references"],
        vec!["show", "baseline"],
        vec!["compare", "baseline", "one-cpu", "--force"],
        vec!["probes", "--long"],
        vec!["methods"],
        vec!["loads"],
        vec!["scenarios"],
        vec!["check", "--root", &vm],
    ];
    for command in commands {
        let mut args = command.clone();
        if !matches!(
            command[0],
            "probes" | "methods" | "loads" | "scenarios" | "check"
        ) {
            args.extend(store);
        }
        let piped = at(dir.path(), None, &args);
        assert_fits(&at(dir.path(), Some("80"), &args), 80, &args.join(" "));
        let mut wide = args.clone();
        wide.extend(["--format", "wide"]);
        assert_eq!(at(dir.path(), Some("80"), &wide), piped, "{wide:?}");
        // Each was wider than 80 columns but `methods` (78).
        let was_wide = piped.lines().any(|l| columns(l) > 80);
        assert!(was_wide || command == ["methods"], "{args:?} was narrow");
    }
    // report: --format names the kind there.
    let report = ["report", "baseline", "--store", "runs.sqlite"];
    assert_fits(&at(dir.path(), Some("80"), &report), 80, "report");
    let wide = [&report[..], &["--wide"]].concat();
    assert_eq!(
        at(dir.path(), Some("80"), &wide),
        at(dir.path(), None, &report)
    );
}

#[test]
fn the_runs_table_at_80_and_200_columns() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let runs = |columns| {
        masked(&at(
            dir.path(),
            Some(columns),
            &["runs", "--store", "runs.sqlite"],
        ))
    };
    let (narrow, wide) = (runs("80"), runs("200"));
    assert_fits(&narrow, 80, "runs at 80");
    assert_fits(&wide, 200, "runs at 200");
    insta::assert_snapshot!("runs_at_80", narrow);
    insta::assert_snapshot!("runs_at_200", wide);
    // Too narrow for bands of more than a column, each reference is stacked.
    let references = at(dir.path(), Some("80"), &["runs", "--references"]);
    assert_fits(&references, 80, "runs --references at 80");
    insta::assert_snapshot!("references_at_80", references);
}

#[test]
fn the_check_table_at_80_and_200_columns() {
    let dir = tempfile::tempdir().unwrap();
    let tuned = check_fixture("rt-tuned");
    for width in [80, 200] {
        let table = at(
            dir.path(),
            Some(&width.to_string()),
            &["check", "--root", &tuned],
        );
        assert_fits(&table, width, "check");
        insta::assert_snapshot!(format!("check_at_{width}"), table);
    }
}

/// What broke: at 80 columns the live table's title line wrapped, yet the redraw moved
/// the cursor up one row per line, leaving a stale title per frame and a garbled last
/// frame. In a pseudo-terminal of 80 columns every frame's lines fit, and each redraw
/// moves up exactly the rows the frame before it took.
#[test]
fn the_live_view_at_80_columns_redraws_exactly_over_its_last_frame() {
    needs("script", "bsdutils");
    let _slot = shared();
    let command = format!(
        "stty cols 80 rows 50; {} run -d 1200ms -p 1ms -c 0 --no-store --no-audit",
        crate::common::latlab_path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("TERM", "xterm")
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    let screen = text(&out.stdout).replace('\r', "").replace("\x1b[J", "");
    // The frames: what comes after each redraw's move up (`ESC [ n A`; the carriage
    // return and the clearing below dropped above), up to the next; the last ends
    // where the summary begins.
    let mut pieces = screen.split("\x1b[");
    let first = pieces.next().unwrap_or_default();
    let mut frames = vec![(0, first.to_string())];
    for piece in pieces {
        if let Some((up, rest)) = piece.split_once('A') {
            if let Ok(up) = up.parse::<usize>() {
                frames.push((up, rest.to_string()));
                continue;
            }
        }
        frames
            .last_mut()
            .unwrap()
            .1
            .push_str(&format!("\x1b[{piece}"));
    }
    assert!(frames.len() >= 3, "fewer than 3 frames:\n{screen}");
    let frame_of = |text: &str| {
        // The first piece holds the banner too; the last, the summary after a blank line.
        let table = text.split("\n\n").next().unwrap_or_default();
        let table = table.trim_end_matches('\n');
        match table.find("latency in µs") {
            Some(start) => format!("{}\n", &table[start..]),
            None => format!("{table}\n"),
        }
    };
    for pair in frames.windows(2) {
        let drawn = frame_of(&pair[0].1);
        assert_fits(&drawn, 80, "a frame");
        assert_eq!(
            pair[1].0,
            rows(&drawn, 80),
            "moved up {} rows over a frame of {}:\n{drawn}",
            pair[1].0,
            rows(&drawn, 80)
        );
    }
}

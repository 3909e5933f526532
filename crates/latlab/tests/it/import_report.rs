//! `latlab import` and `latlab report` end to end: other tools' files into the store and
//! back out, round trips through the cyclictest formats, all-or-nothing imports, and
//! every report kind.

use crate::common::{fixture, latlab, with_store};

use latlab_model::run::Run;
use std::path::Path;

fn stored_ids(store: &Path) -> Vec<String> {
    let (code, text, err) = with_store(store, &["runs", "-n", "100"]);
    assert_eq!(code, 0, "{err}");
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.contains('T') && w.contains('-'))
        .map(str::to_string)
        .collect()
}

fn load(store: &Path, id: &str) -> Run {
    let (code, text, err) = with_store(store, &["export", id, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    Run::from_json(&text).unwrap()
}

#[test]
fn foreign_files_import_detected_and_keep_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let files = [
        "cyclictest-2t.json",
        "cyclictest-1t.hist.txt",
        "cyclictest-2t.verbose.txt",
        "oslat.txt",
        "rtla-timerlat-hist.txt",
        "jitterdebugger.json",
    ];
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| fixture(f).display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, text, err) = with_store(&store, &args);
    assert_eq!(code, 0, "{err}");
    for format in [
        "cyclictest-json",
        "cyclictest-hist",
        "cyclictest-verbose",
        "oslat",
        "rtla-timerlat-hist",
        "jitterdebugger",
    ] {
        assert!(text.contains(&format!("({format})")), "{format}: {text}");
    }
    let ids = stored_ids(&store);
    assert_eq!(ids.len(), files.len(), "{ids:?}");
    for id in &ids {
        let run = load(&store, id);
        let import = run.import.as_ref().expect("provenance kept");
        assert!(
            !import.lacks.is_empty(),
            "{id}: says what the source lacked"
        );
        for s in &run.streams {
            assert_eq!(
                s.decode_histogram().unwrap().unwrap().len(),
                s.samples,
                "{id}"
            );
            if s.samples > 0 {
                let (min, max) = (s.stats.min_ns.unwrap(), s.stats.max_ns.unwrap());
                let p50 = s.stats.percentile(50.0).unwrap().value();
                assert!(min <= p50 && p50 <= max, "{id}: {min:?} {p50:?} {max:?}");
            }
        }
        // The summary of an imported run names its source and its unknowns.
        let (code, shown, err) = with_store(&store, &["show", id]);
        assert_eq!(code, 0, "{err}");
        assert!(shown.contains("Imported from"), "{shown}");
    }
}

#[test]
fn a_bad_file_imports_nothing_and_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let good = fixture("cyclictest-1t.hist.txt");
    let text = std::fs::read_to_string(&good).unwrap();
    let bad = dir.path().join("bad.hist.txt");
    // A count that is not a number, on the histogram's fourth row.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let row = lines
        .iter()
        .position(|l| l.starts_with("000003"))
        .expect("a row for 3 µs");
    lines[row] = "000003 00x001".to_string();
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let out = latlab()
        .arg("import")
        .arg(&good)
        .arg(&bad)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("bad.hist.txt:{}", row + 1)),
        "names file and line: {err}"
    );
    assert!(stored_ids(&store).is_empty(), "nothing half-imported");

    let unknown = dir.path().join("notes.txt");
    std::fs::write(&unknown, "hello\n").unwrap();
    let (code, _, err) = with_store(&store, &["import", unknown.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("--format"), "{err}");
}

#[test]
fn a_run_exported_as_cyclictest_histogram_imports_with_the_same_count_min_and_max() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let (code, _, err) = with_store(&store, &["run", "-c", "0", "-d", "1s", "-q"]);
    assert_eq!(code, 0, "{err}");
    let original = load(&store, "last");
    for format in ["cyclictest", "cyclictest-json"] {
        let file = dir.path().join(format!("export.{format}"));
        let (code, _, err) = with_store(
            &store,
            &[
                "export",
                &original.id,
                "--format",
                format,
                "-o",
                file.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{err}");
        let (code, text, err) = with_store(&store, &["import", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let id = text
            .split(" as ")
            .nth(1)
            .and_then(|t| t.split(':').next())
            .unwrap();
        let back = load(&store, id);
        assert_eq!(back.streams.len(), original.streams.len());
        for (a, b) in original.streams.iter().zip(&back.streams) {
            assert_eq!(a.samples, b.samples, "{format}: count");
            // cyclictest's formats hold whole microseconds, truncated.
            let whole_us = |n: latlab_model::Nanos| n.0.div_euclid(1_000) * 1_000;
            assert_eq!(
                b.stats.min_ns.map(|n| n.0),
                a.stats.min_ns.map(whole_us),
                "{format}: min"
            );
            assert_eq!(
                b.stats.max_ns.map(|n| n.0),
                a.stats.max_ns.map(whole_us),
                "{format}: max"
            );
        }
    }
}

#[test]
fn latlab_run_json_imports_as_it_is() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let json = dir.path().join("run.json");
    let out = latlab()
        .args(["run", "-c", "0", "-d", "1s", "-q", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success());
    let written = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (code, _, err) = with_store(&store, &["import", json.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(load(&store, "last"), written);
}

#[test]
fn reports_in_every_kind_and_kinds_from_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let (code, _, err) = with_store(
        &store,
        &["import", fixture("cyclictest-2t.json").to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = with_store(&store, &["import", fixture("oslat.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let ids = stored_ids(&store);
    let report = |args: &[&str]| {
        let mut all = vec!["report"];
        all.extend(ids.iter().map(String::as_str));
        all.extend(args);
        with_store(&store, &all)
    };
    for (name, marker) in [("r.html", "<svg"), ("r.md", "| "), ("r.txt", "samples")] {
        let file = dir.path().join(name);
        let (code, _, err) = report(&["-o", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(marker), "{name}");
        for id in &ids {
            assert!(text.contains(id.as_str()), "{name} names {id}");
        }
    }
    let (code, text, err) = report(&["--format", "svg-profile"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("<svg") && text.contains("µs"), "{text}");

    let png = dir.path().join("r.png");
    let (code, _, err) = report(&["--format", "png-histogram", "-o", png.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG file");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    assert!(width >= 400, "rasterised at a readable size: {width} px");
    let (code, _, err) = report(&["--format", "png-profile"]);
    assert_eq!(code, 2, "a PNG needs a file");
    assert!(err.contains("-o"), "{err}");

    let (code, _, err) = report(&["-o", dir.path().join("r.svg").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("svg-histogram"), "{err}");
    let (code, _, err) = report(&["--format", "pdf"]);
    assert_eq!(code, 2);
    assert!(err.contains("--format"), "{err}");
    let (code, _, err) = with_store(&store, &["report", "nosuchrun"]);
    assert_eq!(code, 2, "{err}");
}

//! Importers on real output of the tools (fixtures/import/, see its README): every file
//! imports, is detected as what it is, adds up, reproduces the tool's own figures, and
//! damaged or truncated copies give an error naming the file and the line.

use latlab_formats::export;
use latlab_formats::import::{self, Format, ImportContext, TimeUnit};
use latlab_model::run::{Percentile, Run, Stream};
use latlab_model::Nanos;
use proptest::prelude::*;
use std::path::PathBuf;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn ctx(name: &str) -> ImportContext {
    ImportContext::new(name, "20261121T022300Z-000000", "2026-11-21T02:30:00.000Z")
}

/// Every fixture, its format, and the unit it needs (the -N logs do not say).
const FIXTURES: &[(&str, Format, Option<TimeUnit>)] = &[
    ("cyclictest-1t.hist.txt", Format::CyclictestHist, None),
    ("cyclictest-2t.hist.txt", Format::CyclictestHist, None),
    ("cyclictest-2t-newer.hist.txt", Format::CyclictestHist, None),
    (
        "cyclictest-2t-status-H.hist.txt",
        Format::CyclictestHist,
        None,
    ),
    (
        "cyclictest-2t-status-D3.hist.txt",
        Format::CyclictestHist,
        None,
    ),
    (
        "cyclictest-ns-status.hist.txt",
        Format::CyclictestHist,
        None,
    ),
    (
        "cyclictest-ns-q.hist.txt",
        Format::CyclictestHist,
        Some(TimeUnit::Nanoseconds),
    ),
    (
        "cyclictest-overflow-ns.hist.txt",
        Format::CyclictestHist,
        Some(TimeUnit::Nanoseconds),
    ),
    ("cyclictest-quote.hist.txt", Format::CyclictestHist, None),
    ("cyclictest-zero.hist.txt", Format::CyclictestHist, None),
    ("cyclictest-2t.json", Format::CyclictestJson, None),
    ("cyclictest-nohist.json", Format::CyclictestJson, None),
    ("cyclictest-ns.json", Format::CyclictestJson, None),
    ("cyclictest-quote.json", Format::CyclictestJson, None),
    ("cyclictest-zero.json", Format::CyclictestJson, None),
    ("cyclictest-2t.verbose.txt", Format::CyclictestVerbose, None),
    (
        "cyclictest-2t-q.verbose.txt",
        Format::CyclictestVerbose,
        None,
    ),
    (
        "cyclictest-1t-h.verbose.txt",
        Format::CyclictestVerbose,
        None,
    ),
    (
        "cyclictest-ns-h.verbose.txt",
        Format::CyclictestVerbose,
        Some(TimeUnit::Nanoseconds),
    ),
    ("rtla-timerlat-hist.txt", Format::RtlaTimerlatHist, None),
    ("rtla-6.1-timerlat-hist.txt", Format::RtlaTimerlatHist, None),
    (
        "rtla-6.1-timerlat-hist-E40.txt",
        Format::RtlaTimerlatHist,
        None,
    ),
    (
        "rtla-6.12-timerlat-hist-u-ns.txt",
        Format::RtlaTimerlatHist,
        None,
    ),
    (
        "rtla-timerlat-hist-ns-user.txt",
        Format::RtlaTimerlatHist,
        None,
    ),
    ("oslat.txt", Format::Oslat, None),
    ("oslat-2c-z.txt", Format::Oslat, None),
    ("oslat.json", Format::OslatJson, None),
    ("jitterdebugger.json", Format::Jitterdebugger, None),
    ("jitterdebugger-v1.json", Format::Jitterdebugger, None),
    ("jitterdebugger-overflow.json", Format::Jitterdebugger, None),
];

fn import_fixture(name: &str) -> Run {
    let (_, format, unit) = FIXTURES
        .iter()
        .find(|f| f.0 == name)
        .expect("a listed fixture");
    let mut c = ctx(name);
    c.unit = *unit;
    import::import(*format, read(name).as_slice(), &c).unwrap_or_else(|e| panic!("{e}"))
}

/// The per-thread values of a `# LABEL:` line of cyclictest's histogram text.
fn footer(text: &str, label: &str) -> Vec<i64> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("# {label}:")))
        .unwrap_or_else(|| panic!("no '# {label}:' line"));
    line.split(':')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

fn line_of<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(&format!("# {label}:")))
        .unwrap()
}

#[test]
fn every_fixture_is_detected_as_its_format() {
    for (name, format, _) in FIXTURES {
        let head = read(name);
        let head = &head[..head.len().min(import::DETECT_BYTES)];
        assert_eq!(import::detect(head), Some(*format), "{name}");
    }
}

#[test]
fn every_fixture_imports_and_adds_up() {
    for (name, format, _) in FIXTURES {
        let run = import_fixture(name);
        let record = run.import.as_ref().expect("an import record");
        assert_eq!(record.format, format.name());
        assert_eq!(record.file, *name);
        assert!(
            !record.lacks.is_empty(),
            "{name}: every source lacks something"
        );
        for s in &run.streams {
            // A source without a histogram has no percentiles either.
            let Some(hist) = s.decode_histogram().unwrap() else {
                assert!(s.stats.percentiles_ns.is_empty(), "{name}");
                continue;
            };
            assert_eq!(
                hist.len(),
                s.samples,
                "{name} {}: histogram total + overflows = samples",
                s.label()
            );
            assert_eq!(s.histogram.as_ref().unwrap().total, hist.len());
            if s.samples == 0 {
                continue;
            }
            let (min, max) = (s.stats.min_ns.unwrap(), s.stats.max_ns.unwrap());
            let p50 = s.stats.percentile(50.0).unwrap().value();
            assert!(
                min <= p50 && p50 <= max,
                "{name} {}: {min} <= {p50} <= {max}",
                s.label()
            );
            assert!(
                s.stats.mean_ns.unwrap() >= min.0 as f64 - 1.0,
                "{name}: mean below min"
            );
        }
        // The imported Run is a valid latlab.run/2 document.
        let back = Run::from_json(&run.to_json_pretty()).unwrap();
        assert_eq!(
            (back.streams.len(), back.import),
            (run.streams.len(), run.import),
            "{name}"
        );
    }
}

/// The acceptance criterion: a real -h file, imported and exported again as cyclictest
/// text, gives cyclictest's own Min, Avg and Max lines.
#[test]
fn cyclictest_hist_round_trips_its_summary_lines() {
    let exporter = export::exporter("cyclictest").unwrap();
    for name in [
        "cyclictest-1t.hist.txt",
        "cyclictest-2t.hist.txt",
        "cyclictest-2t-newer.hist.txt",
        "cyclictest-quote.hist.txt",
        "cyclictest-zero.hist.txt",
    ] {
        let original = String::from_utf8(read(name)).unwrap();
        let exported = exporter.export(&import_fixture(name)).unwrap();
        for label in ["Min Latencies", "Avg Latencies", "Max Latencies"] {
            assert_eq!(
                line_of(&exported, label),
                line_of(&original, label),
                "{name}"
            );
        }
    }
    // With -H cyclictest adds an all-threads column to Max (and Overflows), which the
    // exporter does not write; the threads' own values must match.
    let name = "cyclictest-2t-status-H.hist.txt";
    let original = String::from_utf8(read(name)).unwrap();
    let exported = exporter.export(&import_fixture(name)).unwrap();
    for label in ["Min Latencies", "Avg Latencies", "Max Latencies"] {
        assert_eq!(
            footer(&exported, label),
            footer(&original, label)[..2],
            "{name} {label}"
        );
    }
}

/// cyclictest's JSON and its -h text of the same run give the same figures.
#[test]
fn cyclictest_json_matches_the_same_runs_histogram_text() {
    let exporter = export::exporter("cyclictest").unwrap();
    for (json, hist) in [
        ("cyclictest-2t.json", "cyclictest-2t.hist.txt"),
        ("cyclictest-quote.json", "cyclictest-quote.hist.txt"),
        ("cyclictest-zero.json", "cyclictest-zero.hist.txt"),
    ] {
        let from_json = import_fixture(json);
        let from_hist = import_fixture(hist);
        assert_eq!(from_json.streams.len(), from_hist.streams.len());
        for (a, b) in from_json.streams.iter().zip(&from_hist.streams) {
            assert_eq!(a.samples, b.samples, "{json}");
            assert_eq!(a.stats.min_ns, b.stats.min_ns, "{json}");
            assert_eq!(a.stats.max_ns, b.stats.max_ns, "{json}");
            assert_eq!(a.stats.percentile(50.0), b.stats.percentile(50.0), "{json}");
        }
        let original = String::from_utf8(read(hist)).unwrap();
        let exported = exporter.export(&from_json).unwrap();
        for label in ["Min Latencies", "Avg Latencies", "Max Latencies"] {
            assert_eq!(
                line_of(&exported, label),
                line_of(&original, label),
                "{json}"
            );
        }
    }
}

#[test]
fn cyclictest_json_keeps_settings_host_and_defects() {
    let run = import_fixture("cyclictest-2t.json");
    assert_eq!(run.tool.name, "cyclictest");
    assert_eq!(run.tool.version.as_deref(), Some("2.40"));
    assert_eq!(run.started_at.as_deref(), Some("2026-11-21T02:23:07.000Z"));
    assert_eq!(run.host.as_ref().unwrap().kernel_release, "6.18.44-fc-v595");
    assert_eq!(
        run.plan.memory_lock,
        Some(latlab_model::run::MemoryLockPlan::All)
    );
    let s = &run.streams[1];
    assert_eq!(
        (s.cpu, s.samples, s.period_ns),
        (Some(1), 500, Some(Nanos::MILLISECOND))
    );
    assert_eq!(s.policy.unwrap().to_string(), "fifo:95");
    assert_eq!(s.stats.max_ns, Some(Nanos(1_056_000)));
    assert!((s.stats.mean_ns.unwrap() - 11_810.0).abs() < 1e-6);

    let quoted = import_fixture("cyclictest-quote.json");
    assert!(quoted
        .command_line
        .unwrap()
        .iter()
        .any(|a| a == "--json=quote\"d.json"));
    assert!(quoted
        .import
        .unwrap()
        .lacks
        .iter()
        .any(|l| l.starts_with("not valid JSON as written (line 3:")));

    let zero = import_fixture("cyclictest-zero.json");
    assert_eq!(zero.streams[0].samples, 0);
    assert_eq!(zero.streams[0].stats.min_ns, None);

    let ns = import_fixture("cyclictest-ns.json");
    assert_eq!(ns.streams[0].stats.min_ns, Some(Nanos(2_862)));
    assert_eq!(ns.streams[0].samples, 300);

    let no_hist = import_fixture("cyclictest-nohist.json");
    assert!(no_hist.streams[0].histogram.is_none());
    assert!(no_hist.streams[0].stats.percentiles_ns.is_empty());
    assert_eq!(no_hist.streams[0].samples, 200);
    assert_eq!(no_hist.streams[0].stats.max_ns, Some(Nanos(7_238_000)));
}

#[test]
fn cyclictest_json_exporter_round_trips() {
    let exporter = export::exporter("cyclictest-json").unwrap();
    let example = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/example-run.json"),
    )
    .unwrap();
    let runs = FIXTURES
        .iter()
        .map(|(name, ..)| (*name, import_fixture(name)))
        .chain([("example-run.json", Run::from_json(&example).unwrap())]);
    // The format holds one phase of one wake-up probe: each such series of each
    // fixture round-trips, and the others are refused.
    let series = runs.flat_map(|(name, run)| {
        let mut keys: Vec<(String, String)> = Vec::new();
        for s in &run.streams {
            let key = (s.phase.clone(), s.probe.clone());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys.into_iter()
            .map(|(phase, probe)| {
                (
                    name,
                    export::narrow(&run, Some(&phase), Some(&probe)).unwrap(),
                )
            })
            .collect::<Vec<_>>()
    });
    for (name, run) in series {
        if !run.streams.iter().all(Stream::measures_wake_ups) {
            let refused = exporter.export(&run).unwrap_err().0;
            assert!(
                refused.contains("not wake-up latencies"),
                "{name}: {refused}"
            );
            continue;
        }
        let text = exporter.export(&run).unwrap();
        serde_json::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("{name}: not valid JSON: {e}"));
        assert_eq!(
            import::detect(text.as_bytes()),
            Some(Format::CyclictestJson),
            "{name}"
        );
        let back = import::import(
            Format::CyclictestJson,
            text.as_bytes(),
            &ctx("exported.json"),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back.streams.len(), run.streams.len());
        let us = |n: Option<Nanos>| n.map(|n| n.0 / 1_000);
        for (a, b) in run.streams.iter().zip(&back.streams) {
            assert_eq!(b.samples, a.samples, "{name}");
            if a.samples > 0 {
                assert_eq!(us(b.stats.min_ns), us(a.stats.min_ns), "{name}");
                assert_eq!(us(b.stats.max_ns), us(a.stats.max_ns), "{name}");
            }
        }
    }
}

#[test]
fn verbose_logs_match_the_histogram_cyclictest_printed_after_them() {
    for name in ["cyclictest-1t-h.verbose.txt", "cyclictest-ns-h.verbose.txt"] {
        let text = String::from_utf8(read(name)).unwrap();
        let unit = if name.contains("-ns") { 1 } else { 1_000 };
        let s = &import_fixture(name).streams[0];
        assert_eq!(
            s.stats.min_ns,
            Some(Nanos(footer(&text, "Min Latencies")[0] * unit)),
            "{name}"
        );
        assert_eq!(
            s.stats.max_ns,
            Some(Nanos(footer(&text, "Max Latencies")[0] * unit)),
            "{name}"
        );
        assert_eq!(
            (s.stats.mean_ns.unwrap() / unit as f64) as i64,
            footer(&text, "Avg Latencies")[0],
            "{name}"
        );
        assert_eq!(s.samples, 300);
        assert_eq!(
            s.period_ns,
            Some(Nanos::MILLISECOND),
            "{name}: -h prints the interval as it is"
        );
        assert_eq!(s.cpu, Some(1));
        assert_eq!(s.timeline.count.iter().sum::<u64>(), 300);
        assert_eq!(s.spikes.top[0].value_ns, s.stats.max_ns.unwrap());
    }
}

#[test]
fn verbose_log_periods_undo_cyclictests_distance() {
    let run = import_fixture("cyclictest-2t.verbose.txt");
    let periods: Vec<Option<Nanos>> = run.streams.iter().map(|s| s.period_ns).collect();
    assert_eq!(periods, [Some(Nanos(1_000_000)), Some(Nanos(1_500_000))]);
    assert_eq!(
        run.streams.iter().map(|s| s.cpu).collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    // cyclictest stopped when thread 0 had its 300 loops (-l 300).
    assert_eq!(
        run.streams.iter().map(|s| s.samples).collect::<Vec<_>>(),
        [300, 210]
    );
    let s = &run.streams[0];
    let top = &s.spikes.top;
    assert!(top.windows(2).all(|w| w[0].value_ns >= w[1].value_ns));
    // A single-thread log without -h has no unambiguous period unless one is given.
    let text = read("cyclictest-2t.verbose.txt");
    let one: Vec<u8> = String::from_utf8(text)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("1:") && !l.starts_with("Thread 1"))
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    let run = import::import(Format::CyclictestVerbose, one.as_slice(), &ctx("one.txt")).unwrap();
    assert_eq!(run.streams[0].period_ns, None);
    assert!(run.streams[0].timeline.count.is_empty());
    let mut given = ctx("one.txt");
    given.period = Some(Nanos::MILLISECOND);
    let run = import::import(Format::CyclictestVerbose, one.as_slice(), &given).unwrap();
    assert_eq!(run.streams[0].period_ns, Some(Nanos::MILLISECOND));
    assert_eq!(run.streams[0].timeline.count.iter().sum::<u64>(), 300);
}

#[test]
fn rtla_keeps_every_column() {
    let run = import_fixture("rtla-timerlat-hist.txt");
    assert_eq!(run.tool.name, "rtla");
    assert_eq!(run.streams.len(), 10);
    assert_eq!(run.phases[0].elapsed_ns, Some(Nanos::from_secs(600)));
    let thr1 = &run.streams[3];
    assert_eq!(
        (thr1.probe.as_str(), thr1.cpu, thr1.samples),
        ("timerlat-thread", Some(1), 600_002)
    );
    assert_eq!(
        (thr1.stats.min_ns, thr1.stats.max_ns),
        (Some(Nanos(1_000)), Some(Nanos(58_000)))
    );

    let run = import_fixture("rtla-timerlat-hist-ns-user.txt");
    let probes: Vec<(&str, Option<usize>, u64)> = run
        .streams
        .iter()
        .map(|s| (s.probe.as_str(), s.cpu, s.samples))
        .collect();
    assert_eq!(
        probes,
        [
            ("timerlat-irq", Some(0), 200),
            ("timerlat-thread", Some(0), 202),
            ("timerlat-user", Some(0), 200),
            ("timerlat-irq", Some(2), 200),
            ("timerlat-thread", Some(2), 202),
            ("timerlat-user", Some(2), 0),
        ]
    );
    assert_eq!(run.streams[1].stats.max_ns, Some(Nanos(23_456)));
    let record = run.import.unwrap();
    assert!(record.lacks.iter().any(|l| l.contains("events missed")));
    assert!(record
        .lacks
        .iter()
        .any(|l| l.contains("bucket width read as 1 µs")));
}

#[test]
fn rtla_files_of_real_kernels_import_with_their_own_counts() {
    for (file, contexts) in [
        ("rtla-6.1-timerlat-hist.txt", 2),
        ("rtla-6.1-timerlat-hist-E40.txt", 2),
        ("rtla-6.12-timerlat-hist-u-ns.txt", 3),
    ] {
        let run = import_fixture(file);
        let text = String::from_utf8(read(file)).unwrap();
        let counts: Vec<u64> = text
            .lines()
            .find_map(|l| l.strip_prefix("count:"))
            .unwrap()
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        // One stream per column, each with the file's count; CPUs 0 and 1.
        assert_eq!(run.streams.len(), 2 * contexts, "{file}");
        let samples: Vec<u64> = run.streams.iter().map(|s| s.samples).collect();
        assert_eq!(samples, counts[..2 * contexts], "{file}");
        assert_eq!(run.streams[0].probe, "timerlat-irq", "{file}");
        let lacks = run.import.unwrap().lacks;
        assert!(
            lacks.iter().any(|l| l.contains("to the whole second")),
            "{file}: {lacks:?}"
        );
        assert!(
            !lacks.iter().any(|l| l.contains("≥ 0 ns")),
            "{file}: {lacks:?}"
        );
    }
}

#[test]
fn rtla_overflows_take_the_tightest_floor_the_file_gives() {
    // -E 40 (µs): the last row printed, of any column, is 37 µs, so the range ends at
    // 38 µs at least; a column without a row of its own is bounded there too, not at 0.
    let run = import_fixture("rtla-6.1-timerlat-hist-E40.txt");
    let thr0 = &run.streams[1];
    assert_eq!(
        (thr0.probe.as_str(), thr0.cpu),
        ("timerlat-thread", Some(0))
    );
    // Its minimum, 47 µs, is above that: the tighter floor.
    assert_eq!(
        thr0.stats.percentile(50.0),
        Some(Percentile::AtLeast {
            at_least_ns: Nanos(47_000)
        })
    );
    let irq1 = &run.streams[2];
    assert_eq!(
        irq1.stats.percentile(50.0),
        Some(Percentile::AtLeast {
            at_least_ns: Nanos(38_000)
        })
    );
    let lacks = run.import.unwrap().lacks;
    assert!(
        lacks
            .iter()
            .any(|l| l.contains("in timerlat-thread cpu 0") && l.contains("≥ 47 µs")),
        "{lacks:?}"
    );
    // ns, every sample over a range of 256 ns: each column's floor is its minimum.
    let run = import_fixture("rtla-6.12-timerlat-hist-u-ns.txt");
    assert_eq!(
        run.streams[2].stats.percentile(50.0),
        Some(Percentile::AtLeast {
            at_least_ns: Nanos(61_054)
        })
    );
}

#[test]
fn oslat_figures_and_percentiles_are_in_oslats_own_convention() {
    let run = import_fixture("oslat.txt");
    let s = &run.streams[0];
    assert_eq!(
        (s.probe.as_str(), s.cpu, run.tool.version.as_deref()),
        ("noise", Some(1), Some("2.40"))
    );
    // As oslat printed them: Minimum 1, Average 1.001, Maximum 2702 (µs).
    assert_eq!(s.stats.min_ns, Some(Nanos(1_000)));
    assert_eq!(s.stats.mean_ns, Some(1_001.0));
    assert_eq!(s.stats.max_ns, Some(Nanos(2_702_000)));
    // Bucket 001 holds the gaps in [0, 1) µs, which oslat prints as 1 µs.
    assert_eq!(
        s.stats.percentile(50.0),
        Some(Percentile::Exact(Nanos(1_000)))
    );
    assert_eq!(s.period_ns, None, "a busy loop has no period");
    let text = String::from_utf8(read("oslat.txt")).unwrap();
    let in_buckets: u64 = text
        .lines()
        .filter(|l| l.contains(" (us):"))
        .map(|l| {
            l.split('\t')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(s.samples, in_buckets);
    let two = import_fixture("oslat-2c-z.txt");
    assert_eq!(
        two.streams.iter().map(|s| s.cpu).collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    let json = import_fixture("oslat.json");
    assert_eq!(
        json.streams[0].stats.max_ns,
        Some(Nanos(1_405_000)),
        "as printed"
    );
    assert_eq!(json.started_at.as_deref(), Some("2026-11-21T02:23:58.000Z"));
}

#[test]
fn jitterdebugger_counts_samples_beyond_its_histogram() {
    let run = import_fixture("jitterdebugger.json");
    assert_eq!(
        run.streams.iter().map(|s| s.samples).collect::<Vec<_>>(),
        [3901, 3886]
    );
    let v1 = import_fixture("jitterdebugger-v1.json");
    let s = &v1.streams[1];
    assert_eq!((s.samples, s.stats.max_ns), (993, Some(Nanos(2_200_000))));
    assert_eq!(s.decode_histogram().unwrap().unwrap().len(), 993);
    assert_eq!(v1.streams[2].samples, 0);
}

/// cyclictest's display thread prints its last status before the measuring threads'
/// last cycles: the histogram counts, and the Run says so.
#[test]
fn status_lines_behind_the_histogram_are_a_warning() {
    let name = "cyclictest-2t-status-D3.hist.txt";
    let text = String::from_utf8(read(name)).unwrap();
    // The live status fills more than the head detect() looks at.
    assert!(text.find("# Histogram").unwrap() > import::DETECT_BYTES);
    let run = import_fixture(name);
    let totals = footer(&text, "Total");
    let overflows = footer(&text, "Histogram Overflows");
    for (t, s) in run.streams.iter().enumerate() {
        assert_eq!(s.samples as i64, totals[t] + overflows[t], "thread {t}");
        assert_eq!(s.period_ns, Some(Nanos::MILLISECOND));
    }
    let codes: Vec<_> = run.warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(codes, ["status-behind-histogram"]);
    assert!(
        run.warnings[0]
            .message
            .contains("thread 0 C:2990 against 2998 samples"),
        "{}",
        run.warnings[0].message
    );
    // A status line ahead of the histogram is a different run's.
    let ahead = text.replacen("C:   2990 Min:      9", "C:   3990 Min:      9", 1);
    let err = import::import(Format::CyclictestHist, ahead.as_bytes(), &ctx(name)).unwrap_err();
    assert!(err.to_string().contains("mixes two runs"), "{err}");
}

/// `cyclictest -v -q` ends with the status lines, which count cycles the log lacks.
#[test]
fn verbose_log_status_lines_tell_the_cycles_not_logged() {
    let run = import_fixture("cyclictest-2t-q.verbose.txt");
    assert_eq!(
        run.streams.iter().map(|s| s.samples).collect::<Vec<_>>(),
        [300, 207]
    );
    assert_eq!(warning_codes(&run), ["samples-not-logged"]);
    let message = &run.warnings[0].message;
    assert!(
        message.contains("thread 1: 213 cycles, 207 logged, its maximum 5.41 ms not among them"),
        "{message}"
    );
    assert!(!message.contains("thread 0"), "{message}");
}

/// A status line without a histogram after it (cyclictest without -h) holds nothing to
/// import, and says what to run instead.
#[test]
fn status_lines_without_histogram_say_how_to_save_results() {
    let text = "policy: fifo: loadavg: 0.42 0.63 0.30 2/94 11188          \n\n\
                T: 0 (11187) P:95 I:1000 C:   2990 Min:      9 Act:   43 Avg:   32 Max:    1982\n";
    assert_eq!(
        import::detect(text.as_bytes()),
        Some(Format::CyclictestHist)
    );
    let err = import::import(Format::CyclictestHist, text.as_bytes(), &ctx("s.txt")).unwrap_err();
    assert!(err.to_string().contains("-h N"), "{err}");
}

fn warning_codes(run: &Run) -> Vec<&str> {
    run.warnings.iter().map(|w| w.code.as_str()).collect()
}

/// Item: a -N file imported without its unit became 1000 times too large, silently.
#[test]
fn the_unit_is_read_from_status_line_widths() {
    let name = "cyclictest-ns-status.hist.txt";
    let run = import_fixture(name);
    let text = String::from_utf8(read(name)).unwrap();
    let min = footer(&text, "Min Latencies")[0];
    assert_eq!(run.streams[0].stats.min_ns, Some(Nanos(min)));
    assert_eq!(warning_codes(&run), [""; 0]);
    assert!(!run.import.unwrap().lacks.iter().any(|l| l.contains("unit")));
    let mut c = ctx(name);
    c.unit = Some(TimeUnit::Microseconds);
    let err = import::import(Format::CyclictestHist, text.as_bytes(), &c).unwrap_err();
    assert!(
        err.to_string().contains("import it without a unit"),
        "{err}"
    );
    assert_eq!(err.line, Some(4));
    // And a µs file's status lines say µs.
    let mut c = ctx("cyclictest-2t-status-D3.hist.txt");
    c.unit = Some(TimeUnit::Nanoseconds);
    let us = read("cyclictest-2t-status-D3.hist.txt");
    assert!(import::import(Format::CyclictestHist, us.as_slice(), &c).is_err());
}

/// Where the file does not say (-q, -v), values implausible in the unit assumed are a
/// warning naming the fix.
#[test]
fn ns_files_read_as_us_are_warned_of() {
    for (name, format) in [
        ("cyclictest-ns-q.hist.txt", Format::CyclictestHist),
        ("cyclictest-ns-h.verbose.txt", Format::CyclictestVerbose),
        ("cyclictest-overflow-ns.hist.txt", Format::CyclictestHist),
    ] {
        let assumed = import::import(format, read(name).as_slice(), &ctx(name)).unwrap();
        assert_eq!(warning_codes(&assumed), ["implausible-unit"], "{name}");
        assert!(assumed.warnings[0].message.contains("--unit ns"), "{name}");
        assert_eq!(warning_codes(&import_fixture(name)), [""; 0], "{name}");
    }
    for (name, _, _) in FIXTURES.iter().filter(|f| f.2.is_none()) {
        let run = import_fixture(name);
        assert!(
            !warning_codes(&run).contains(&"implausible-unit"),
            "{name}: {:?}",
            run.warnings
        );
    }
    // µs read as ns: too small.
    let name = "cyclictest-1t.hist.txt";
    let mut c = ctx(name);
    c.unit = Some(TimeUnit::Nanoseconds);
    let run = import::import(Format::CyclictestHist, read(name).as_slice(), &c).unwrap();
    assert_eq!(warning_codes(&run), ["implausible-unit"]);
    assert!(run.warnings[0].message.contains("--unit us"));
}

/// Cut positions inside a line (so the cut is visible), spread over the file.
fn mid_line_cuts(bytes: &[u8]) -> Vec<usize> {
    [
        bytes.len() / 5,
        bytes.len() / 2,
        bytes.len() * 4 / 5,
        bytes.len().saturating_sub(3),
    ]
    .into_iter()
    .filter_map(|mut at| {
        while at > 0 && at < bytes.len() && (bytes[at - 1] == b'\n' || bytes[at - 1] == b' ') {
            at += 1;
        }
        (at > 0 && at < bytes.len()).then_some(at)
    })
    .collect()
}

#[test]
fn truncated_files_give_an_error_naming_file_and_line() {
    for (name, format, unit) in FIXTURES {
        let bytes = read(name);
        for cut in mid_line_cuts(&bytes) {
            let mut c = ctx(name);
            c.unit = *unit;
            let err = import::import(*format, &bytes[..cut], &c)
                .err()
                .unwrap_or_else(|| panic!("{name} cut at {cut} imported"));
            let text = err.to_string();
            assert!(text.starts_with(&format!("{name}:")), "{text}");
            assert!(
                err.line.is_some(),
                "{name} cut at {cut}: no line in '{text}'"
            );
        }
    }
}

#[test]
fn damaged_files_give_an_error_naming_file_and_line() {
    let cases: &[(&str, Format, &str, &str, u64)] = &[
        (
            "cyclictest-1t.hist.txt",
            Format::CyclictestHist,
            "000005 000014",
            "000005 0000x4",
            8,
        ),
        (
            "cyclictest-1t.hist.txt",
            Format::CyclictestHist,
            "# Total: 000000499",
            "# Total: 000000498",
            103,
        ),
        (
            "cyclictest-1t.hist.txt",
            Format::CyclictestHist,
            "# Min Latencies: 00003",
            "# Min Latencies: 00007",
            104,
        ),
        (
            "cyclictest-2t-status-H.hist.txt",
            Format::CyclictestHist,
            "000005 000058\t000035\t000093",
            "000005 000058\t000035\t000094",
            0,
        ),
        (
            "cyclictest-2t.json",
            Format::CyclictestJson,
            "\"cycles\": 500,",
            "\"cycles\": 5,",
            19,
        ),
        (
            "cyclictest-2t.json",
            Format::CyclictestJson,
            "\"num_threads\": 2",
            "\"num_threads\": 3",
            18,
        ),
        (
            "cyclictest-2t.verbose.txt",
            Format::CyclictestVerbose,
            "       0:       2:       7",
            "       0:       1:       7",
            11,
        ),
        (
            "cyclictest-2t.verbose.txt",
            Format::CyclictestVerbose,
            "       0:       2:       7",
            "       0:       2:      7b",
            11,
        ),
        (
            "rtla-timerlat-hist.txt",
            Format::RtlaTimerlatHist,
            "count:   600002",
            "count:   600003",
            53,
        ),
        (
            "rtla-timerlat-hist.txt",
            Format::RtlaTimerlatHist,
            "max:         16",
            "max:          9",
            56,
        ),
        (
            "oslat.txt",
            Format::Oslat,
            "     Minimum:\t 1 (us)",
            "     Minimum:\t 7 (us)",
            48,
        ),
        (
            "jitterdebugger-v1.json",
            Format::Jitterdebugger,
            "\"count\": 1000,",
            "\"count\": 999,",
            4,
        ),
    ];
    for (name, format, from, to, line) in cases {
        let text = String::from_utf8(read(name)).unwrap();
        assert!(text.contains(from), "{name}: {from}");
        let damaged = text.replacen(from, to, 1);
        let err = import::import(*format, damaged.as_bytes(), &ctx(name))
            .err()
            .unwrap_or_else(|| panic!("{name}: '{to}' imported"));
        let message = err.to_string();
        assert!(message.starts_with(&format!("{name}:")), "{message}");
        if *line > 0 {
            assert_eq!(err.line, Some(*line), "{message}");
        } else {
            assert!(err.line.is_some(), "{message}");
        }
    }
}

#[test]
fn a_different_unit_than_the_file_states_is_refused() {
    let mut c = ctx("cyclictest-2t.json");
    c.unit = Some(TimeUnit::Nanoseconds);
    let err = import::import(
        Format::CyclictestJson,
        read("cyclictest-2t.json").as_slice(),
        &c,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("import it without a unit"),
        "{err}"
    );
}

/// Every field an imported Run has is described in docs/run-format.md (as the example's
/// are, tests/run_format.rs).
#[test]
fn imported_runs_fields_are_documented() {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/run-format.md"),
    )
    .unwrap();
    let documented = |name: &str| {
        doc.match_indices(name).any(|(i, _)| {
            let before = doc[..i].chars().next_back();
            let after = doc[i + name.len()..].chars().next();
            matches!(before, Some('`') | Some('.')) && matches!(after, Some('`' | '.' | '[' | ','))
        })
    };
    let run = import_fixture("cyclictest-2t.json");
    let value = serde_json::to_value(&run).unwrap();
    for key in value["import"].as_object().unwrap().keys() {
        assert!(
            documented(&format!("import.{key}")),
            "import.{key} undocumented"
        );
    }
}

fn streams_agree(a: &[Stream], b: &[Stream]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(
            (x.samples, x.stats.min_ns, x.stats.max_ns, x.stats.mean_ns),
            (y.samples, y.stats.min_ns, y.stats.max_ns, y.stats.mean_ns)
        );
    }
}

#[test]
fn both_histogram_layouts_read_the_same() {
    streams_agree(
        &import_fixture("cyclictest-2t.hist.txt").streams,
        &import_fixture("cyclictest-2t-newer.hist.txt").streams,
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// No input makes an importer panic; every error names the file.
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2_000)) {
        for format in Format::ALL {
            if let Err(e) = import::import(format, bytes.as_slice(), &ctx("garbage")) {
                prop_assert!(e.to_string().starts_with("garbage"));
            }
        }
        let _ = import::detect(&bytes);
    }

    /// Any samples, as a -v log, exported as cyclictest JSON, read back the same: counts,
    /// minimum and maximum in whole µs, early wakes.
    #[test]
    fn cyclictest_json_round_trips_any_samples(values in proptest::collection::vec(-50i64..3_000_000, 1..300)) {
        let log: String = values.iter().enumerate().map(|(c, v)| format!("{:8}:{:8}:{:8}\n", 0, c, v)).collect();
        let mut c = ctx("log.txt");
        c.unit = Some(TimeUnit::Nanoseconds);
        let run = import::import(Format::CyclictestVerbose, log.as_bytes(), &c).unwrap();
        let text = export::exporter("cyclictest-json").unwrap().export(&run).unwrap();
        let back = import::import(Format::CyclictestJson, text.as_bytes(), &ctx("x.json")).unwrap();
        let (a, b) = (&run.streams[0], &back.streams[0]);
        let us = |n: Option<Nanos>| n.map(|n| n.0 / 1_000);
        prop_assert_eq!(b.samples, a.samples);
        prop_assert_eq!(us(b.stats.min_ns), us(a.stats.min_ns));
        prop_assert_eq!(us(b.stats.max_ns), us(a.stats.max_ns));
        prop_assert_eq!(b.early_wakes, a.early_wakes);
    }

    /// Any non-negative samples, exported as cyclictest -h text, read back with the same
    /// count, and minimum and maximum in whole µs (the rows agree with the Min/Max lines).
    #[test]
    fn cyclictest_hist_round_trips_any_samples(values in proptest::collection::vec(0i64..3_000_000, 1..300)) {
        let log: String = values.iter().enumerate().map(|(c, v)| format!("{:8}:{:8}:{:8}\n", 0, c, v)).collect();
        let mut c = ctx("log.txt");
        c.unit = Some(TimeUnit::Nanoseconds);
        let run = import::import(Format::CyclictestVerbose, log.as_bytes(), &c).unwrap();
        let text = export::exporter("cyclictest").unwrap().export(&run).unwrap();
        let back = import::import(Format::CyclictestHist, text.as_bytes(), &ctx("x.txt"));
        let back = back.map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let (a, b) = (&run.streams[0], &back.streams[0]);
        let us = |n: Option<Nanos>| n.map(|n| n.0 / 1_000);
        prop_assert_eq!(b.samples, a.samples);
        prop_assert_eq!(us(b.stats.min_ns), us(a.stats.min_ns));
        prop_assert_eq!(us(b.stats.max_ns), us(a.stats.max_ns));
    }

    /// Damaged copies of real files (a span deleted, a byte changed) never panic.
    #[test]
    fn damaged_fixtures_never_panic(which in 0..FIXTURES.len(), at in 0.0..1.0f64, len in 0usize..40, byte in any::<u8>()) {
        let (name, format, unit) = FIXTURES[which];
        let mut bytes = read(name);
        let start = ((bytes.len() as f64) * at) as usize;
        let end = (start + len).min(bytes.len());
        bytes.drain(start..end);
        if start < bytes.len() {
            bytes[start] = byte;
        }
        let mut c = ctx(name);
        c.unit = unit;
        if let Err(e) = import::import(format, bytes.as_slice(), &c) {
            prop_assert!(e.to_string().starts_with(name));
        }
    }
}

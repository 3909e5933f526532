//! The farm view of `latlab serve` (`/farm`) in a real browser: a store of two rigs
//! that ran two probes, an import, a run whose p99.9 is only a bound and a series
//! whose latest run got worse is served; the page, the runs index and a run's report
//! are opened in headless Chromium 1280 and 800 px wide with axe-core (npm's
//! `axe-core@4`, which `scripts/test` installs into `target/npm`) run in them, which
//! must find no violation, and the Nu HTML checker must find nothing in them. At both
//! widths the farm's tables fit the window, and a screenshot is taken
//! (`LATLAB_FARM_SCREENSHOTS=DIR` keeps them).

use crate::browser::{assert_valid_html, chromium, harness_result, screenshot};
use crate::common::with_store;
use crate::farm_views::Served;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{EncodedHistogram, Percentile, Run};
use latlab_model::stamp::rfc3339;
use latlab_model::Nanos;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// axe-core's script, as `scripts/test` installs it.
fn axe() -> PathBuf {
    let axe = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/npm/node_modules/axe-core/axe.min.js");
    assert!(
        axe.exists(),
        "axe-core is needed for this test: npm install --prefix target/npm axe-core@4 \
         (scripts/test does)"
    );
    axe
}

/// The documented example run as run `n` of `rig` (also its host name), of `probe`,
/// started `hours_ago` hours ago, every sample `shift` later.
fn example(n: u32, rig: &str, probe: &str, hours_ago: u64, shift: i64) -> Run {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
    let mut run = Run::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    let start = SystemTime::now() - Duration::from_secs(hours_ago * 3_600);
    let stamp: String = rfc3339(start)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .take(15)
        .collect();
    run.id = format!("{stamp}Z-{n:06x}");
    run.started_at = Some(rfc3339(start));
    run.ended_at = Some(rfc3339(start + Duration::from_secs(6)));
    let host = run.host.as_mut().unwrap();
    host.hostname = rig.to_string();
    host.rig = Some(rig.to_string());
    for stream in &mut run.streams {
        stream.probe = probe.to_string();
        if shift != 0 {
            let h = stream.decode_histogram().unwrap().unwrap();
            let mut moved = LatencyHistogram::new();
            for (value, count) in h.buckets() {
                moved.record_n(value as i64 + shift, count).unwrap();
            }
            stream.histogram = Some(EncodedHistogram::from_histogram(&moved));
            let stats = &mut stream.stats;
            stats.min_ns = stats.min_ns.map(|n| Nanos(n.0 + shift));
            stats.max_ns = stats.max_ns.map(|n| Nanos(n.0 + shift));
            stats.mean_ns = stats.mean_ns.map(|m| m + shift as f64);
            for p in stats.percentiles_ns.values_mut() {
                *p = Percentile::Exact(Nanos(p.value().0 + shift));
            }
        }
    }
    run
}

/// A store in `dir` of two rigs: bench-01 ran the timer probe four times, the last
/// one 50 ms slower than the others (a regression), and the noise probe once; on
/// bench-02 the timer probe's p99.9 of its latest run is only known as a bound; and a
/// cyclictest histogram is imported. Returns the store and the id of the run that
/// got worse.
fn farm(dir: &Path) -> (PathBuf, String) {
    let store = dir.join("farm.sqlite");
    let mut bounded = example(6, "bench-02", "timer", 3, 0);
    for stream in &mut bounded.streams {
        let max = stream.stats.max_ns.unwrap();
        for rank in ["99.9", "99.99", "99.999"] {
            stream
                .stats
                .percentiles_ns
                .insert(rank.into(), Percentile::AtLeast { at_least_ns: max });
        }
    }
    let worse = example(4, "bench-01", "timer", 2, 50_000_000);
    let runs = [
        example(1, "bench-01", "timer", 200, 0),
        example(2, "bench-01", "timer", 30, 0),
        example(3, "bench-01", "timer", 5, 0),
        worse.clone(),
        example(5, "bench-01", "noise", 1, 0),
        example(7, "bench-02", "timer", 20, 0),
        bounded,
    ];
    let mut files: Vec<String> = runs
        .iter()
        .map(|run| {
            let file = dir.join(format!("{}.json", run.id));
            std::fs::write(&file, run.to_json_pretty()).unwrap();
            file.to_str().unwrap().to_string()
        })
        .collect();
    files.push(
        crate::common::fixture("cyclictest-2t.hist.txt")
            .to_str()
            .unwrap()
            .to_string(),
    );
    let mut import = vec!["import"];
    import.extend(files.iter().map(String::as_str));
    let (code, _, err) = with_store(&store, &import);
    assert_eq!(code, 0, "{err}");
    (store, worse.id)
}

/// The harness: loads `PAGE` in a frame `WIDTH` px wide, runs axe-core in it, and
/// writes into `#result` as JSON its violations, the page's key numbers and flags, and
/// how wide each table's region and the page are against their boxes.
const AXE_HARNESS: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>harness</title></head><body style="margin:0">
<iframe id="page" src="PAGE" width="WIDTH" height="3000" style="border:0"></iframe>
<pre id="result">not loaded</pre>
<script>
document.getElementById('page').addEventListener('load', () => {
  const frame = document.getElementById('page');
  const doc = frame.contentDocument;
  const script = doc.createElement('script');
  script.src = 'AXE';
  script.onload = () => frame.contentWindow.axe.run(doc).then(results => {
    document.getElementById('result').textContent = JSON.stringify({
      violations: results.violations.map(v => ({
        id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.html.slice(0, 200)),
      })),
      passes: results.passes.length,
      keys: [...doc.querySelectorAll('ul.keys li')].map(li => li.textContent),
      flags: [...doc.querySelectorAll('.flag')].map(f => f.textContent),
      series: doc.querySelectorAll('th.series').length,
      cells: [...doc.querySelectorAll('td')].map(td => td.textContent),
      regions: [...doc.querySelectorAll('div.table')].map(r => ({
        label: r.getAttribute('aria-label'), scroll: r.scrollWidth, client: r.clientWidth,
      })),
      page: doc.documentElement.scrollWidth,
    });
  });
  doc.head.appendChild(script);
});
</script></body></html>"#;

/// `page` (a file in `dir`) through the axe harness at `width` px: what it found.
fn axe_at(dir: &Path, page: &str, width: u32) -> serde_json::Value {
    let harness = dir.join(format!("axe-{width}-{page}"));
    let html = AXE_HARNESS
        .replace("PAGE", page)
        .replace("WIDTH", &width.to_string())
        .replace("AXE", &format!("file://{}", axe().display()));
    std::fs::write(&harness, html).unwrap();
    let out = headless(width + 20, 3_200)
        .args([
            "--allow-file-access-from-files",
            "--virtual-time-budget=30000",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--dump-dom",
        ])
        .arg(format!("file://{}", harness.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {out:?}");
    harness_result(&String::from_utf8_lossy(&out.stdout))
}

/// Headless Chromium with a window `width` × `height` px.
fn headless(width: u32, height: u32) -> std::process::Command {
    let mut chromium = std::process::Command::new(chromium());
    chromium.args(["--headless", "--no-sandbox", "--disable-gpu"]);
    chromium.arg(format!("--window-size={width},{height}"));
    chromium
}

/// A screenshot of `path` served at `width` px, as PNG.
fn served_screenshot(dir: &Path, served: &Served, path: &str, width: u32) -> Vec<u8> {
    let profile = dir.join(format!("profile-{width}"));
    let mut chromium = headless(width, 2_400);
    chromium
        .args([
            "--hide-scrollbars",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("http://{}{path}", served.address));
    screenshot(chromium, &dir.join(format!("farm-{width}.png")))
}

#[test]
fn the_farm_view_fits_1280_and_800_px_and_axe_and_the_nu_checker_find_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, latest) = farm(dir.path());
    let mut served = Served::start(&store);
    for (path, name) in [
        ("/farm", "farm.html"),
        ("/", "index.html"),
        (&format!("/run/{latest}") as &str, "run.html"),
    ] {
        let (status, page) = served.request("GET", path);
        assert_eq!(status, 200, "{path}: {page}");
        std::fs::write(dir.path().join(name), page).unwrap();
    }
    let keep = std::env::var_os("LATLAB_FARM_SCREENSHOTS").map(PathBuf::from);
    for width in [1280, 800] {
        for page in ["farm.html", "index.html", "run.html"] {
            let found = axe_at(dir.path(), page, width);
            assert!(found["passes"].as_u64().unwrap() > 10, "axe ran: {found}");
            assert_eq!(
                found["violations"],
                serde_json::json!([]),
                "{page} at {width} px"
            );
        }
        let farm = axe_at(dir.path(), "farm.html", width);
        // Three rigs (the import's host is unknown), 8 runs; bench-01's timer series
        // got worse, and that is its one regression.
        let keys: Vec<&str> = farm["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(keys[0], "3 rigs", "{keys:?}");
        assert!(
            keys[1].starts_with("8 runs, 5 in the last 24 h"),
            "{keys:?}"
        );
        assert_eq!(keys[3], "1 regression", "{keys:?}");
        let flags: Vec<&str> = farm["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(
            flags.iter().filter(|f| **f == "worse").count(),
            2,
            "alert and series: {flags:?}"
        );
        // bench-01: timer and noise; bench-02: timer; the import.
        assert_eq!(farm["series"], 4, "{farm}");
        let cells: Vec<&str> = farm["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert!(
            cells.iter().any(|c| c.starts_with("≥ ")),
            "a bound: {cells:?}"
        );
        assert!(
            cells.contains(&"unknown"),
            "the import's spike rate: {cells:?}"
        );
        assert!(
            !cells.iter().any(|c| *c == "0 µs" || *c == "0 ns"),
            "{cells:?}"
        );
        // Every table fits the window: no region scrolls, nor the page.
        for region in farm["regions"].as_array().unwrap() {
            assert!(
                region["scroll"].as_u64() <= region["client"].as_u64(),
                "{width} px: {region}"
            );
        }
        assert!(
            farm["page"].as_u64().unwrap() <= u64::from(width),
            "{width} px: {farm}"
        );
        let png = served_screenshot(dir.path(), &served, "/farm", width);
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        if let Some(keep) = &keep {
            std::fs::write(keep.join(format!("farm-{width}.png")), &png).unwrap();
        }
    }
    assert_valid_html(&["farm.html", "index.html", "run.html"].map(|p| dir.path().join(p)));
    assert!(served.stop().success());
}

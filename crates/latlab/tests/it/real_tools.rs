//! `latlab import` on files the real tools write, made here during the test run:
//! cyclictest (`-h`, `-v`, `--json`, each with and without `-N` and `-q`), oslat (text and
//! `--json`) and jitterdebugger. Each Run is checked against the file it came from —
//! sample counts, minimum and maximum in the file's own unit — never against a latency.
//! The tools are installed by scripts/test; a test that does not find one fails with the
//! install command.

use crate::common::{shared, text, with_store};
use latlab_model::run::Run;
use latlab_model::Nanos;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a tool may take here (each is asked for a second or less).
const TOOL_LIMIT: Duration = Duration::from_secs(60);

/// `program`, or a panic saying how to install it.
fn installed(program: &str, package: &str) -> &'static str {
    crate::common::needs(program, package);
    program.to_string().leak()
}

/// Runs `program args` in `dir`, its standard output saved in `dir/stdout_name`; kills it
/// (by its PID, as the child of this test) if it outlives [`TOOL_LIMIT`].
fn run_tool(dir: &Path, program: &str, args: &[&str], stdout_name: &str) -> PathBuf {
    let out_path = dir.join(stdout_name);
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TOOL_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} did not end in {TOOL_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert!(status.success(), "{program} {args:?}: {status}: {stderr}");
    out_path
}

/// `latlab import FILE EXTRA...` into a new store in `dir` named `store`; the Run it saved.
pub(crate) fn import(dir: &Path, store: &str, file: &Path, extra: &[&str]) -> Run {
    let store = dir.join(store);
    let mut args = vec!["import", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (code, out, err) = with_store(&store, &args);
    assert_eq!(code, 0, "latlab import {args:?}: {err}{out}");
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("imported ")?.split(" as ").nth(1))
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no run imported: {out}"));
    let (code, json, err) = with_store(&store, &["export", id, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    Run::from_json(&json).unwrap()
}

pub(crate) fn warning_codes(run: &Run) -> Vec<&str> {
    run.warnings.iter().map(|w| w.code.as_str()).collect()
}

/// One thread's count, minimum and maximum as the file states them, in its unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stated {
    samples: u64,
    min: i64,
    max: i64,
}

/// Asserts that each stream has the file's count, and its min and max in `unit_ns`.
pub(crate) fn assert_as_stated(run: &Run, stated: &[Stated], unit_ns: i64, what: &str) {
    assert_eq!(run.streams.len(), stated.len(), "{what}: streams");
    for (s, st) in run.streams.iter().zip(stated) {
        assert_eq!(s.samples, st.samples, "{what} {}: samples", s.label());
        if st.samples > 0 {
            assert_eq!(s.stats.min_ns, Some(Nanos(st.min * unit_ns)), "{what}: min");
            assert_eq!(s.stats.max_ns, Some(Nanos(st.max * unit_ns)), "{what}: max");
        }
    }
}

/// The values of the `# LABEL:` footer line of cyclictest's histogram text.
fn footer(text: &str, label: &str) -> Vec<i64> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("# {label}:")))
        .unwrap_or_else(|| panic!("no '# {label}:' line"));
    line.split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// Per thread: rows' total plus overflows, and the footer's min and max.
pub(crate) fn stated_by_histogram(text: &str, threads: usize) -> Vec<Stated> {
    let (total, over) = (footer(text, "Total"), footer(text, "Histogram Overflows"));
    let (min, max) = (footer(text, "Min Latencies"), footer(text, "Max Latencies"));
    (0..threads)
        .map(|t| Stated {
            samples: (total[t] + over[t]) as u64,
            min: min[t],
            max: max[t],
        })
        .collect()
}

/// Each thread's last `C:` in cyclictest's live status lines.
fn last_status_cycles(text: &str, threads: usize) -> Vec<Option<u64>> {
    let mut cycles = vec![None; threads];
    for line in text.lines() {
        // After the live display's cursor movement (`ESC [ 4 A`), if any.
        let line = match line.rfind('\x1b') {
            Some(at) => line[at + 1..]
                .trim_start_matches(|c: char| c == '[' || c.is_ascii_digit() || c == 'A'),
            None => line,
        };
        let Some(rest) = line.strip_prefix("T:") else {
            continue;
        };
        let thread: usize = rest.split_whitespace().next().unwrap().parse().unwrap();
        let c = rest
            .split("C:")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        if thread < threads {
            cycles[thread] = Some(c.parse().unwrap());
        }
    }
    cycles
}

/// The implausible-unit rule, applied to what the file states: a minimum of 1 ms or
/// more read as µs.
fn implausible_as_us(stated: &[Stated]) -> bool {
    stated.iter().any(|s| s.samples > 0 && s.min >= 1_000)
}

const CYCLICTEST: &[&str] = &["-m", "-p95", "-t2", "-a0,1", "-i1000", "-l300"];

/// Every combination of -N and -q, with its name.
fn variants() -> [(bool, bool, String); 4] {
    [(false, false), (false, true), (true, false), (true, true)].map(|(ns, quiet)| {
        let name = format!(
            "{}{}",
            if ns { "N" } else { "us" },
            if quiet { "-q" } else { "" }
        );
        (ns, quiet, name)
    })
}

fn cyclictest_args<'a>(ns: bool, quiet: bool, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = CYCLICTEST.to_vec();
    args.extend_from_slice(more);
    if ns {
        args.push("-N");
    }
    if quiet {
        args.push("-q");
    }
    args
}

#[test]
fn real_cyclictest_histograms_import_with_their_counts_and_unit() {
    let cyclictest = installed("cyclictest", "rt-tests");
    let _slot = shared();
    let dir = tempfile::tempdir().unwrap();
    for (ns, quiet, name) in variants() {
        let file = format!("{name}.hist.txt");
        let args = cyclictest_args(ns, quiet, &["-h400"]);
        let path = run_tool(dir.path(), cyclictest, &args, &file);
        let content = std::fs::read_to_string(&path).unwrap();
        let stated = stated_by_histogram(&content, 2);
        let unit = if ns { 1 } else { 1_000 };
        // Only a -N -q file does not show its unit (the status lines' widths do).
        let extra: &[&str] = if ns && quiet { &["--unit", "ns"] } else { &[] };
        let run = import(dir.path(), &format!("{name}.sqlite"), &path, extra);
        assert_as_stated(&run, &stated, unit, &file);
        let behind = last_status_cycles(&content, 2)
            .iter()
            .zip(&stated)
            .any(|(c, s)| c.is_some_and(|c| c < s.samples));
        assert_eq!(
            warning_codes(&run).contains(&"status-behind-histogram"),
            behind,
            "{file}: {:?}",
            run.warnings
        );
        assert!(!warning_codes(&run).contains(&"implausible-unit"), "{file}");
        if ns && quiet {
            // Imported as µs, the values are flagged exactly when the rule says so.
            let assumed = import(dir.path(), &format!("{name}-assumed.sqlite"), &path, &[]);
            assert_as_stated(&assumed, &stated, 1_000, &file);
            assert_eq!(
                warning_codes(&assumed).contains(&"implausible-unit"),
                implausible_as_us(&stated),
                "{file}"
            );
        }
    }
}

/// Each thread's samples of a `-v` log (`%8d:%8lu:%8ld`).
fn stated_by_samples(text: &str, threads: usize) -> Vec<Stated> {
    let mut stated = vec![
        Stated {
            samples: 0,
            min: i64::MAX,
            max: i64::MIN,
        };
        threads
    ];
    for line in text.lines() {
        let fields: Vec<&str> = line.split(':').map(str::trim).collect();
        let [thread, _cycle, value] = fields[..] else {
            continue;
        };
        let (Ok(thread), Ok(value)) = (thread.parse::<usize>(), value.parse::<i64>()) else {
            continue;
        };
        let s = &mut stated[thread];
        s.samples += 1;
        s.min = s.min.min(value);
        s.max = s.max.max(value);
    }
    stated
}

#[test]
fn real_cyclictest_verbose_logs_import_with_every_sample() {
    let cyclictest = installed("cyclictest", "rt-tests");
    let _slot = shared();
    let dir = tempfile::tempdir().unwrap();
    for (ns, quiet, name) in variants() {
        let file = format!("{name}.verbose.txt");
        let path = run_tool(
            dir.path(),
            cyclictest,
            &cyclictest_args(ns, quiet, &["-v"]),
            &file,
        );
        let content = std::fs::read_to_string(&path).unwrap();
        let stated = stated_by_samples(&content, 2);
        assert!(stated[0].samples > 0, "{file}: no samples");
        // With -q, status lines after the samples count the cycles measured.
        let unlogged = last_status_cycles(&content, 2)
            .iter()
            .zip(&stated)
            .any(|(c, s)| c.is_some_and(|c| c > s.samples));
        // A -v log never says its unit.
        let (unit, extra): (i64, &[&str]) = if ns {
            (1, &["--unit", "ns"])
        } else {
            (1_000, &[])
        };
        let run = import(dir.path(), &format!("{name}.sqlite"), &path, extra);
        assert_as_stated(&run, &stated, unit, &file);
        let expected: &[&str] = if unlogged {
            &["samples-not-logged"]
        } else {
            &[]
        };
        assert_eq!(warning_codes(&run), expected, "{file}");
        if ns {
            let assumed = import(dir.path(), &format!("{name}-assumed.sqlite"), &path, &[]);
            assert_as_stated(&assumed, &stated, 1_000, &file);
            assert_eq!(
                warning_codes(&assumed).contains(&"implausible-unit"),
                implausible_as_us(&stated),
                "{file}"
            );
        }
    }
}

/// Each thread's `cycles`, `min` and `max`, and the ns in the file's unit
/// (`resolution_in_ns` is 1 with -N, 0 without).
pub(crate) fn stated_by_json(json: &Value) -> (Vec<Stated>, i64) {
    let threads = json["thread"].as_object().expect("a thread object");
    let stated = (0..threads.len())
        .map(|t| {
            let thread = &threads[&t.to_string()];
            Stated {
                samples: thread["cycles"].as_u64().unwrap(),
                min: thread["min"].as_i64().unwrap(),
                max: thread["max"].as_i64().unwrap(),
            }
        })
        .collect();
    let unit = match json["resolution_in_ns"].as_i64() {
        Some(1) => 1,
        _ => 1_000,
    };
    (stated, unit)
}

#[test]
fn real_cyclictest_json_imports_in_its_resolution_and_agrees_with_its_text() {
    let cyclictest = installed("cyclictest", "rt-tests");
    let _slot = shared();
    let dir = tempfile::tempdir().unwrap();
    for (ns, quiet, name) in variants() {
        let json_name = format!("{name}.json");
        let json_arg = format!("--json={json_name}");
        let args = cyclictest_args(ns, quiet, &["-h400", &json_arg]);
        let text_path = run_tool(dir.path(), cyclictest, &args, &format!("{name}.txt"));
        let json_path = dir.path().join(&json_name);
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        let (stated, resolution) = stated_by_json(&json);
        assert_eq!(
            resolution,
            if ns { 1 } else { 1_000 },
            "{json_name}: its unit"
        );
        let run = import(dir.path(), &format!("{name}.sqlite"), &json_path, &[]);
        assert_as_stated(&run, &stated, resolution, &json_name);
        // The same run's histogram text gives the same figures.
        let extra: &[&str] = if ns && quiet { &["--unit", "ns"] } else { &[] };
        let from_text = import(
            dir.path(),
            &format!("{name}-text.sqlite"),
            &text_path,
            extra,
        );
        assert_as_stated(&from_text, &stated, resolution, &format!("{name}.txt"));
    }
}

/// The per-thread values of an oslat text line `LABEL:\t VALUE ...` (one per core).
fn oslat_values(text: &str, label: &str) -> Vec<i64> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{label}:")))
        .unwrap_or_else(|| panic!("no {label} line"))
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect()
}

#[test]
fn real_oslat_text_and_json_import_with_their_counts() {
    let oslat = installed("oslat", "rt-tests");
    let _slot = shared();
    let dir = tempfile::tempdir().unwrap();

    let path = run_tool(dir.path(), oslat, &["-D", "1", "-c", "1"], "oslat.txt");
    let content = std::fs::read_to_string(&path).unwrap();
    // Every bucket line (` 001 (us):\t N`), the last one with the overflows.
    let samples: u64 = content
        .lines()
        .filter(|l| l.contains(" (us):"))
        .map(|l| {
            l.split('\t')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
        })
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    let stated = [Stated {
        samples,
        min: oslat_values(&content, "Minimum")[0],
        max: oslat_values(&content, "Maximum")[0],
    }];
    let run = import(dir.path(), "text.sqlite", &path, &[]);
    assert_as_stated(&run, &stated, 1_000, "oslat.txt");
    assert_eq!(run.streams[0].cpu, Some(1));

    run_tool(
        dir.path(),
        oslat,
        &["-D", "1", "-c", "1", "-q", "--json=oslat.json"],
        "oslat-json.txt",
    );
    let json_path = dir.path().join("oslat.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let thread = &json["thread"]["0"];
    let samples = thread["histogram"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    let stated = [Stated {
        samples,
        min: thread["min"].as_i64().unwrap(),
        max: thread["max"].as_i64().unwrap(),
    }];
    let run = import(dir.path(), "json.sqlite", &json_path, &[]);
    assert_as_stated(&run, &stated, 1_000, "oslat.json");
    let host = run.host.expect("sysinfo as host facts");
    assert_eq!(
        host.kernel_release,
        json["sysinfo"]["release"].as_str().unwrap()
    );
}

#[test]
fn real_jitterdebugger_results_import_with_their_counts_and_sysinfo() {
    let jitterdebugger = installed("jitterdebugger", "jitterdebugger");
    let _slot = shared();
    let dir = tempfile::tempdir().unwrap();
    run_tool(
        dir.path(),
        jitterdebugger,
        &["-D", "1s", "-o", "jd", "-a", "0,1"],
        "stdout.txt",
    );
    let path = dir.path().join("jd/results.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cpus = json["cpu"].as_object().unwrap();
    let stated: Vec<Stated> = (0..cpus.len())
        .map(|i| {
            let c = &cpus[&i.to_string()];
            Stated {
                samples: c["count"].as_u64().unwrap(),
                min: c["min"].as_i64().unwrap(),
                max: c["max"].as_i64().unwrap(),
            }
        })
        .collect();
    assert_eq!(stated.len(), 2, "one thread per CPU of -a 0,1");
    let run = import(dir.path(), "jd.sqlite", &path, &[]);
    assert_eq!(run.import.as_ref().unwrap().format, "jitterdebugger");
    assert_as_stated(&run, &stated, 1_000, "results.json");
    let sysinfo = &json["sysinfo"];
    let host = run.host.expect("sysinfo as host facts");
    assert_eq!(host.hostname, sysinfo["nodename"].as_str().unwrap());
    assert_eq!(host.kernel_release, sysinfo["release"].as_str().unwrap());
    assert_eq!(
        host.cpus_online,
        sysinfo["cpus_online"].as_u64().map(|n| n as usize)
    );
    // And what it saved beside results.json: the CPU model and the tick rate.
    let cpuinfo = std::fs::read_to_string(dir.path().join("jd/cpuinfo")).unwrap();
    let model = cpuinfo.lines().find_map(|l| {
        Some(
            l.split_once(':')
                .filter(|(k, _)| k.trim() == "model name")?
                .1
                .trim(),
        )
    });
    assert_eq!(host.cpu_model.as_deref(), model);
    let config = Command::new("gzip")
        .arg("-dc")
        .arg(dir.path().join("jd/config.gz"))
        .output()
        .unwrap();
    let hz = text(&config.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ=")?.parse::<u32>().ok());
    assert_eq!(host.hz, hz);
}

/// The Java check program (tests/data/HdrHistogramCheck.java) on `streams`: one line
/// per stream, `label TAB base64 TAB samples TAB min TAB max TAB p=value...`.
fn java_hdrhistogram_check(run: &Run) -> String {
    let java = installed("java", "default-jre-headless");
    let jar = Path::new("/usr/share/java/hdrhistogram.jar");
    assert!(
        jar.is_file(),
        "HdrHistogram's Java library is needed for this test: apt-get install \
         libhdrhistogram-java (scripts/test does)"
    );
    let mut input = String::new();
    for s in &run.streams {
        let data = &s.histogram.as_ref().expect("a histogram").data;
        let (min, max) = (s.stats.min_ns.unwrap().0, s.stats.max_ns.unwrap().0);
        input += &format!("{}\t{data}\t{}\t{min}\t{max}", s.label(), s.samples);
        for (rank, value) in &s.stats.percentiles_ns {
            let value = value.exact().expect("a measured percentile is a value");
            input += &format!("\t{rank}={}", value.0);
        }
        input += "\n";
    }
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/HdrHistogramCheck.java");
    let mut child = Command::new(java)
        .arg("-cp")
        .arg(jar)
        .arg(&program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "Java's HdrHistogram disagrees:\n{said}"
    );
    said
}

#[test]
fn javas_hdrhistogram_reads_the_runs_histograms_as_latlab_reported_them() {
    let (code, run, _) = crate::common::measure(&["-c", "0,1", "-d", "1s"]);
    assert_eq!(code, 0);
    let said = java_hdrhistogram_check(&run);
    assert!(
        said.contains(&format!("{} passed, 0 failed", run.streams.len())),
        "{said}"
    );
}

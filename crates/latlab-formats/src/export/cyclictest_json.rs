//! `cyclictest-json`: the JSON `cyclictest --json=FILE` writes (rt-tests 2.x:
//! `rt_write_json` in `src/lib/rt-utils.c`, `write_stats` in `src/cyclictest/cyclictest.c`),
//! with the same keys, in the same order and layout, so scripts that read cyclictest's
//! JSON read latlab runs. Unlike cyclictest's own it is always valid JSON: strings are
//! escaped, and a stream without samples has `avg` `null` where cyclictest writes `-nan`.
//!
//! Like the histogram text it holds one phase of one probe that measures wake-ups.
//!
//! `return_code` is latlab's exit status for the Run (`0` passed or no thresholds, `1` a
//! threshold failed, `2` a threshold cannot be judged, `3` measuring failed part-way), as
//! cyclictest's is its own: a script that reads it as pass/fail reads latlab's verdict.
//!
//! Values are in µs (`resolution_in_ns` 0), truncated as cyclictest truncates them; one
//! thread per stream, in order. A histogram bucket goes to the microsecond of its highest
//! equivalent value (exact for whole-µs values such as imported ones; within the
//! histogram's 0.1 % otherwise), the minimum's and maximum's to theirs.

use super::series::wake_up_series;
use super::{microsecond_bins, ExportError, Exporter};
use crate::import::time::rfc3339_to_rfc2822;
use latlab_model::run::Run;
use std::fmt::Write as _;

pub(super) struct CyclictestJson;

impl Exporter for CyclictestJson {
    fn name(&self) -> &'static str {
        "cyclictest-json"
    }

    fn describe(&self) -> &'static str {
        "cyclictest --json layout (µs), read by scripts written for cyclictest's JSON"
    }

    fn holds_one_series(&self) -> bool {
        true
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        let streams = wake_up_series(run, self.name())?;
        // A fact the Run does not know is left out, as rt-tests leaves out what it
        // does not have; it is never filled in.
        let text = |s: &str| serde_json::to_string(s).expect("a str always serialises");
        let mut out = String::from("{\n");
        let _ = writeln!(out, "  \"file_version\": 1,");
        if let Some(command_line) = &run.command_line {
            let _ = writeln!(out, "  \"cmdline:\": {},", text(&command_line.join(" ")));
        }
        if let Some(version) = &run.tool.version {
            let _ = writeln!(out, "  \"rt_test_version:\": {},", text(version));
        }
        let times = [("start_time", &run.started_at), ("end_time", &run.ended_at)];
        for (key, time) in times {
            if let Some(t) = time.as_deref().and_then(rfc3339_to_rfc2822) {
                let _ = writeln!(out, "  \"{key}\": {},", text(&t));
            }
        }
        // What latlab exits with for this Run (scripts such as LAVA's
        // parse_rt_tests_results.py call any other value than 0 a failure).
        let _ = writeln!(out, "  \"return_code\": {},", run.exit_status().code());
        if let Some(host) = &run.host {
            let realtime = u8::from(host.preemption.model == "PREEMPT_RT");
            let _ = writeln!(out, "  \"sysinfo\": {{");
            let _ = writeln!(out, "    \"sysname\": \"Linux\",");
            let _ = writeln!(out, "    \"nodename\": {},", text(&host.hostname));
            let _ = writeln!(out, "    \"release\": {},", text(&host.kernel_release));
            let _ = writeln!(out, "    \"version\": {},", text(&host.kernel_version));
            let _ = writeln!(out, "    \"machine\": {},", text(&host.architecture));
            let _ = writeln!(out, "    \"realtime\": {realtime}");
            let _ = writeln!(out, "  }},");
        }
        let _ = writeln!(out, "  \"num_threads\": {},", streams.len());
        let _ = writeln!(out, "  \"resolution_in_ns\": 0,");
        let _ = writeln!(out, "  \"thread\": {{");
        for (i, stream) in streams.iter().enumerate() {
            let _ = writeln!(out, "    \"{i}\": {{");
            out.push_str("      \"histogram\": {");
            // Samples beyond a source's range are in `cycles` only, as cyclictest keeps
            // its overflows.
            let bins = microsecond_bins(stream)?
                .map(|b| b.bins)
                .unwrap_or_default();
            let entries: Vec<String> = bins
                .iter()
                .map(|(us, n)| format!("\n        \"{us}\": {n}"))
                .collect();
            out.push_str(&entries.join(","));
            if !entries.is_empty() {
                out.push('\n');
            }
            out.push_str("      },\n");
            // cyclictest's values for a thread without cycles are its initial min and
            // max; a figure the source lacked is null.
            let us = |n: Option<latlab_model::Nanos>, initial: i64| match n {
                Some(n) => (n.0 / 1_000).to_string(),
                None if stream.samples == 0 => initial.to_string(),
                None => "null".to_string(),
            };
            let _ = writeln!(out, "      \"cycles\": {},", stream.samples);
            let _ = writeln!(
                out,
                "      \"min\": {},",
                us(stream.stats.min_ns, 1_000_000)
            );
            let _ = writeln!(out, "      \"max\": {},", us(stream.stats.max_ns, 0));
            match stream.stats.mean_ns {
                Some(mean) => {
                    let _ = writeln!(out, "      \"avg\": {:.2},", mean / 1_000.0);
                }
                None => out.push_str("      \"avg\": null,\n"),
            }
            let _ = writeln!(
                out,
                "      \"cpu\": {},",
                stream.cpu.map_or(-1, |c| c as i64)
            );
            let _ = writeln!(out, "      \"node\": -1");
            let last = i + 1 == streams.len();
            let _ = writeln!(out, "    }}{}", if last { "" } else { "," });
        }
        out.push_str("  }\n}\n");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;

    #[test]
    fn writes_cyclictest_layout_as_valid_json() {
        let text = CyclictestJson.export(&fixture::run()).unwrap();
        // Written by hand in cyclictest's layout, so whether it parses is checked too.
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
        insta::assert_snapshot!(text);
    }

    #[test]
    fn return_code_is_latlabs_exit_status() {
        let code = |run: &Run| {
            let text = CyclictestJson.export(run).unwrap();
            serde_json::from_str::<serde_json::Value>(&text).unwrap()["return_code"].clone()
        };
        let mut run = fixture::run();
        assert_eq!(code(&run), 1, "the fixture's max=20us fails on cpu 1");
        run.verdict.status = latlab_model::threshold::Status::Pass;
        assert_eq!(code(&run), 0);
        run.verdict.status = latlab_model::threshold::Status::Undecided;
        assert_eq!(code(&run), 2);
        run.warnings.push(latlab_model::run::Warning::new(
            latlab_model::seal::WarningCode::MeasuringFailed,
            "measuring on CPU 1 failed",
        ));
        assert_eq!(code(&run), 3);
    }
}

//! `junit`: JUnit XML with one test case per threshold and stream, so CI systems show
//! a latency regression as a failed test.

use super::{ExportError, Exporter};
use crate::run::Run;
use std::fmt::Write as _;

pub(super) struct Junit;

fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Exporter for Junit {
    fn name(&self) -> &'static str {
        "junit"
    }

    fn describe(&self) -> &'static str {
        "JUnit XML, one test case per threshold and stream (CI test reports)"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        let checks = &run.verdict.checks;
        let failures = checks.iter().filter(|c| !c.passed).count();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites><testsuite name=\"latlab {}\" tests=\"{}\" failures=\"{failures}\" \
             timestamp=\"{}\" hostname=\"{}\">",
            xml(&run.id),
            checks.len().max(1),
            xml(&run.started_at),
            xml(&run.host.hostname)
        );
        if checks.is_empty() {
            let _ = writeln!(
                out,
                "  <testcase classname=\"latlab\" name=\"no thresholds\"><skipped message=\"the \
                 run set no thresholds\"/></testcase>"
            );
        }
        for c in checks {
            let name = xml(&format!("{} on {}", c.threshold, c.stream));
            if c.passed {
                let _ = writeln!(out, "  <testcase classname=\"latlab\" name=\"{name}\"/>");
            } else {
                let observed = c
                    .observed_ns
                    .map_or("no samples".to_string(), |v| format!("observed {v}"));
                let _ = writeln!(
                    out,
                    "  <testcase classname=\"latlab\" name=\"{name}\"><failure message=\"{}\"/></testcase>",
                    xml(&observed)
                );
            }
        }
        out.push_str("</testsuite></testsuites>\n");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixture;

    #[test]
    fn one_case_per_check_and_failures_counted() {
        let text = Junit.export(&fixture::run()).unwrap();
        assert!(text.contains("tests=\"2\" failures=\"1\""), "{text}");
        assert!(
            text.contains("name=\"max &lt;= 20 µs on cpu 0 [main]\"/>"),
            "{text}"
        );
        assert!(
            text.contains("<failure message=\"observed 45 µs\"/>"),
            "{text}"
        );
        let mut run = fixture::run();
        run.verdict.checks.clear();
        assert!(Junit.export(&run).unwrap().contains("<skipped"));
    }
}

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
        let failures = checks.iter().filter(|c| c.failed()).count();
        // A run without checks is written as one skipped case, and counted as one.
        let skipped = if checks.is_empty() {
            1
        } else {
            checks.iter().filter(|c| c.passed.is_none()).count()
        };
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        // Facts the source lacked are left out, not filled in.
        let timestamp = run
            .started_at
            .as_ref()
            .map_or_else(String::new, |t| format!(" timestamp=\"{}\"", xml(t)));
        let hostname = run.host.as_ref().map_or_else(String::new, |h| {
            format!(" hostname=\"{}\"", xml(&h.hostname))
        });
        let _ = writeln!(
            out,
            "<testsuites><testsuite name=\"latlab {}\" tests=\"{}\" failures=\"{failures}\" \
             skipped=\"{skipped}\"{timestamp}{hostname}>",
            xml(&run.id),
            checks.len().max(1),
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
            // A failed check without an observation had no samples; an undecided one
            // lacks the figure.
            let observed = c.observed_ns.map_or_else(
                || {
                    if c.failed() {
                        "no samples"
                    } else {
                        "the figure is not known"
                    }
                    .to_string()
                },
                |v| format!("observed {v}"),
            );
            match c.passed {
                Some(true) => {
                    let _ = writeln!(out, "  <testcase classname=\"latlab\" name=\"{name}\"/>");
                }
                Some(false) => {
                    let _ = writeln!(
                        out,
                        "  <testcase classname=\"latlab\" name=\"{name}\"><failure message=\"{}\"/></testcase>",
                        xml(&observed)
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "  <testcase classname=\"latlab\" name=\"{name}\"><skipped message=\"{}\"/></testcase>",
                        xml(&format!("cannot be judged: {observed}"))
                    );
                }
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
        insta::assert_snapshot!(Junit.export(&fixture::run()).unwrap(), @r#"
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites><testsuite name="latlab 20261121T000000Z-abcdef" tests="2" failures="1" skipped="0" timestamp="2026-11-21T00:00:00.000Z" hostname="rig">
              <testcase classname="latlab" name="max &lt;= 20 µs on cpu 0 [main]"/>
              <testcase classname="latlab" name="max &lt;= 20 µs on cpu 1 [main]"><failure message="observed 45 µs"/></testcase>
            </testsuite></testsuites>
        "#);
    }

    #[test]
    fn a_run_without_thresholds_counts_its_one_case_as_skipped() {
        let mut run = fixture::run();
        run.verdict.checks.clear();
        insta::assert_snapshot!(Junit.export(&run).unwrap(), @r#"
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites><testsuite name="latlab 20261121T000000Z-abcdef" tests="1" failures="0" skipped="1" timestamp="2026-11-21T00:00:00.000Z" hostname="rig">
              <testcase classname="latlab" name="no thresholds"><skipped message="the run set no thresholds"/></testcase>
            </testsuite></testsuites>
        "#);
    }
}

//! `junit`: JUnit XML as the Jenkins xunit plugin's `junit-10.xsd` defines it, so CI
//! systems show a latency regression as a failed test.
//!
//! One test suite per Run, with its exit status, host and source as properties and its
//! warnings in `system-out`. Its test cases:
//!
//! * one per threshold and stream, its `classname` `latlab.RUN.PHASE.PROBE.cpuN` (so files
//!   of several runs merge without collisions): passed; a `failure` of type `threshold`
//!   whose body gives the observed value, the limit and the stream; or, when the
//!   threshold cannot be judged on what was measured (latlab exits 2), an `error` of
//!   type `undecided`. A run without thresholds has one skipped case, `no thresholds`.
//! * `measurement`: an `error` of type `measuring-failed` when a measuring thread failed
//!   part-way (latlab exits 3).
//! * `conditions`: a `failure` of type `degraded` when the run could not measure under
//!   real-time conditions (its figures are not the machine's real-time behaviour; latlab
//!   still exits 0 when its thresholds held), skipped when the source of an imported Run
//!   did not record them.
//!
//! A published reference Run (`ref:NAME`) was not measured by latlab: its `measurement`
//! and `conditions` are skipped (type `published`), its suite has a `published`
//! property (the paper and table) and no exit status, degraded or interrupted property
//! (it had none), and `system-out` says what its table lacks.
//!
//! The suite's `time` is the measured span (the phases' sum), left out when not known.

use super::{ExportError, Exporter};
use latlab_model::outcome::Shortfall;
use latlab_model::run::{Run, Stream};
use latlab_model::seal::WarningCode;
use latlab_model::text::xml_escaped;
use latlab_model::threshold::Check;
use std::fmt::Write as _;

pub(super) struct Junit;

/// How a test case ended.
enum Outcome {
    Passed,
    Failure {
        kind: &'static str,
        message: String,
        body: String,
    },
    Error {
        kind: &'static str,
        message: String,
        body: String,
    },
    Skipped {
        kind: &'static str,
        message: String,
    },
}

/// One test case.
struct Case {
    classname: String,
    name: String,
    outcome: Outcome,
}

impl Case {
    fn write(&self, out: &mut String) {
        let head = format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml_escaped(&self.classname),
            xml_escaped(&self.name)
        );
        let _ = match &self.outcome {
            Outcome::Passed => writeln!(out, "{head}/>"),
            Outcome::Failure {
                kind,
                message,
                body,
            } => writeln!(
                out,
                "{head}>\n      <failure type=\"{kind}\" message=\"{}\">{}</failure>\n    </testcase>",
                xml_escaped(message),
                xml_escaped(body)
            ),
            Outcome::Error {
                kind,
                message,
                body,
            } => writeln!(
                out,
                "{head}>\n      <error type=\"{kind}\" message=\"{}\">{}</error>\n    </testcase>",
                xml_escaped(message),
                xml_escaped(body)
            ),
            Outcome::Skipped { kind, message } => writeln!(
                out,
                "{head}>\n      <skipped type=\"{kind}\" message=\"{}\"/>\n    </testcase>",
                xml_escaped(message)
            ),
        };
    }
}

/// A stream's class: run, phase, probe and CPU (or thread), dot-separated as Jenkins
/// groups classes into packages.
fn classname(run: &Run, stream: &Stream) -> String {
    let place = match stream.cpu {
        Some(cpu) => format!("cpu{cpu}"),
        None => format!("thread{}", stream.thread),
    };
    format!(
        "latlab.{}.{}.{}.{place}",
        run.id, stream.phase, stream.probe
    )
}

/// A stream described for a failure's body.
fn describe(stream: &Stream) -> String {
    let method = stream
        .method
        .as_deref()
        .map_or_else(String::new, |m| format!(" ({m})"));
    format!(
        "{}, phase {}, probe {}{method}, {} samples",
        stream.label(),
        stream.phase,
        stream.probe,
        stream.samples
    )
}

/// The test case of one check on its stream.
fn check_case(run: &Run, stream: &Stream, check: &Check) -> Case {
    let observed = match check.observed_ns {
        Some(v) => format!("{v} ({}{} ns)", v.prefix(), v.value().0),
        None if stream.samples == 0 => "none: the stream has no samples".to_string(),
        None => "not known: the source did not have the figure".to_string(),
    };
    let limit = check.threshold.limit_ns;
    let body = format!(
        "observed: {observed}\nlimit: {limit} ({} ns)\nstream: {}\n",
        limit.0,
        describe(stream)
    );
    let metric = check.threshold.metric;
    let outcome = match check.passed {
        Some(true) => Outcome::Passed,
        Some(false) => Outcome::Failure {
            kind: "threshold",
            message: format!("{metric} {observed} exceeds {limit} on {}", check.stream),
            body,
        },
        None => Outcome::Error {
            kind: "undecided",
            message: format!(
                "{metric} cannot be judged against {limit} on {}: {observed}",
                check.stream
            ),
            body,
        },
    };
    Case {
        classname: classname(run, stream),
        name: check.threshold.to_string(),
        outcome,
    }
}

/// The test cases of the thresholds: one per check, in the verdict's order.
/// `Verdict::judge` lists the checks threshold by threshold, each over every stream in
/// order; a verdict of another shape was not made by latlab.
fn threshold_cases(run: &Run) -> Result<Vec<Case>, ExportError> {
    let checks = &run.verdict.checks;
    if checks.is_empty() {
        return Ok(vec![Case {
            classname: format!("latlab.{}", run.id),
            name: "no thresholds".to_string(),
            outcome: Outcome::Skipped {
                kind: "no-thresholds",
                message: match run.published {
                    Some(_) => "published figures are put beside runs, not judged".to_string(),
                    None => "the run set no thresholds (latlab run --max, --p99, ...)".to_string(),
                },
            },
        }]);
    }
    let streams = &run.streams;
    let laid_out = checks.len() == run.thresholds.len() * streams.len()
        && checks.iter().enumerate().all(|(i, c)| {
            let s = &streams[i % streams.len()];
            c.stream == format!("{} [{}]", s.label(), s.phase)
        });
    if !laid_out {
        return Err(ExportError(
            "verdict.checks: the checks do not follow the streams (one per threshold and \
             stream, in order); the Run was edited or damaged"
                .to_string(),
        ));
    }
    Ok(checks
        .iter()
        .enumerate()
        .map(|(i, c)| check_case(run, &streams[i % streams.len()], c))
        .collect())
}

/// The `measurement` and `conditions` test cases.
fn run_cases(run: &Run) -> [Case; 2] {
    let class = format!("latlab.{}", run.id);
    if let Some(published) = &run.published {
        // latlab neither measured nor checked conditions: the paper did.
        let skipped = |name: &str, message: String| Case {
            classname: class.clone(),
            name: name.to_string(),
            outcome: Outcome::Skipped {
                kind: "published",
                message,
            },
        };
        return [
            skipped(
                "measurement",
                format!("{}: {}", published.note, published.citation()),
            ),
            skipped(
                "conditions",
                "published figures: the paper did not record the conditions latlab checks"
                    .to_string(),
            ),
        ];
    }
    let failures: Vec<&str> = run
        .warnings
        .iter()
        .filter(|w| w.is(WarningCode::MeasuringFailed))
        .map(|w| w.message.as_str())
        .collect();
    let measurement = match (failures.first(), run.incomplete_because()) {
        (Some(first), _) => Outcome::Error {
            kind: WarningCode::MeasuringFailed.as_str(),
            message: format!("measuring failed part-way: {first}"),
            body: failures.join("\n") + "\n",
        },
        (None, Some(why)) if !run.accepts(Shortfall::Incomplete) => Outcome::Failure {
            kind: "incomplete",
            message: format!("the run measured less than asked: {why}"),
            body: "`latlab run --accept incomplete` lets such a run pass on its thresholds\n"
                .to_string(),
        },
        // Passed, but not silently: the case says it measured less, as an accepted
        // degraded run's conditions case does.
        (None, Some(why)) => Outcome::Skipped {
            kind: "accepted",
            message: format!(
                "measured less than asked, and accepted so (--accept incomplete): {why}"
            ),
        },
        (None, None) => Outcome::Passed,
    };
    let degrading: Vec<String> = run
        .warnings
        .iter()
        .filter(|w| w.degrades)
        .map(|w| format!("{}: {}", w.code, w.message))
        .collect();
    let conditions = if run.degraded && run.accepts(Shortfall::Untrusted) {
        Outcome::Skipped {
            kind: "accepted",
            message: format!(
                "degraded, and accepted so (--accept untrusted): {}",
                degrading.join("; ")
            ),
        }
    } else if run.degraded {
        Outcome::Failure {
            kind: "degraded",
            message: "the run was degraded: its figures are not the machine's real-time \
                      behaviour"
                .to_string(),
            body: degrading.join("\n") + "\n",
        }
    } else if run.conditions.is_none() {
        Outcome::Skipped {
            kind: "not-recorded",
            message: "the source of this imported run did not record its conditions".to_string(),
        }
    } else {
        Outcome::Passed
    };
    [
        Case {
            classname: class.clone(),
            name: "measurement".to_string(),
            outcome: measurement,
        },
        Case {
            classname: class,
            name: "conditions".to_string(),
            outcome: conditions,
        },
    ]
}

/// The suite's properties: what identifies the run, and its exit status.
fn properties(run: &Run) -> Vec<(&'static str, String)> {
    let mut props = vec![("run", run.id.clone())];
    match &run.published {
        // Published figures: no latlab process ran, so none exited, degraded or stopped.
        Some(published) => props.extend([
            ("published", published.citation()),
            ("verdict", run.verdict.status.word().to_string()),
        ]),
        None => {
            let status = run.exit_status();
            props.extend([
                (
                    "exit_status",
                    format!("{} ({})", status.code(), status.describe()),
                ),
                ("verdict", status.word().to_string()),
                ("thresholds", run.verdict.status.word().to_string()),
                ("degraded", run.degraded.to_string()),
                ("interrupted", run.interrupted.to_string()),
            ]);
        }
    }
    if let Some(scenario) = &run.scenario {
        props.push(("scenario", scenario.clone()));
    }
    if let Some(host) = &run.host {
        props.push(("kernel", host.kernel_release.clone()));
        props.push(("preemption", host.preemption.model.clone()));
    }
    if let Some(import) = &run.import {
        props.push((
            "imported_from",
            format!("{} {}", import.format, import.file),
        ));
    }
    // A fact the source lacked is left out, not written empty.
    props.retain(|(_, value)| !value.is_empty());
    props
}

/// What the suite's `system-out` says: the warnings, and what an import or a published
/// table lacked.
fn system_out(run: &Run) -> String {
    let mut out = String::new();
    if run.interrupted {
        out.push_str("interrupted: the run was stopped before its end\n");
    }
    for w in &run.warnings {
        let degrades = if w.degrades {
            " (degrades the run)"
        } else {
            ""
        };
        let _ = writeln!(out, "warning {}{degrades}: {}", w.code, w.message);
    }
    if let Some(import) = &run.import {
        for lack in &import.lacks {
            let _ = writeln!(out, "the source lacks: {lack}");
        }
    }
    if let Some(published) = &run.published {
        let _ = writeln!(
            out,
            "{}: {} ({})",
            published.note,
            published.title,
            published.citation()
        );
        for lack in &published.lacks {
            let _ = writeln!(out, "the source lacks: {lack}");
        }
    }
    out
}

/// Seconds as Surefire writes them (the XSD's `SUREFIRE_TIME`).
fn seconds(ns: i64) -> String {
    format!("{:.3}", ns.max(0) as f64 / 1e9)
}

impl Exporter for Junit {
    fn name(&self) -> &'static str {
        "junit"
    }

    fn describe(&self) -> &'static str {
        "JUnit XML (Jenkins xunit junit-10.xsd): a case per threshold and stream, plus the \
         run's measurement and conditions"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        let mut cases = threshold_cases(run)?;
        cases.extend(run_cases(run));
        let count = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
        let failures = count(|o| matches!(o, Outcome::Failure { .. }));
        let errors = count(|o| matches!(o, Outcome::Error { .. }));
        let skipped = count(|o| matches!(o, Outcome::Skipped { .. }));
        let tests = cases.len();
        // Facts the source lacked are left out, not filled in.
        let time = run
            .phases
            .iter()
            .map(|p| p.elapsed_ns.map(|n| n.0))
            .sum::<Option<i64>>()
            .filter(|_| !run.phases.is_empty())
            .map_or_else(String::new, |ns| format!(" time=\"{}\"", seconds(ns)));
        let timestamp = run.started_at.as_ref().map_or_else(String::new, |t| {
            format!(" timestamp=\"{}\"", xml_escaped(t))
        });
        let hostname = run.host.as_ref().map_or_else(String::new, |h| {
            format!(" hostname=\"{}\"", xml_escaped(&h.hostname))
        });
        let counts = format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\"");
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(out, "<testsuites name=\"latlab\" {counts}{time}>");
        let _ = writeln!(
            out,
            "  <testsuite name=\"latlab {}\" {counts} skipped=\"{skipped}\"{time}{timestamp}{hostname} id=\"{}\">",
            xml_escaped(&run.id),
            xml_escaped(&run.id),
        );
        out.push_str("    <properties>\n");
        for (name, value) in properties(run) {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                xml_escaped(&value)
            );
        }
        out.push_str("    </properties>\n");
        for case in &cases {
            case.write(&mut out);
        }
        let said = system_out(run);
        if !said.is_empty() {
            let _ = writeln!(out, "    <system-out>{}</system-out>", xml_escaped(&said));
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;
    use latlab_model::run::Warning;

    #[test]
    fn one_case_per_check_with_a_failure_body() {
        insta::assert_snapshot!(Junit.export(&fixture::run()).unwrap());
    }

    #[test]
    fn a_run_without_thresholds_counts_its_one_case_as_skipped() {
        let mut run = fixture::run();
        run.verdict = latlab_model::threshold::Verdict::judge(&[], &run.streams);
        run.thresholds.clear();
        insta::assert_snapshot!(Junit.export(&run).unwrap());
    }

    #[test]
    fn a_degraded_run_fails_its_conditions_and_a_failed_measurement_is_an_error() {
        let mut run = fixture::run();
        run.degraded = true;
        run.warnings = vec![
            Warning::new(
                WarningCode::NotRealtime,
                "SCHED_FIFO not permitted: run as root",
            ),
            Warning::new(
                WarningCode::MeasuringFailed,
                "measuring on CPU 1 failed: <boom> & \u{1}",
            ),
        ];
        insta::assert_snapshot!(Junit.export(&run).unwrap());
    }

    #[test]
    fn an_undecided_check_is_an_error_not_a_skip() {
        let mut run = fixture::run();
        for stream in &mut run.streams {
            stream.stats.mean_ns = None;
        }
        run.thresholds = vec![latlab_model::threshold::Threshold::parse("mean=1ms").unwrap()];
        run.verdict = latlab_model::threshold::Verdict::judge(&run.thresholds, &run.streams);
        let text = Junit.export(&run).unwrap();
        assert_eq!(
            text.matches("<error type=\"undecided\"").count(),
            2,
            "{text}"
        );
        assert!(text.contains("failures=\"0\" errors=\"2\""), "{text}");
    }

    /// A reference run was not measured here: its measurement and conditions are
    /// skipped as published, it has no exit status, and it says what its table lacks.
    #[test]
    fn a_published_run_says_so_and_passes_nothing() {
        let run = latlab_model::published::reference_run("rr-table3").unwrap();
        insta::assert_snapshot!(Junit.export(&run).unwrap());
    }

    #[test]
    fn a_verdict_that_does_not_follow_the_streams_is_refused() {
        let mut run = fixture::run();
        run.verdict.checks.swap(0, 1);
        let err = Junit.export(&run).unwrap_err().0;
        assert!(err.starts_with("verdict.checks:"), "{err}");
    }
}

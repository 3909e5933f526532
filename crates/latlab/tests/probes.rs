//! The primitive probes through the command line: listing, specifications and their
//! mistakes, and the clock probe measured for real (invariants only).

mod common;
use common::{latlab, measure};

use latlab_model::run::ProbePlan;

#[test]
fn probes_are_listed_with_their_definitions() {
    let short = latlab().arg("probes").output().unwrap();
    assert!(short.status.success());
    let text = String::from_utf8_lossy(&short.stdout);
    assert!(text.contains("timer") && text.contains("clock"), "{text}");
    let long = latlab().args(["probes", "--long"]).output().unwrap();
    let text = String::from_utf8_lossy(&long.stdout);
    assert!(
        text.contains("burst=100"),
        "parameters with defaults: {text}"
    );
    assert!(text.contains("consecutive"), "definitions: {text}");
}

#[test]
fn bad_probe_specifications_name_the_flag_and_the_choices() {
    for (spec, says) in [
        ("sundial", "unknown probe"),
        ("clock:clock=sundial", "monotonic"),
        ("clock:speed=1", "no parameter"),
        ("clock:burst", "key=value"),
    ] {
        let out = latlab()
            .args(["run", "-d", "1s", "--no-store", "--probe", spec])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{spec}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--probe") && err.contains(says),
            "{spec}: {err}"
        );
    }
}

#[test]
fn the_clock_probe_measures_each_clock_as_a_distribution() {
    let (code, run, out) = measure(&[
        "-c",
        "0",
        "-d",
        "1s",
        "--probe",
        "clock",
        "--probe",
        "clock:clock=tsc,burst=10",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(run.phases.len(), 2, "a phase per probe");
    assert_eq!(run.streams.len(), 2);
    for (stream, burst) in run.streams.iter().zip([100u64, 10]) {
        assert_eq!(stream.probe, "clock");
        assert!(stream.samples > 0);
        assert_eq!(
            stream.samples % burst,
            0,
            "whole bursts of {burst}: {}",
            stream.samples
        );
        assert_eq!(
            stream.decode_histogram().unwrap().unwrap().len(),
            stream.samples
        );
        let st = &stream.stats;
        let (min, max) = (st.min_ns.unwrap(), st.max_ns.unwrap());
        let p = |q| {
            st.percentile(q)
                .unwrap()
                .exact()
                .expect("a measured percentile is a value")
        };
        assert!(min.0 >= 0, "a clock read never goes back in time: {min:?}");
        assert!(min <= p(50.0) && p(50.0) <= p(99.0) && p(99.0) <= max);
        assert_eq!(stream.early_wakes, Some(0));
    }
    match &run.plan.probes[1] {
        ProbePlan::Primitive(p) => {
            assert_eq!(p.name, "clock");
            assert_eq!(p.params["clock"], "tsc");
            assert_eq!(p.params["burst"], "10");
        }
        other => panic!("{other:?}"),
    }
}

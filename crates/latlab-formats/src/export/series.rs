//! The one series cyclictest's formats hold: wake-up latency, one column (or thread) per
//! CPU. OSADL's plot script labels column i "CPUi", rteval's module gives it to core i,
//! LAVA's parser reports it as thread i's latency; none of them can tell a phase or a
//! probe apart. So such a file is written from the streams of one phase of one probe
//! whose samples are wake-up latencies, and a Run holding more is refused with the flags
//! that choose, never flattened.

use super::ExportError;
use latlab_model::run::{Run, Stream};
use std::collections::BTreeSet;

/// Names in the order their streams first come.
fn names<'a>(streams: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = BTreeSet::new();
    streams.filter(|n| seen.insert(*n)).collect()
}

/// The Run with only the streams of `phase` and `probe` (each `None`: any), for a
/// format that holds one series. Everything else (the verdict, the warnings) stays the
/// whole Run's. An unknown name is refused, listing the Run's.
pub fn narrow(run: &Run, phase: Option<&str>, probe: Option<&str>) -> Result<Run, ExportError> {
    let mut narrowed = run.clone();
    if let Some(phase) = phase {
        narrowed.streams.retain(|s| s.phase == phase);
        if narrowed.streams.is_empty() {
            return Err(ExportError(format!(
                "--phase {phase}: the run has no phase of that name; its phases: {}",
                names(run.streams.iter().map(|s| s.phase.as_str())).join(", ")
            )));
        }
    }
    if let Some(probe) = probe {
        let in_phase = names(narrowed.streams.iter().map(|s| s.probe.as_str())).join(", ");
        narrowed.streams.retain(|s| s.probe == probe);
        if narrowed.streams.is_empty() {
            return Err(ExportError(format!(
                "--probe {probe}: no stream{} was measured by that probe; its probes: {}",
                phase.map_or_else(String::new, |p| format!(" of phase {p}")),
                in_phase
            )));
        }
    }
    Ok(narrowed)
}

/// The streams a one-series format writes: the Run's, which must be of one phase and
/// one probe, and that probe's samples wake-up latencies. `format` names the format in
/// the refusal.
pub(super) fn wake_up_series<'a>(run: &'a Run, format: &str) -> Result<&'a [Stream], ExportError> {
    let streams = super::streams_to_export(run, format)?;
    let why = "its readers (OSADL's plots, rteval, LAVA) take every column as one CPU's \
               wake-up latency";
    let phases = names(streams.iter().map(|s| s.phase.as_str()));
    if phases.len() > 1 {
        return Err(ExportError(format!(
            "the run has {} phases ({}): a {format} file holds one, and {why}; choose one \
             with --phase, e.g. --phase {}",
            phases.len(),
            phases.join(", "),
            phases[0]
        )));
    }
    let probes = names(streams.iter().map(|s| s.probe.as_str()));
    if probes.len() > 1 {
        return Err(ExportError(format!(
            "phase {} holds the streams of {} probes ({}): a {format} file holds one, and \
             {why}; choose one with --probe, e.g. --probe {}",
            phases[0],
            probes.len(),
            probes.join(", "),
            probes
                .iter()
                .rev()
                .find(|p| **p != "timerlat-irq")
                .unwrap_or(&probes[0])
        )));
    }
    if let Some(s) = streams.iter().find(|s| !s.measures_wake_ups()) {
        return Err(ExportError(format!(
            "phase {} was measured by the {} probe, whose samples are not wake-up latencies \
             (latlab probes --long defines them): a {format} file would pass them off as \
             such, as {why}; export it with --format csv, json or openmetrics",
            s.phase, s.probe
        )));
    }
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;

    /// The fixture with a second phase, `load`, of the same CPUs.
    fn two_phases() -> Run {
        let mut run = fixture::run();
        let load: Vec<Stream> = run
            .streams
            .iter()
            .map(|s| Stream {
                phase: "load".into(),
                ..s.clone()
            })
            .collect();
        run.streams.extend(load);
        run
    }

    #[test]
    fn a_run_of_several_phases_is_refused_naming_them_and_narrowed_by_phase() {
        let run = two_phases();
        let err = wake_up_series(&run, "cyclictest").unwrap_err().0;
        insta::assert_snapshot!(err, @"the run has 2 phases (main, load): a cyclictest file holds one, and its readers (OSADL's plots, rteval, LAVA) take every column as one CPU's wake-up latency; choose one with --phase, e.g. --phase main");
        let load = narrow(&run, Some("load"), None).unwrap();
        let streams = wake_up_series(&load, "cyclictest").unwrap();
        assert_eq!(streams.len(), 2);
        assert!(streams.iter().all(|s| s.phase == "load"));
        assert_eq!(load.verdict, run.verdict, "the verdict stays the run's");
    }

    #[test]
    fn an_unknown_phase_or_probe_is_refused_listing_the_runs() {
        let run = two_phases();
        let err = narrow(&run, Some("idle"), None).unwrap_err().0;
        insta::assert_snapshot!(err, @"--phase idle: the run has no phase of that name; its phases: main, load");
        let err = narrow(&run, Some("load"), Some("msg")).unwrap_err().0;
        insta::assert_snapshot!(err, @"--probe msg: no stream of phase load was measured by that probe; its probes: timer");
    }

    #[test]
    fn a_primitive_probe_is_refused_with_the_reason() {
        let mut run = fixture::run();
        for s in &mut run.streams {
            s.probe = "msg".into();
        }
        let err = wake_up_series(&run, "cyclictest-json").unwrap_err().0;
        insta::assert_snapshot!(err, @"phase main was measured by the msg probe, whose samples are not wake-up latencies (latlab probes --long defines them): a cyclictest-json file would pass them off as such, as its readers (OSADL's plots, rteval, LAVA) take every column as one CPU's wake-up latency; export it with --format csv, json or openmetrics");
    }

    #[test]
    fn timerlats_contexts_are_told_apart_by_probe() {
        let mut run = fixture::run();
        run.streams[0].probe = "timerlat-irq".into();
        run.streams[1].probe = "timerlat-thread".into();
        let err = wake_up_series(&run, "cyclictest").unwrap_err().0;
        insta::assert_snapshot!(err, @"phase main holds the streams of 2 probes (timerlat-irq, timerlat-thread): a cyclictest file holds one, and its readers (OSADL's plots, rteval, LAVA) take every column as one CPU's wake-up latency; choose one with --probe, e.g. --probe timerlat-thread");
        let thread = narrow(&run, None, Some("timerlat-thread")).unwrap();
        assert_eq!(wake_up_series(&thread, "cyclictest").unwrap().len(), 1);
    }
}

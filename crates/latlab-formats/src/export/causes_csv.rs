//! `causes`: the catalogue of a Run measured with `--explain`, one row per cause,
//! phase and CPU, times in nanoseconds; for a spreadsheet or a dataframe.

use super::csv::quote;
use super::{ExportError, Exporter};
use latlab_model::run::Run;

pub(super) struct CausesCsv;

impl Exporter for CausesCsv {
    fn name(&self) -> &'static str {
        "causes"
    }

    fn describe(&self) -> &'static str {
        "CSV of what got in the way (runs measured with --explain): a row per cause, phase and CPU"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        let explain = run.explain.as_ref().ok_or_else(|| {
            ExportError(format!(
                "run {} was not measured with --explain, so it has no causes: measure with \
                 `latlab run --explain`, or choose another format",
                run.id
            ))
        })?;
        if let Some(reason) = &explain.unavailable {
            return Err(ExportError(format!(
                "run {} has no causes: tracing was unavailable ({reason})",
                run.id
            )));
        }
        let mut out = String::from("phase,cpu,cause,kind,spikes,total_ns,max_ns,share\n");
        for entry in &explain.catalogue {
            // Unknown (a CPU not pinned, a share without its base) is an empty cell.
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{}\n",
                quote(&entry.phase),
                entry.cpu.map_or(String::new(), |c| c.to_string()),
                quote(&entry.cause.label()),
                entry.cause.kind_name(),
                entry.spikes,
                entry.total_ns.0,
                entry.max_ns.0,
                explain
                    .share(entry)
                    .map_or(String::new(), |s| format!("{s:.6}")),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;

    #[test]
    fn one_row_per_cause_phase_and_cpu_quoted_where_needed() {
        let text = CausesCsv.export(&fixture::explained_run()).unwrap();
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_share_without_its_base_and_a_cpu_not_pinned_are_empty_cells() {
        let mut run = fixture::explained_run();
        let explain = run.explain.as_mut().unwrap();
        explain.spike_time.clear();
        explain.catalogue.iter_mut().for_each(|c| c.cpu = None);
        let text = CausesCsv.export(&run).unwrap();
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_run_without_explanation_is_refused_with_the_fix() {
        let err = CausesCsv.export(&fixture::run()).unwrap_err().to_string();
        assert_eq!(
            err,
            "run 20261121T000000Z-abcdef was not measured with --explain, so it has no \
             causes: measure with `latlab run --explain`, or choose another format"
        );
    }
}

//! `json`: the Run itself (latlab.run/2).

use super::{ExportError, Exporter};
use latlab_model::run::Run;

pub(super) struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn describe(&self) -> &'static str {
        "the Run itself, latlab.run/2 (docs/run-format.md)"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        Ok(run.to_json_pretty() + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;

    #[test]
    fn writes_the_run_as_it_is() {
        insta::assert_snapshot!(Json.export(&fixture::run()).unwrap());
    }

    #[test]
    fn carries_the_explanation_and_reads_back_the_same() {
        let run = fixture::explained_run();
        let text = Json.export(&run).unwrap();
        assert_eq!(Run::from_json(&text).unwrap().explain, run.explain);
    }
}

//! The documented Run format matches the model: the committed example parses, and
//! every field in it is described in docs/run-format.md.

use latlab_model::run::Run;
use std::path::PathBuf;

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn field_names(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                // Percentile keys are numbers, documented as a list.
                if k != "percentiles_ns" {
                    field_names(v, out);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| field_names(v, out)),
        _ => {}
    }
}

/// True when `name` appears as a field in a code span: preceded by a backtick or a
/// dot, followed by a backtick, a dot, a bracket or a comma.
fn documented(doc: &str, name: &str) -> bool {
    doc.match_indices(name).any(|(i, _)| {
        let before = doc[..i].chars().next_back();
        let after = doc[i + name.len()..].chars().next();
        matches!(before, Some('`') | Some('.')) && matches!(after, Some('`' | '.' | '[' | ','))
    })
}

#[test]
fn the_example_parses_into_the_model_and_back() {
    let text = std::fs::read_to_string(docs().join("example-run.json")).unwrap();
    let run = Run::from_json(&text).expect("example is a valid latlab.run/2");
    assert!(!run.streams.is_empty());
    for s in &run.streams {
        let hist = s.decode_histogram().unwrap().unwrap();
        assert_eq!(hist.len(), s.samples);
    }
    let again: serde_json::Value = serde_json::from_str(&run.to_json_pretty()).unwrap();
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(again, original, "no field is lost or invented by the model");
}

#[test]
fn every_field_of_the_example_is_documented() {
    let text = std::fs::read_to_string(docs().join("example-run.json")).unwrap();
    let doc = std::fs::read_to_string(docs().join("run-format.md")).unwrap();
    let mut names = Vec::new();
    field_names(&serde_json::from_str(&text).unwrap(), &mut names);
    names.sort();
    names.dedup();
    let missing: Vec<_> = names.iter().filter(|n| !documented(&doc, n)).collect();
    assert!(missing.is_empty(), "undocumented fields: {missing:?}");
}

#[test]
fn every_field_of_the_audit_is_documented() {
    use latlab_model::audit::{Audit, CheckResult, CheckVerdict, Evidence};
    // The example predates the audit: check its fields on a complete one.
    let audit = Audit {
        cpus: vec![1],
        priority: 95,
        checks: vec![CheckResult {
            id: "rt-throttling".into(),
            title: "RT throttling".into(),
            verdict: CheckVerdict::Warn,
            finding: "RT throttling is on".into(),
            explanation: Some("a busy task is stopped".into()),
            evidence: vec![Evidence::new(
                "/proc/sys/kernel/sched_rt_runtime_us",
                "950000",
            )],
            fix: Some("sysctl kernel.sched_rt_runtime_us=-1".into()),
        }],
    };
    let doc = std::fs::read_to_string(docs().join("run-format.md")).unwrap();
    let mut names = vec!["audit".to_string()];
    field_names(&serde_json::to_value(&audit).unwrap(), &mut names);
    names.sort();
    names.dedup();
    let missing: Vec<_> = names.iter().filter(|n| !documented(&doc, n)).collect();
    assert!(missing.is_empty(), "undocumented audit fields: {missing:?}");
    for check in latlab_model::audit::CheckVerdict::ALL {
        assert!(
            documented(&doc, check.as_str()),
            "verdict {check} undocumented"
        );
    }
}

#[test]
fn the_users_labels_are_documented_and_optional() {
    let text = std::fs::read_to_string(docs().join("example-run.json")).unwrap();
    let mut run = Run::from_json(&text).unwrap();
    assert_eq!((&run.name, run.tags.len(), &run.note), (&None, 0, &None));
    run.name = Some("baseline".into());
    run.tags.insert("env".into(), "lab".into());
    run.note = Some("before the BIOS update".into());
    let written = run.to_json_pretty();
    assert_eq!(Run::from_json(&written).unwrap(), run);
    let doc = std::fs::read_to_string(docs().join("run-format.md")).unwrap();
    for field in ["name", "tags", "note"] {
        assert!(documented(&doc, field), "{field} undocumented");
    }
    // A label latlab would refuse is refused in a file too, naming the field.
    let mut value: serde_json::Value = serde_json::from_str(&written).unwrap();
    value["name"] = "last~1".into();
    let err = Run::from_json(&value.to_string()).unwrap_err().to_string();
    assert!(err.starts_with("name: "), "{err}");
}

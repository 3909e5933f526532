//! Reading `latlab.run/1` documents.
//!
//! Version 1 held a stand-in (0, an empty string, `other:0`, an empty histogram) where
//! an imported Run's source lacked a field, and listed the fields holding them in
//! `import.unknown_fields`. Version 2 makes each of those fields `null`. Upgrading a
//! version-1 document sets every listed field to what version 2 writes for "unknown";
//! a Run latlab measured had none, and only `host.virtualization`, whose `null` meant
//! bare metal, changes meaning.

use super::{BARE_METAL, SCHEMA};
use serde_json::{Map, Value};

/// Turns a `latlab.run/1` document into a `latlab.run/2` one, in place.
pub(crate) fn upgrade(run: &mut Value) {
    let Some(top) = run.as_object_mut() else {
        return;
    };
    top.insert("schema".to_string(), Value::String(SCHEMA.to_string()));
    if let Some(Value::Object(host)) = top.get_mut("host") {
        if host.get("virtualization").is_some_and(Value::is_null) {
            host.insert(
                "virtualization".to_string(),
                Value::String(BARE_METAL.to_string()),
            );
        }
    }
    let unknown: Vec<String> = top
        .get("import")
        .and_then(|i| i.get("unknown_fields"))
        .and_then(Value::as_array)
        .map(|fields| {
            fields
                .iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let imported = top.contains_key("import");
    for path in &unknown {
        let parts: Vec<&str> = path.split('.').collect();
        forget(top, &parts);
    }
    // Empty where the source had none: version 1 did not always list these.
    if imported {
        for field in ["started_at", "ended_at"] {
            if top.get(field).and_then(Value::as_str) == Some("") {
                top.insert(field.to_string(), Value::Null);
            }
        }
        if top
            .get("command_line")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            top.insert("command_line".to_string(), Value::Null);
        }
    }
}

/// Sets the field at `path` (`streams[]` iterates an array) to its "unknown" form:
/// `null`, or an empty map for percentiles, an empty list for the plan's probes.
fn forget(object: &mut Map<String, Value>, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let (name, each) = match first.strip_suffix("[]") {
        Some(name) => (name, true),
        None => (*first, false),
    };
    if rest.is_empty() {
        if let Some(slot) = object.get_mut(name) {
            *slot = match name {
                "percentiles_ns" => Value::Object(Map::new()),
                "probes" => Value::Array(Vec::new()),
                // Always known in version 2 once the host is: "unknown" is a value.
                "preemption" => serde_json::json!({
                    "model": "unknown", "dynamic_mode": null, "evidence": []
                }),
                _ => Value::Null,
            };
        }
        return;
    }
    match object.get_mut(name) {
        Some(Value::Array(items)) if each => {
            for item in items {
                if let Value::Object(inner) = item {
                    forget(inner, rest);
                }
            }
        }
        Some(Value::Object(inner)) if !each => forget(inner, rest),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listed_stand_ins_become_unknown() {
        let mut v = json!({
            "schema": "latlab.run/1",
            "host": {"hostname": "", "virtualization": null},
            "streams": [
                {"missed_periods": 0, "stats": {"percentiles_ns": {"50": 3}}},
                {"missed_periods": 0, "stats": {"percentiles_ns": {"50": 4}}}
            ],
            "started_at": "",
            "command_line": [],
            "import": {"unknown_fields": [
                "host", "streams[].missed_periods", "streams[].stats.percentiles_ns"
            ]}
        });
        upgrade(&mut v);
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["host"], Value::Null);
        assert_eq!(v["streams"][1]["missed_periods"], Value::Null);
        assert_eq!(v["streams"][0]["stats"]["percentiles_ns"], json!({}));
        assert_eq!(v["started_at"], Value::Null);
        assert_eq!(v["command_line"], Value::Null);
    }

    #[test]
    fn a_measured_runs_bare_metal_is_said_so() {
        let mut v = json!({"schema": "latlab.run/1", "host": {"virtualization": null}});
        upgrade(&mut v);
        assert_eq!(v["host"]["virtualization"], BARE_METAL);
    }
}

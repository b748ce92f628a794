//! The checked-in JSON Schema is exactly what the Rust types generate. Run `make schema` after
//! changing a type, and review the diff.

use std::fs;
use std::path::Path;

#[test]
fn checked_in_schema_matches_the_types() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/report.v1.schema.json");
    let checked_in = fs::read_to_string(&path).expect("docs/schema/report.v1.schema.json");
    let generated = torchscan_core::json_schema_text();
    assert!(
        checked_in == generated,
        "docs/schema/report.v1.schema.json drifted from the Rust types; run `make schema` and review the diff"
    );
}

#[test]
fn schema_names_every_report_kind() {
    let schema: serde_json::Value =
        serde_json::from_str(&torchscan_core::json_schema_text()).expect("JSON");
    let defs = schema["$defs"].as_object().expect("$defs");
    for kind in torchscan_core::ReportKind::ALL {
        let found = defs
            .values()
            .any(|def| def["oneOf"][0]["const"].as_str() == Some(kind.as_str()));
        assert!(found, "no kind tag `{}` in the schema", kind.as_str());
    }
    let any_of = schema["anyOf"].as_array().expect("anyOf of report kinds");
    assert_eq!(any_of.len(), torchscan_core::ReportKind::ALL.len());
}

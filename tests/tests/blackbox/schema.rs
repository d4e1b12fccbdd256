//! Validation of wire messages against the upstream JSON Schemas in `../shared/conformance/`
//! (beside the repository; `DURABLE_MCP_SCHEMAS` points elsewhere).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

/// Which schema file a type lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Spec {
    /// `mcp-2026-07-28.schema.json`: the core revision.
    Core,
    /// `ext-tasks.schema.json`: the Tasks extension.
    Tasks,
    /// `mcp-2025-11-25.schema.json`: the 2025 revision the legacy lane speaks, with its
    /// experimental tasks.
    V2025,
}

impl Spec {
    /// The schema holding the JSON-RPC envelopes of this spec's messages.
    fn envelopes(self) -> Spec {
        match self {
            Spec::Core | Spec::Tasks => Spec::Core,
            Spec::V2025 => Spec::V2025,
        }
    }
}

fn schema_dir() -> PathBuf {
    std::env::var_os("DURABLE_MCP_SCHEMAS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance"),
        PathBuf::from,
    )
}

fn definitions(spec: Spec) -> &'static Value {
    static FILES: OnceLock<Mutex<HashMap<Spec, &'static Value>>> = OnceLock::new();
    let mut files = FILES.get_or_init(Default::default).lock().unwrap();
    files.entry(spec).or_insert_with(|| {
        let file = match spec {
            Spec::Core => "mcp-2026-07-28.schema.json",
            Spec::Tasks => "ext-tasks.schema.json",
            Spec::V2025 => "mcp-2025-11-25.schema.json",
        };
        let path = schema_dir().join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!(
                "cannot read the upstream schema {}: {error}; the wire tests validate against \
                 it (set DURABLE_MCP_SCHEMAS to the folder holding it)",
                path.display()
            )
        });
        Box::leak(Box::new(
            serde_json::from_str::<Value>(&text).expect("schema is JSON"),
        ))
    })
}

/// Panics unless `instance` is a valid `type_name` of `spec`, naming every violation.
pub fn assert_valid(spec: Spec, type_name: &str, instance: &Value) {
    let defs = &definitions(spec)["$defs"];
    assert!(
        defs.get(type_name).is_some(),
        "{spec:?} schema has no type {type_name}"
    );
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs,
        "$ref": format!("#/$defs/{type_name}"),
    });
    let validator = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| format!("{} at {}", error, error.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "not a valid {type_name}:\n  {}\ninstance: {instance}",
        errors.join("\n  ")
    );
}

/// Validates a success response whose result is `type_name` of `spec`.
pub fn assert_result(spec: Spec, type_name: &str, response: &Value) {
    assert_valid(spec.envelopes(), "JSONRPCResultResponse", response);
    assert_valid(spec, type_name, &response["result"]);
}

//! Validation of wire messages against the upstream JSON Schemas of MCP, generated from pinned
//! npm packages by `tests/wire-schemas/generate.mjs` (see there for the sources) into
//! `wire-schemas/` of cargo's target directory, or read from the folder `DURABLE_MCP_SCHEMAS`
//! names. `cargo xtask test` generates them before it runs the tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

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

    /// The file holding this spec's types.
    fn file(self) -> &'static str {
        match self {
            Spec::Core => "mcp-2026-07-28.schema.json",
            Spec::Tasks => "ext-tasks.schema.json",
            Spec::V2025 => "mcp-2025-11-25.schema.json",
        }
    }
}

/// The folder of the schema files: `DURABLE_MCP_SCHEMAS`, else where `cargo xtask test`
/// generates them.
fn schema_dir() -> PathBuf {
    std::env::var_os("DURABLE_MCP_SCHEMAS")
        .map_or_else(|| target_dir().join("wire-schemas"), PathBuf::from)
}

/// Cargo's target directory: `CARGO_TARGET_DIR` if set (a relative one is taken from the
/// workspace root), `<workspace>/target` otherwise.
fn target_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.parent().unwrap_or(manifest);
    // Joining an absolute path replaces the base.
    workspace.join(std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into()))
}

fn definitions(spec: Spec) -> &'static Value {
    static FILES: OnceLock<Mutex<HashMap<Spec, &'static Value>>> = OnceLock::new();
    // A test that panicked here (a missing file) must not hide the reason from the next one.
    let mut files = FILES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    files.entry(spec).or_insert_with(|| {
        let dir = schema_dir();
        let path = dir.join(spec.file());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!(
                "cannot read the upstream schema {}: {error}. The wire tests validate against \
                 schemas generated from pinned npm packages: from the workspace root, run\n  \
                 npm ci --prefix tests/wire-schemas && node tests/wire-schemas/generate.mjs {}\n\
                 (`cargo xtask test` does this itself), or set DURABLE_MCP_SCHEMAS to a folder \
                 holding them",
                path.display(),
                dir.display()
            )
        });
        let schema = serde_json::from_str::<Value>(&text).unwrap_or_else(|error| {
            panic!(
                "{} is not JSON ({error}): generate it again",
                path.display()
            )
        });
        Box::leak(Box::new(schema))
    })
}

/// Every way `instance` fails to be a valid `type_name` of `spec` (none if it is valid).
/// Panics if `spec` has no such type.
pub fn violations(spec: Spec, type_name: &str, instance: &Value) -> Vec<String> {
    let defs = &definitions(spec)["$defs"];
    let definition = defs
        .get(type_name)
        .unwrap_or_else(|| panic!("{spec:?} schema has no type {type_name}"));
    // A type zod could not express converts to a schema that accepts anything: validating
    // against it would check nothing.
    assert!(
        !matches!(definition, Value::Bool(true)) && definition != &json!({}),
        "{spec:?}'s {type_name} accepts any value upstream (an open object zod cannot \
         express); validate against a type that constrains something"
    );
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs,
        "$ref": format!("#/$defs/{type_name}"),
    });
    let validator = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    validator
        .iter_errors(instance)
        .map(|error| format!("{} at {}", error, error.instance_path))
        .collect()
}

/// Panics unless `instance` is a valid `type_name` of `spec`, naming every violation.
pub fn assert_valid(spec: Spec, type_name: &str, instance: &Value) {
    let errors = violations(spec, type_name, instance);
    assert!(
        errors.is_empty(),
        "not a valid {type_name}:\n  {}\ninstance: {instance}",
        errors.join("\n  ")
    );
}

/// Validates the acknowledgement of `tasks/update` or `tasks/cancel`. The Tasks extension
/// defines both as an open "complete" result, which its zod schema cannot express as JSON
/// Schema; the core revision's `EmptyResult` holds the fields it requires.
pub fn assert_complete_ack(response: &Value) {
    assert_result(Spec::Core, "EmptyResult", response);
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
}

/// Validates a success response whose result is `type_name` of `spec`.
pub fn assert_result(spec: Spec, type_name: &str, response: &Value) {
    assert_valid(spec.envelopes(), "JSONRPCResultResponse", response);
    assert_valid(spec, type_name, &response["result"]);
}

/// Panics unless `instance` is valid against `schema`, a schema a server sent (a tool's
/// `outputSchema`), naming every violation.
pub fn assert_matches_schema(schema: &Value, instance: &Value) {
    let validator = jsonschema::validator_for(schema)
        .unwrap_or_else(|error| panic!("the server's schema does not compile: {error}\n{schema}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| format!("{} at {}", error, error.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "does not match the schema:\n  {}\ninstance: {instance}\nschema: {schema}",
        errors.join("\n  ")
    );
}

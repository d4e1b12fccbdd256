// Checks: `annotations(..)` sets the hints; a bare name is `true`.
use durable_mcp::tool;

#[tool(annotations(read_only, destructive = false, idempotent, open_world = false))]
async fn look() -> String {
    String::new()
}

fn main() {
    let annotations = look().tool().annotations.clone().unwrap();
    assert_eq!(
        annotations,
        serde_json::json!({
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        })
    );
}

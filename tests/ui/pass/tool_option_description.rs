// Checks: the doc comment is the description, and `description` overrides it.
use durable_mcp::tool;

/// Says hello.
///
/// Politely.
#[tool]
async fn documented() -> String {
    "hi".to_owned()
}

/// Not this.
#[tool(description = "Greets.")]
async fn described() -> String {
    "hi".to_owned()
}

fn main() {
    assert_eq!(documented().tool().description.as_deref(), Some("Says hello.\n\nPolitely."));
    assert_eq!(described().tool().description.as_deref(), Some("Greets."));
}

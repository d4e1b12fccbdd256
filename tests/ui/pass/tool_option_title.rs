// Checks: `title` sets the display title.
use durable_mcp::tool;

#[tool(title = "Say hello")]
async fn hello() -> String {
    "hi".to_owned()
}

fn main() {
    assert_eq!(hello().tool().title.as_deref(), Some("Say hello"));
}

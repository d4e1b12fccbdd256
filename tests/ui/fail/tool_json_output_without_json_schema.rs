// Checks: a Json<T> output derives JsonSchema, for the tool's outputSchema.
use durable_mcp::tool;
use durable_mcp::wire::Json;

#[derive(serde::Serialize)]
struct Sum {
    sum: i64,
}

#[tool]
async fn add() -> Json<Sum> {
    Json(Sum { sum: 1 })
}

fn main() {}

// Checks: a clock or random source read in a task body, outside a step's closure, is a
// warning at the call that names what to use instead (here denied, to show it); inside a
// step's closure it is not.
#![deny(deprecated)]

use std::time::SystemTime;

use durable_mcp::{StepError, TaskContext, TaskError, mcp_task};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {}

#[mcp_task]
async fn stamp(cx: &TaskContext, _input: Input) -> Result<String, TaskError> {
    let inside = cx
        .step("read", || async {
            Ok::<_, StepError>(SystemTime::now().elapsed().is_ok())
        })
        .await?;
    let outside = SystemTime::now();
    Ok(format!("{inside} {outside:?}"))
}

fn main() {}

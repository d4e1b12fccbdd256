// Checks: the expansions name everything by absolute path. Inside `shadowed`, the prelude's
// types, traits and variants, and modules named `core`, `std` and `durable_mcp`, are all
// redefined; both macros, with every option, still expand and run.
use durable_mcp::McpServer;
use durable_mcp::TaskStatus;
use durable_mcp::testing::Harness;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Input {
    values: ::std::vec::Vec<u64>,
}

#[allow(dead_code)]
mod shadowed {
    use ::durable_mcp::wire::Json;
    use ::durable_mcp::{StepError, TaskContext, TaskError, duration, mcp_task, step};

    pub struct Result;
    pub struct Option;
    pub struct Box;
    pub struct String;
    pub struct Vec;
    pub struct Ok;
    pub struct Err;
    pub struct Some;
    pub struct None;
    pub trait Fn {}
    pub trait FnOnce {}
    pub trait Future {}
    pub trait Into {}
    pub trait From {}
    pub trait Send {}
    pub trait Sync {}
    pub trait Clone {}
    pub trait Default {}
    pub trait ToString {}
    mod core {}
    mod std {}
    mod durable_mcp {}

    #[step(
        name = "square",
        timeout = "5s",
        retry(
            limit = 2,
            delay = "1s",
            backoff = "linear",
            max_delay = "2s",
            jitter = false
        ),
        crate = "::durable_mcp"
    )]
    pub async fn square(n: u64) -> ::core::result::Result<u64, StepError> {
        ::core::result::Result::Ok(n * n)
    }

    #[step]
    pub async fn plain(text: &str) -> ::core::result::Result<::std::string::String, StepError> {
        ::core::result::Result::Ok(::std::borrow::ToOwned::to_owned(text))
    }

    /// Squares every value.
    #[mcp_task(
        name = "squares",
        title = "Squares",
        description = "Squares every value, one step each.",
        ttl = "1h",
        poll_interval = "1s",
        retry(
            limit = 3,
            delay = "1s",
            backoff = "exponential",
            max_delay = "1m",
            jitter = true
        ),
        step_timeout = "30s",
        optional,
        annotations(read_only, destructive = false, idempotent, open_world = false),
        crate = "::durable_mcp"
    )]
    pub async fn squares(
        cx: &TaskContext,
        input: super::Input,
    ) -> ::core::result::Result<Json<::std::vec::Vec<u64>>, TaskError> {
        let mut squared = ::std::vec::Vec::new();
        for value in input.values {
            squared.push(square(value).await?);
        }
        cx.sleep("pause", duration!("1s")).await?;
        ::core::result::Result::Ok(Json(squared))
    }

    /// Echoes a word, forever kept and required.
    #[mcp_task(ttl = "forever", required)]
    pub async fn echo(
        input: super::Input,
    ) -> ::core::result::Result<::std::string::String, TaskError> {
        let text = plain("echo").await?;
        ::core::result::Result::Ok(::std::format!("{text} {}", input.values.len()))
    }
}

fn main() {
    let server = McpServer::new("ui", "0")
        .task(shadowed::squares)
        .task(shadowed::echo);
    assert_eq!(server.tool_names(), ["squares", "echo"]);
    let mut harness = Harness::new(&server);
    let id = harness.create("squares", serde_json::json!({ "values": [2, 3] }));
    harness.run_until_idle();
    harness.advance("1s");
    assert_eq!(harness.status(&id), TaskStatus::Completed);
    let result = harness.result(&id).unwrap();
    assert_eq!(result["structuredContent"], serde_json::json!([4, 9]));
    let id = harness.create("echo", serde_json::json!({ "values": [1] }));
    harness.run_until_idle();
    assert_eq!(harness.status(&id), TaskStatus::Completed);
}

/// This doc comment stays on the tool fn; `description` wins for the tool.
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn send_report() -> ::my_framework::durable_mcp::TaskTool {
    #[allow(clippy::needless_pass_by_value)]
    #[allow(clippy::unused_async)]
    async fn __durable_mcp_task_body(
        cx: &TaskContext,
        input: Report,
    ) -> Result<String, TaskError> {
        cx.sleep("cool-off", "5s").await?;
        Ok(format!("sent {}", input.name))
    }
    ::my_framework::durable_mcp::__private::task_tool::<
        Report,
        _,
    >(
        ::my_framework::durable_mcp::__private::TaskSpec {
            name: "send-report",
            title: ::core::option::Option::Some("Send a report"),
            description: ::core::option::Option::Some(
                "Fetches the report and sends it.",
            ),
            ttl: ::core::option::Option::Some(
                ::core::option::Option::Some(
                    ::core::time::Duration::from_millis(3600000u64),
                ),
            ),
            poll_interval: ::core::option::Option::Some(
                ::core::time::Duration::from_millis(2000u64),
            ),
            retry: ::core::option::Option::Some(
                ::my_framework::durable_mcp::__private::retry_policy(
                    ::core::option::Option::Some(5u32),
                    ::core::option::Option::Some(
                        ::core::time::Duration::from_millis(1000u64),
                    ),
                    ::core::option::Option::Some(
                        ::my_framework::durable_mcp::__private::Backoff::Exponential,
                    ),
                    ::core::option::Option::Some(
                        ::core::time::Duration::from_millis(60000u64),
                    ),
                    ::core::option::Option::Some(false),
                ),
            ),
            timeout: ::core::option::Option::Some(
                ::core::time::Duration::from_millis(30000u64),
            ),
            cleanup_timeout: ::core::option::Option::Some(
                ::core::time::Duration::from_millis(120000u64),
            ),
            required: false,
            annotations: &[
                ("readOnlyHint", false),
                ("destructiveHint", false),
                ("idempotentHint", true),
                ("openWorldHint", true),
            ],
            scopes: &["reports:write", "mcp"],
            output_schema: {
                use ::my_framework::durable_mcp::__private::{
                    StructuredOutput as _, UnstructuredOutput as _,
                };
                (&::my_framework::durable_mcp::__private::OutputOf::<String>::NEW)
                    .output_schema()
            },
        },
        |__cx, __input| {
            ::std::boxed::Box::pin(async move {
                ::my_framework::durable_mcp::__private::into_task_result(
                    __durable_mcp_task_body(__cx, __input).await,
                )
            })
        },
    )
}

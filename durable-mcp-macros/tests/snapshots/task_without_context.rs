/// Places an order.
///
/// The order is kept forever.
pub fn place_order() -> ::durable_mcp::TaskTool {
    #[allow(clippy::unused_async)]
    async fn __durable_mcp_task_body(input: Order) -> Result<CallToolResult, TaskError> {
        Ok(CallToolResult::text(input.summary()))
    }
    ::durable_mcp::__private::task_tool::<
        Order,
        _,
    >(
        ::durable_mcp::__private::TaskSpec {
            name: "place_order",
            title: ::core::option::Option::None,
            description: ::core::option::Option::Some(
                "Places an order.\n\nThe order is kept forever.",
            ),
            ttl: ::core::option::Option::Some(::core::option::Option::None),
            poll_interval: ::core::option::Option::None,
            retry: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            cleanup_timeout: ::core::option::Option::None,
            required: true,
            annotations: &[],
            scopes: &[],
            output_schema: {
                use ::durable_mcp::__private::{
                    StructuredOutput as _, UnstructuredOutput as _,
                };
                (&::durable_mcp::__private::OutputOf::<CallToolResult>::NEW)
                    .output_schema()
            },
        },
        |_, __input| {
            ::std::boxed::Box::pin(async move {
                ::durable_mcp::__private::into_task_result(
                    __durable_mcp_task_body(__input).await,
                )
            })
        },
    )
}

/// Doubles every number.
fn double_all() -> ::durable_mcp::TaskTool {
    #[allow(clippy::unused_async)]
    async fn __durable_mcp_task_body(
        cx: &TaskContext,
        input: Numbers,
    ) -> Result<Json<Vec<u64>>, TaskError> {
        let mut doubled = Vec::new();
        for value in input.values {
            doubled.push(double(value).await?);
        }
        Ok(Json(doubled))
    }
    ::durable_mcp::__private::task_tool::<
        Numbers,
        _,
    >(
        ::durable_mcp::__private::TaskSpec {
            name: "double_all",
            title: ::core::option::Option::None,
            description: ::core::option::Option::Some("Doubles every number."),
            ttl: ::core::option::Option::None,
            poll_interval: ::core::option::Option::None,
            retry: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            cleanup_timeout: ::core::option::Option::None,
            required: false,
            annotations: &[],
            scopes: &[],
            output_schema: {
                use ::durable_mcp::__private::{
                    StructuredOutput as _, UnstructuredOutput as _,
                };
                (&::durable_mcp::__private::OutputOf::<Json<Vec<u64>>>::NEW)
                    .output_schema()
            },
        },
        |__cx, __input| {
            ::std::boxed::Box::pin(async move {
                ::durable_mcp::__private::into_task_result(
                    __durable_mcp_task_body(__cx, __input).await,
                )
            })
        },
    )
}

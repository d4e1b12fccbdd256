/// Adds two numbers.
fn add() -> ::durable_mcp::PlainTool {
    #[allow(clippy::unused_async)]
    async fn __durable_mcp_tool_body(input: Pair) -> Json<Sum> {
        Json(Sum { sum: input.a + input.b })
    }
    ::durable_mcp::__private::plain_tool::<
        Pair,
        Json<Sum>,
        _,
    >(
        ::durable_mcp::__private::ToolSpec {
            name: "add",
            title: ::core::option::Option::None,
            description: ::core::option::Option::Some("Adds two numbers."),
            annotations: &[],
            scopes: &[],
        },
        |__call, __input| {
            ::std::boxed::Box::pin(async move {
                ::durable_mcp::__private::tool_value(
                    __durable_mcp_tool_body(__input).await,
                )
            })
        },
    )
}

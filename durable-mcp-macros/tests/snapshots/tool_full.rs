pub fn is_prime() -> ::my_framework::durable_mcp::PlainTool {
    #[allow(clippy::unused_async)]
    async fn __durable_mcp_tool_body(
        call: &ToolCall,
        input: Candidate,
    ) -> Result<Json<Verdict>, String> {
        call.notify.progress(1.0, None, None);
        Ok(Json(Verdict { prime: check(input.n) }))
    }
    ::my_framework::durable_mcp::__private::plain_tool::<
        Candidate,
        Json<Verdict>,
        _,
    >(
        ::my_framework::durable_mcp::__private::ToolSpec {
            name: "is-prime",
            title: ::core::option::Option::Some("Is it prime?"),
            description: ::core::option::Option::Some(
                "Tells whether a number is prime.",
            ),
            annotations: &[
                ("readOnlyHint", true),
                ("idempotentHint", true),
                ("openWorldHint", false),
            ],
            scopes: &["math"],
        },
        |__call, __input| {
            ::std::boxed::Box::pin(async move {
                ::my_framework::durable_mcp::__private::tool_result(
                    __durable_mcp_tool_body(__call, __input).await,
                )
            })
        },
    )
}

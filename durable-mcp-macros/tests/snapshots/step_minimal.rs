/// Doubles a number.
fn double(
    n: u64,
) -> ::durable_mcp::__private::LocalBoxFuture<'static, Result<u64, StepError>> {
    #[allow(clippy::unused_async)]
    async fn __durable_mcp_step_body(n: u64) -> Result<u64, StepError> {
        Ok(n * 2)
    }
    fn __durable_mcp_journaled(
        output: u64,
    ) -> impl ::durable_mcp::__private::StepOutput + ::core::convert::Into<u64> {
        ::core::convert::identity(output)
    }
    let __durable_mcp_spec = ::durable_mcp::__private::StepSpec {
        retry: ::core::option::Option::None,
        timeout: ::core::option::Option::None,
    };
    let __durable_mcp_run = move || __durable_mcp_step_body(n);
    ::durable_mcp::__private::run_step(
        "double",
        __durable_mcp_spec,
        __durable_mcp_journaled,
        __durable_mcp_run,
    )
}

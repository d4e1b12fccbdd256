/// Sends one mail; the receipt is journaled.
#[must_use = "a step that is not awaited does not run"]
pub async fn send_mail(
    to: &str,
    attempts: u32,
    body: String,
) -> Result<Receipt, StepError> {
    #[allow(clippy::unused_async)]
    async fn __durable_mcp_step_body(
        to: &str,
        mut attempts: u32,
        body: String,
    ) -> Result<Receipt, StepError> {
        attempts += 1;
        Ok(Receipt::new(to, attempts, body))
    }
    fn __durable_mcp_journaled(
        output: Receipt,
    ) -> impl ::my_framework::durable_mcp::__private::StepOutput + ::core::convert::Into<
        Receipt,
    > {
        ::core::convert::identity(output)
    }
    let __durable_mcp_spec = ::my_framework::durable_mcp::__private::StepSpec {
        retry: ::core::option::Option::Some(
            ::my_framework::durable_mcp::__private::retry_policy(
                ::core::option::Option::Some(4u32),
                ::core::option::Option::Some(
                    ::core::time::Duration::from_millis(2000u64),
                ),
                ::core::option::Option::Some(
                    ::my_framework::durable_mcp::__private::Backoff::Linear,
                ),
                ::core::option::Option::Some(
                    ::core::time::Duration::from_millis(10000u64),
                ),
                ::core::option::Option::Some(true),
            ),
        ),
        timeout: ::core::option::Option::Some(
            ::core::time::Duration::from_millis(15000u64),
        ),
    };
    let __durable_mcp_run = move || __durable_mcp_step_body(to, attempts, body);
    ::my_framework::durable_mcp::__private::run_step(
            "send-mail",
            __durable_mcp_spec,
            __durable_mcp_journaled,
            __durable_mcp_run,
        )
        .await
}

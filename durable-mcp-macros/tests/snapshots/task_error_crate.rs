fn work() -> reexport::durable_mcp::TaskTool {
    #[allow(dead_code, clippy::unused_async)]
    async fn __durable_mcp_task_body(input: Order) -> Result<String, TaskError> {
        Ok(input.summary())
    }
    ::core::unimplemented!("the attribute macro on this fn failed to compile")
}
::core::compile_error! {
    "`ttl`: invalid duration \"soon\": it does not start with a number; write a number followed by ms, s, m, h or d (\"250ms\", \"30s\", \"5m\", \"1h\", \"2d\") or plain milliseconds (\"1500\")"
}

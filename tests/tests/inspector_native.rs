//! The task inspector on the native host: the operator's round of the shared scenario, and the
//! inspector absent unless a token is configured.

use durable_mcp_tests::inspector::{Inspector, operator_round};
use durable_mcp_tests::mcp::McpClient;
use durable_mcp_tests::server::ServerProcess;

const TOKEN: &str = "inspector-token-for-tests-0123456789";

#[test]
fn an_operator_lists_reads_answers_wakes_and_cancels_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let env = [(durable_mcp::settings::INSPECTOR_TOKEN_VAR, TOKEN)];
    let server = ServerProcess::start("conformance-server", dir.path(), &env);
    let client = McpClient::new(server.url());
    let inspector = Inspector::new(server.address(), durable_mcp::http::INSPECTOR_PATH, TOKEN);
    operator_round(&client, &inspector);

    let page = inspector.request_as(None, "GET", "", b"");
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = String::from_utf8(page.body).unwrap();
    assert!(html.contains("durable-mcp inspector"), "{html}");
}

#[test]
fn without_a_token_the_inspector_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start("conformance-server", dir.path(), &[]);
    let inspector = Inspector::new(server.address(), durable_mcp::http::INSPECTOR_PATH, TOKEN);
    for path in ["", "/api/tasks"] {
        assert_eq!(inspector.request("GET", path, b"").status, 404, "{path}");
    }
}

#[test]
fn a_short_token_stops_the_host_with_a_message() {
    let error = durable_mcp::native::NativeHost::new(|| durable_mcp::McpServer::new("t", "1"))
        .inspector_token("short")
        .unwrap_err();
    assert!(error.to_string().contains("at least 16"), "{error}");
}

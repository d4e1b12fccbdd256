//! The demo report service, inside the server (`REPORT_API_URL=demo`): what the two calls of
//! the real service answer, with no service to deploy. A deployed example completes its tasks
//! with it; point `REPORT_API_URL` at a real service to send reports anywhere.

use serde_json::json;

use super::Report;

/// The report `GET /data?to=<to>` would answer: three rows of made-up numbers.
pub fn report_for(to: &str) -> Report {
    Report {
        title: format!("Weekly numbers for {to}"),
        rows: vec![
            json!({ "day": "mon", "orders": 3 }),
            json!({ "day": "tue", "orders": 1 }),
            json!({ "day": "wed", "orders": 4 }),
        ],
    }
}

/// What `POST /send` does here: nothing leaves the server; the send is logged with its
/// idempotency key, which a real service would use to drop a repeat.
pub fn accept(to: &str, report: &Report, key: &str) {
    let line = format!(
        "demo report service: {:?} sent to {to} (key {key})",
        report.title
    );
    #[cfg(target_arch = "wasm32")]
    worker::console_log!("{line}");
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{line}");
}

//! Compile-time behaviour of `#[mcp_task]` and `#[step]` through trybuild: every misuse in
//! `ui/fail` fails with the message in its `.stderr` snapshot, and every case in `ui/pass`
//! compiles and runs. Refresh the snapshots with
//! `TRYBUILD=overwrite cargo test -p durable-mcp-tests --test ui` and review the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}

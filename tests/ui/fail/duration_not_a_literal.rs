// Checks: `duration!` takes a string literal only, and says where a run-time string goes.
use durable_mcp::duration;

fn main() {
    let text = "5m";
    let _pause = duration!(text);
}

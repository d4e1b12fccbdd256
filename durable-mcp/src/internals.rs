//! **No API.** What the workspace's own tools reach inside the engine for: the benchmarks
//! (`xtask`), the deterministic simulator (`tests/sim`) and the tests that check the engine's
//! decisions and stored rows directly. Nothing here is covered by semver; it changes in any
//! release. Build on the crate root, [`crate::http`], [`crate::store`] and the hosts instead.

pub use crate::core::child::child_task_id;
pub use crate::core::{NewTask, control, schedule, schema, step_failure};
pub use crate::rpc::{RpcError, decode_cursor, encode_cursor, sse};
pub use crate::runtime::{DEFAULT_LEASE, current_context, new_task_id, tool_error_result};

#[cfg(all(native_host, feature = "logging"))]
pub use crate::native::logging::install_from_env as install_native_log;
#[cfg(native_host)]
pub use crate::native::sqlite::{bind, configure};

#[cfg(cloudflare_host)]
pub use crate::cloudflare::sql_store::DurableObjectStore;

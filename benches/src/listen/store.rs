//! The native host's store, read from its SQLite file (read-only) to wait for tasks without
//! asking the host: a request would add to the CPU time measured.

use std::time::{Duration, Instant};

use durable_mcp::TaskStatus;
use durable_mcp::native::NativeHost;
use rusqlite::OpenFlags;
use xtask::Result;
use xtask::server::NativeServer;

/// How long the tasks may take to reach a status, at most.
const LIMIT: Duration = Duration::from_secs(300);

/// A read-only connection to a host's database.
#[derive(Debug)]
pub(super) struct Store(rusqlite::Connection);

impl Store {
    /// Opens `server`'s database.
    pub(super) fn open(server: &NativeServer) -> Result<Store> {
        let database = server.state_dir().join(NativeHost::DATABASE_FILE);
        let connection =
            rusqlite::Connection::open_with_flags(database, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        connection.busy_timeout(Duration::from_secs(5))?;
        Ok(Store(connection))
    }

    /// Waits until `count` tasks have `status`.
    pub(super) fn wait_for(&self, status: TaskStatus, count: usize) -> Result<()> {
        let mut query = self
            .0
            .prepare_cached("SELECT count(*) FROM task WHERE status = ?1")?;
        let deadline = Instant::now() + LIMIT;
        loop {
            let now: usize = query.query_row([status.as_str()], |row| row.get(0))?;
            if now >= count {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{now} of {count} tasks {} after {} s",
                    status.as_str(),
                    LIMIT.as_secs()
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

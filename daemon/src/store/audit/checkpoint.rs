//! Background WAL checkpoints.
//!
//! Copying the WAL back into the main file (and its fsyncs) would otherwise
//! run inside whichever commit crosses SQLite's auto-checkpoint threshold,
//! stalling every appender waiting on that batch. A thread with its own
//! connection runs PASSIVE checkpoints, which never block the writer, ten
//! times a second; under `synchronous=NORMAL` this is also what fsyncs
//! NORMAL events, so they are on disk within about that. Run often, it also
//! leaves the writer's own checkpoint (at `wal_autocheckpoint`, inside a
//! commit) little left to copy.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::AuditError;

/// Time between checkpoints.
const INTERVAL: Duration = Duration::from_millis(100);

/// The checkpoint thread; stopped (after closing its connection) on drop.
pub(crate) struct Checkpointer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens a connection to the existing database at `path` and starts the
    /// thread.
    pub(crate) fn spawn(path: &Path) -> Result<Checkpointer, AuditError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name("praxis-audit-checkpoint".into())
            .spawn(move || {
                // Any message or a closed channel means stop.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                    checkpoint(&conn);
                }
            })
            .map_err(AuditError::Spawn)?;
        Ok(Checkpointer {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("audit checkpoint thread panicked");
        }
    }
}

fn checkpoint(conn: &Connection) {
    // Columns: busy flag, WAL frames, frames checkpointed.
    let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match result {
        Ok((frames, done)) => tracing::trace!(frames, done, "audit WAL checkpoint"),
        Err(e) => tracing::warn!(error = %e, "audit WAL checkpoint failed"),
    }
}

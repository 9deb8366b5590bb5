//! Background WAL syncs and checkpoints.
//!
//! Under `synchronous=NORMAL` a commit is in the WAL but not yet on disk.
//! A thread looks at the WAL ten times a second and fsyncs it when it
//! changed, so NORMAL events are on disk within about that.
//!
//! It checkpoints (copies the WAL back into the main file) seldom: every
//! half minute while events arrive, or as soon as the WAL passes
//! [`WAL_LIMIT_BYTES`]. A complete checkpoint makes the next commit restart
//! the WAL from its start, and SQLite fsyncs the new WAL header inside that
//! commit: run after every idle moment, that fsync landed on the first
//! command after each pause, at an agent's pace on nearly every command.
//! Copying in the background also keeps SQLite's own checkpoint (at
//! `wal_autocheckpoint`, inside a commit) for a writer this thread cannot
//! keep up with.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::Duration;
use std::time::{Instant, SystemTime};

use rusqlite::{Connection, OpenFlags};

use super::error::AuditError;

/// Time between looks at the WAL: the longest a NORMAL event waits for its
/// fsync.
const INTERVAL: Duration = Duration::from_millis(100);

/// Longest time between checkpoints while events arrive.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(30);

/// WAL size past which the next look checkpoints; also what SQLite cuts
/// the WAL file back to when it restarts (`journal_size_limit`), so a WAL
/// past it has taken that much since its last restart.
pub(crate) const WAL_LIMIT_BYTES: i64 = 4 << 20;

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
        let mut wal = Wal {
            path: wal_path(path),
            file: None,
            seen: None,
            checkpointed: Instant::now(),
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name("praxis-audit-checkpoint".into())
            .spawn(move || {
                // Any message or a closed channel means stop.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                    wal.look(&conn);
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

/// The `-wal` file beside the database at `db`.
fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// What the thread knows of the WAL between looks.
struct Wal {
    path: PathBuf,
    /// Opened at the first look that finds it.
    file: Option<File>,
    /// Its modification time and size at the last look.
    seen: Option<(SystemTime, u64)>,
    checkpointed: Instant,
}

impl Wal {
    /// Syncs the WAL if it changed since the last look, or checkpoints it
    /// when it is due.
    fn look(&mut self, conn: &Connection) {
        if self.file.is_none() {
            self.file = File::open(&self.path).ok();
        }
        let Some(file) = &self.file else {
            return;
        };
        let stamp = match file.metadata().and_then(|m| Ok((m.modified()?, m.len()))) {
            Ok(stamp) => stamp,
            Err(e) => {
                tracing::warn!(error = %e, "cannot stat the audit WAL");
                return;
            }
        };
        if self.seen == Some(stamp) {
            return;
        }
        self.seen = Some(stamp);
        if stamp.1 > WAL_LIMIT_BYTES.unsigned_abs()
            || self.checkpointed.elapsed() >= CHECKPOINT_EVERY
        {
            // A checkpoint syncs the WAL before it copies it back.
            checkpoint(conn);
            self.checkpointed = Instant::now();
        } else if let Err(e) = file.sync_data() {
            tracing::warn!(error = %e, "audit WAL sync failed");
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

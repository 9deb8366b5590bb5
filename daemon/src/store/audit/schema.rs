//! Creating and opening the database file: permissions, WAL, the `events`
//! table with its append-only triggers, and callers' extra tables.

use std::fs::{self, OpenOptions, Permissions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::error::AuditError;

/// Layout version written to `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 1;

/// WAL size at which the writer checkpoints by itself (64 MiB of 4 KiB pages).
const WAL_SAFETY_PAGES: i64 = 16_384;

/// How long a connection waits for a lock held by another connection.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The `events` table. STRICT makes SQLite refuse values of the wrong type;
/// AUTOINCREMENT keeps the highest `seq` ever used in `sqlite_sequence`, which
/// lets verification notice rows cut from the end of the log.
const EVENTS: &str = "
CREATE TABLE IF NOT EXISTS events (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    ts               TEXT NOT NULL,
    kind             TEXT NOT NULL,
    request_id       TEXT,
    session          TEXT,
    role             TEXT,
    uid              INTEGER,
    pid              INTEGER,
    runtime          TEXT,
    cwd              TEXT,
    argv_redacted    TEXT,
    arguments_digest TEXT,
    tier             TEXT,
    decision         TEXT,
    reason           TEXT,
    rule_ids         TEXT,
    policy_revision  TEXT,
    profile          TEXT,
    exit_code        INTEGER,
    signal           INTEGER,
    duration_ms      INTEGER,
    stdout_bytes     INTEGER,
    stderr_bytes     INTEGER,
    output_digest    TEXT,
    truncated        INTEGER,
    approval_id      TEXT,
    credentials      TEXT,
    detail           TEXT,
    prev_hash        TEXT NOT NULL,
    hash             TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS events_by_request ON events (request_id) WHERE request_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_ts ON events (ts);
";

/// Triggers that make `events` append-only at the SQL level.
const TRIGGERS: &str = "
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
";

/// Opens (creating if needed) the database for writing: file mode 0600, WAL,
/// the `events` schema, then `extra` schema statements of other components.
pub(crate) fn open_writer(path: &Path, extra: &[&str]) -> Result<Connection, AuditError> {
    restrict_permissions(path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(AuditError::NotWal(mode));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Checkpoints normally run in the background; this threshold (in pages)
    // only bounds the WAL if that thread falls behind.
    conn.pragma_update(None, "wal_autocheckpoint", WAL_SAFETY_PAGES)?;
    // After a checkpoint the WAL restarts; this cuts its file back then.
    conn.pragma_update(
        None,
        "journal_size_limit",
        super::checkpoint::WAL_LIMIT_BYTES,
    )?;

    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(AuditError::NewerSchema(version));
    }
    let had_events = table_exists(&conn, "events")?;
    let triggers: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'
         AND name IN ('events_no_update', 'events_no_delete')",
        [],
        |row| row.get(0),
    )?;
    if had_events && triggers < 2 {
        // Someone removed the append-only guard; restore it and say so. Any
        // row changed meanwhile is caught by verification, not here.
        tracing::warn!(path = %path.display(), "audit append-only triggers were missing; restored");
    }
    conn.execute_batch(EVENTS)?;
    conn.execute_batch(TRIGGERS)?;
    for sql in extra {
        conn.execute_batch(sql)?;
    }
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(conn)
}

/// Opens a read-only connection to an existing database.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, AuditError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

fn table_exists(conn: &Connection, name: &str) -> Result<bool, AuditError> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |row| row.get(0),
    )?;
    Ok(n > 0)
}

/// Creates the file 0600 if absent and forces 0600 on it and on existing
/// WAL side files; SQLite gives new side files the main file's mode.
fn restrict_permissions(path: &Path) -> Result<(), AuditError> {
    let io = |source| AuditError::Io {
        path: path.display().to_string(),
        source,
    };
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    fs::set_permissions(path, Permissions::from_mode(0o600)).map_err(io)?;
    for suffix in ["-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        match fs::set_permissions(&side, Permissions::from_mode(0o600)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
    }
    Ok(())
}

//! Read side: a small pool of read-only connections (WAL lets them read while
//! the writer commits) and the queries behind `praxis audit` and `status`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, Params};

use super::error::AuditError;
use super::event::StoredEvent;
use super::record::{SELECT_LIST, read_values, stored_of};
use super::schema;

/// Idle read connections kept for reuse.
const MAX_IDLE: usize = 4;

/// Read-only connections to one database file.
pub(crate) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    pub(crate) fn new(path: &Path) -> Readers {
        Readers {
            path: path.to_owned(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Closes every idle connection.
    pub(crate) fn close_idle(&self) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Runs `f` on an idle read connection, opening one if none is idle.
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, AuditError>,
    ) -> Result<T, AuditError> {
        let pooled = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => schema::open_reader(&self.path)?,
        };
        let out = f(&conn);
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE && conn.is_autocommit() {
            idle.push(conn);
        }
        out
    }
}

/// Calls `each` for every event selected by `filter` (SQL after
/// `FROM events`), in the order the filter gives.
pub(crate) fn each_event(
    conn: &Connection,
    filter: &str,
    params: impl Params,
    mut each: impl FnMut(StoredEvent) -> Result<(), AuditError>,
) -> Result<(), AuditError> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {} FROM events {filter}", *SELECT_LIST))?;
    let mut rows = stmt.query(params)?;
    while let Some(row) = rows.next()? {
        let (record, hash) = read_values(row)?;
        each(stored_of(record, hash)?)?;
    }
    Ok(())
}

/// Every event selected by `filter`, collected.
pub(crate) fn events(
    conn: &Connection,
    filter: &str,
    params: impl Params,
) -> Result<Vec<StoredEvent>, AuditError> {
    let mut out = Vec::new();
    each_event(conn, filter, params, |event| {
        out.push(event);
        Ok(())
    })?;
    Ok(out)
}

/// Row counts grouped by `column` over the rows `filter` selects.
pub(crate) fn count_by(
    conn: &Connection,
    column: &str,
    filter: &str,
) -> Result<BTreeMap<String, u64>, AuditError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {column}, count(*) FROM events WHERE {column} IS NOT NULL {filter} GROUP BY {column}"
    ))?;
    let rows = stmt.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
    })?;
    let mut counts = BTreeMap::new();
    for row in rows {
        let (key, n) = row?;
        counts.insert(key, u64::try_from(n).unwrap_or(0));
    }
    Ok(counts)
}

/// Writes each selected event as one JSON line; returns the number written.
pub(crate) fn export_jsonl(
    conn: &Connection,
    since: Option<&str>,
    out: &mut dyn Write,
) -> Result<u64, AuditError> {
    let mut written = 0;
    let mut line = Vec::with_capacity(1024);
    let mut emit = |event: StoredEvent| {
        line.clear();
        serde_json::to_writer(&mut line, &event).map_err(AuditError::Json)?;
        line.push(b'\n');
        out.write_all(&line).map_err(AuditError::Export)?;
        written += 1;
        Ok(())
    };
    match since {
        Some(ts) => each_event(conn, "WHERE ts >= ?1 ORDER BY seq", [ts], &mut emit)?,
        None => each_event(conn, "ORDER BY seq", [], &mut emit)?,
    }
    out.flush().map_err(AuditError::Export)?;
    Ok(written)
}

/// Clamps a count to SQLite's integer range.
pub(crate) fn sql_limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

//! What a restarted daemon owes the record: every command that had started
//! when the last daemon ended, with no outcome, gets an `interrupted` one.

use crate::state::Daemon;
use crate::store::audit::{Durability, Event, EventKind};

/// Started requests with neither an outcome nor an interruption recorded.
const UNFINISHED: &str = "SELECT s.request_id, s.session, s.role, s.uid, s.runtime, s.cwd \
     FROM events s WHERE s.kind = 'started' AND s.request_id IS NOT NULL \
     AND NOT EXISTS (SELECT 1 FROM events o WHERE o.request_id = s.request_id \
                     AND o.kind IN ('finished', 'interrupted'))";

/// Records an `interrupted` outcome for each; returns how many.
pub async fn record_interrupted(daemon: &Daemon) -> Result<usize, String> {
    let unfinished = daemon
        .audit
        .read(|conn| {
            let mut stmt = conn.prepare(UNFINISHED)?;
            let rows = stmt.query_map([], |row| {
                Ok(Event {
                    request_id: row.get(0)?,
                    session: row.get(1)?,
                    role: row.get(2)?,
                    uid: row.get(3)?,
                    runtime: row.get(4)?,
                    cwd: row.get(5)?,
                    reason: Some(String::from(
                        "praxisd ended before the command's outcome was recorded; if it was still running, the guardian ended what was left of it",
                    )),
                    ..Event::new(EventKind::Interrupted)
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<Event>>>()
        })
        .map_err(|e| crate::errors::one_line(&e))?;
    let count = unfinished.len();
    for event in unfinished {
        let _recorded = daemon.record(event, Durability::Full).await?;
    }
    Ok(count)
}

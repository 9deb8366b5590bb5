//! The judgment-memory store: memories, compact judgment events and the
//! actions of held requests, in SQLite under the state dir, owned by
//! praxisd. Rows hold the memory crate's serde types as JSON, with the
//! columns queries select on (id, workspace, review status) beside them.
//!
//! Nothing here decides: what a memory may do is `praxis_memory`'s.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use praxis_memory::event::Event;
use praxis_memory::lesson::Action;
use praxis_memory::memory::Memory;
use praxis_memory::time::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};

/// Why the memory store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("memory store: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("memory store: a stored row does not read back: {0}")]
    Json(#[from] serde_json::Error),
    #[error("memory store: {0}")]
    Invalid(String),
    #[error("memory store: cannot start its writer thread: {0}")]
    Writer(std::io::Error),
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    id        TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    review    TEXT NOT NULL,
    body      TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS memories_workspace ON memories(workspace);
CREATE INDEX IF NOT EXISTS memories_review ON memories(review);
CREATE TABLE IF NOT EXISTS events (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    at   INTEGER NOT NULL,
    body TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS held (
    request_id TEXT PRIMARY KEY,
    at         INTEGER NOT NULL,
    workspace  TEXT NOT NULL,
    body       TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS held_at ON held(at);
CREATE TABLE IF NOT EXISTS decisions (
    idempotency_key TEXT PRIMARY KEY,
    decision_id     TEXT NOT NULL UNIQUE,
    body            TEXT NOT NULL
) STRICT;
";

/// The store. One connection behind a mutex: writes are rare (reviews,
/// proposals, one row per HOLD) and short.
///
/// The decision path reads and writes nothing it can avoid: a workspace's
/// memories are kept parsed until the table changes (through this store,
/// or by another connection, which SQLite's `data_version` tells), and a
/// held action with its judgment events is queued for a writer thread,
/// and written before the next read of the store at the latest.
pub struct MemoryStore {
    shared: Arc<Shared>,
    /// Wakes the writer thread when a held action is queued.
    wake: SyncSender<()>,
}

/// How long the writer thread gathers held actions before it writes them.
const WRITE_DELAY: Duration = Duration::from_millis(20);

/// What the store and its writer thread share.
struct Shared {
    conn: Mutex<Connection>,
    state: Mutex<Cached>,
}

/// What the store keeps in memory for the decision path.
#[derive(Default)]
struct Cached {
    /// `data_version` when `workspaces` was filled.
    data_version: Option<i64>,
    workspaces: HashMap<String, Arc<Vec<Memory>>>,
    held: Vec<HeldRow>,
}

/// A held action and the judgment events of consulting memory on it.
struct HeldRow {
    request_id: String,
    at: Timestamp,
    action: Action,
    events: Vec<Event>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, Cached> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn raw_conn(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The connection, with every queued held action written first.
    fn written(&self) -> MutexGuard<'_, Connection> {
        let mut conn = self.raw_conn();
        let queued = std::mem::take(&mut self.state().held);
        if !queued.is_empty()
            && let Err(e) = write_held(&mut conn, &queued)
        {
            tracing::warn!("{} held actions not kept: {e}", queued.len());
        }
        conn
    }
}

impl MemoryStore {
    /// Opens (creating) the store at `path`, and starts its writer thread.
    pub fn open(path: &Path) -> Result<MemoryStore, StoreError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
        // Reviews and proposals are in the audit chain (fsynced) first; a
        // held action lost to power failure only loses a replay example.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(conn),
            state: Mutex::new(Cached::default()),
        });
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let writer = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(String::from("memory-writer"))
            .spawn(move || {
                // Until the store is dropped. A burst of HOLDs is written in
                // one transaction, and the decision path seldom finds the
                // connection busy.
                while woken.recv().is_ok() {
                    std::thread::sleep(WRITE_DELAY);
                    drop(writer.written());
                }
            })
            .map_err(StoreError::Writer)?;
        Ok(MemoryStore { shared, wake })
    }

    fn state(&self) -> MutexGuard<'_, Cached> {
        self.shared.state()
    }

    fn raw_conn(&self) -> MutexGuard<'_, Connection> {
        self.shared.raw_conn()
    }

    /// The connection, with every queued held action written first, so a
    /// read sees them. The parsed memories are dropped: the caller may write.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        let conn = self.shared.written();
        let mut state = self.state();
        state.workspaces.clear();
        state.data_version = None;
        conn
    }

    /// Writes every queued held action now.
    pub fn flush(&self) {
        drop(self.shared.written());
    }

    /// Stores a memory, replacing the one with its id; refuses one that
    /// breaks the memory invariants (an unconfirmed instruction, …).
    pub fn put(&self, memory: &Memory) -> Result<(), StoreError> {
        upsert(&self.conn(), memory)
    }

    pub fn get(&self, id: &str) -> Result<Option<Memory>, StoreError> {
        let body: Option<String> = self
            .conn()
            .query_row("SELECT body FROM memories WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(body.map(|b| serde_json::from_str(&b)).transpose()?)
    }

    /// The memories of one workspace, for recall on the decision path:
    /// parsed once, then kept until the table changes. While the writer
    /// thread holds the connection the parsed copy is used as it is: every
    /// change through this store drops it, so it can only lag a change
    /// another connection made, by that one write.
    pub fn in_workspace(&self, workspace: &str) -> Result<Arc<Vec<Memory>>, StoreError> {
        let conn = match self.shared.conn.try_lock() {
            Ok(conn) => conn,
            Err(std::sync::TryLockError::Poisoned(poison)) => poison.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if let Some(memories) = self.state().workspaces.get(workspace) {
                    return Ok(Arc::clone(memories));
                }
                self.raw_conn()
            }
        };
        let version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        let mut state = self.state();
        if state.data_version != Some(version) {
            state.workspaces.clear();
            state.data_version = Some(version);
        }
        if let Some(memories) = state.workspaces.get(workspace) {
            return Ok(Arc::clone(memories));
        }
        let memories = Arc::new(select(
            &conn,
            "SELECT body FROM memories WHERE workspace = ?1 ORDER BY id",
            [workspace],
        )?);
        state
            .workspaces
            .insert(workspace.to_owned(), Arc::clone(&memories));
        Ok(memories)
    }

    /// Every memory, for the queue, the inspector and the API.
    pub fn all(&self) -> Result<Vec<Memory>, StoreError> {
        self.select("SELECT body FROM memories ORDER BY id", [])
    }

    fn select<P: rusqlite::Params>(&self, sql: &str, p: P) -> Result<Vec<Memory>, StoreError> {
        select(&self.conn(), sql, p)
    }

    /// Appends a compact judgment event.
    pub fn add_event(&self, event: &Event) -> Result<(), StoreError> {
        insert_event(&self.conn(), event)
    }

    /// Every judgment event, oldest first.
    pub fn events(&self) -> Result<Vec<Event>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT body FROM events ORDER BY seq")?;
        let bodies = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        bodies
            .iter()
            .map(|b| serde_json::from_str(b).map_err(StoreError::from))
            .collect()
    }

    /// Keeps what the policy held, as memory sees it (redacted, no raw
    /// arguments), so an approval can generalise it and a lesson can be
    /// replayed over recent HOLDs; with it, the judgment events of
    /// consulting memory on it. Queued for the writer thread, which writes
    /// what is queued in one transaction; a read of the store writes it
    /// first.
    pub fn record_held(
        &self,
        request_id: &str,
        at: Timestamp,
        action: &Action,
        events: Vec<Event>,
    ) {
        self.state().held.push(HeldRow {
            request_id: request_id.to_owned(),
            at,
            action: action.clone(),
            events,
        });
        // Full: a wake is pending already.
        let _ = self.wake.try_send(());
    }

    /// Stores a written-back judge decision under its idempotency key, with
    /// the memories it proposes or changes (disputes), in one transaction. When the key is
    /// already stored nothing is written and the stored decision id comes
    /// back: `Ok(Err(id))`.
    pub fn put_decision(
        &self,
        idempotency_key: &str,
        decision_id: &str,
        body: &serde_json::Value,
        memories: &[Memory],
        events: &[Event],
    ) -> Result<Result<(), String>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let stored: Option<String> = tx
            .query_row(
                "SELECT decision_id FROM decisions WHERE idempotency_key = ?1",
                [idempotency_key],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = stored {
            return Ok(Err(id));
        }
        tx.execute(
            "INSERT INTO decisions (idempotency_key, decision_id, body) VALUES (?1, ?2, ?3)",
            params![idempotency_key, decision_id, body.to_string()],
        )?;
        for memory in memories {
            upsert(&tx, memory)?;
        }
        for event in events {
            insert_event(&tx, event)?;
        }
        tx.commit()?;
        Ok(Ok(()))
    }

    /// The decision id stored under an idempotency key.
    pub fn decision_id_for(&self, idempotency_key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT decision_id FROM decisions WHERE idempotency_key = ?1",
                [idempotency_key],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// A written-back decision, as it was sent.
    pub fn decision(&self, decision_id: &str) -> Result<Option<serde_json::Value>, StoreError> {
        self.body(
            "SELECT body FROM decisions WHERE decision_id = ?1",
            decision_id,
        )
    }

    /// The action of a held request.
    pub fn held(&self, request_id: &str) -> Result<Option<Action>, StoreError> {
        self.body("SELECT body FROM held WHERE request_id = ?1", request_id)
    }

    /// The JSON body one row keyed by `key` holds, read back.
    fn body<T: serde::de::DeserializeOwned>(
        &self,
        sql: &str,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        let body: Option<String> = self.conn().query_row(sql, [key], |r| r.get(0)).optional()?;
        Ok(body.map(|b| serde_json::from_str(&b)).transpose()?)
    }

    /// The `limit` most recent held actions, newest first.
    pub fn recent_held(&self, limit: u32) -> Result<Vec<Action>, StoreError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare_cached("SELECT body FROM held ORDER BY at DESC, rowid DESC LIMIT ?1")?;
        let bodies = stmt
            .query_map([limit], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        bodies
            .iter()
            .map(|b| serde_json::from_str(b).map_err(StoreError::from))
            .collect()
    }
}

fn select<P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    p: P,
) -> Result<Vec<Memory>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let bodies = stmt
        .query_map(p, |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    bodies
        .iter()
        .map(|b| serde_json::from_str(b).map_err(StoreError::from))
        .collect()
}

/// Writes queued held actions and their events in one transaction.
fn write_held(conn: &mut Connection, rows: &[HeldRow]) -> Result<(), StoreError> {
    let tx = conn.transaction()?;
    for row in rows {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO held (request_id, at, workspace, body) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            row.request_id,
            row.at.unix(),
            row.action.workspace,
            serde_json::to_string(&row.action)?
        ])?;
        for event in &row.events {
            insert_event(&tx, event)?;
        }
    }
    tx.commit()?;
    Ok(())
}

fn insert_event(conn: &Connection, event: &Event) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT INTO events (at, body) VALUES (?1, ?2)")?
        .execute(params![event.at.unix(), serde_json::to_string(event)?])?;
    Ok(())
}

impl Drop for MemoryStore {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Stores `memory`, replacing the one with its id; refuses one that breaks
/// the memory invariants.
fn upsert(conn: &Connection, memory: &Memory) -> Result<(), StoreError> {
    memory
        .check()
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
    conn.execute(
        "INSERT INTO memories (id, workspace, review, body) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(id) DO UPDATE SET workspace = ?2, review = ?3, body = ?4",
        params![
            memory.id(),
            memory.item.scope.workspace_id,
            memory.review.as_str(),
            serde_json::to_string(memory)?
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use praxis_memory::contract::{CreatedBy, ProvenanceStatus, UsePolicy, Visibility};
    use praxis_memory::memory::{Origin, OriginKind, Proposal, ReviewStatus, propose};

    use super::*;

    fn proposed(id: &str, workspace: &str) -> Memory {
        propose(
            Proposal {
                memory_id: id.to_owned(),
                summary: "an observed push".to_owned(),
                content: "pushed feature/a".to_owned(),
                source: praxis_memory::memory::judge_event_source(None, None, Timestamp(0)),
                status: ProvenanceStatus::Observed,
                confidence: 0.9,
                created_by: CreatedBy::System,
                model: None,
                runtime: None,
                workspace_id: workspace.to_owned(),
                project_id: None,
                visibility: Visibility::Workspace,
                origin: Origin {
                    kind: OriginKind::ManualEntry,
                    decision_id: None,
                    action_id: None,
                    reason: "test".to_owned(),
                },
                lesson: None,
                keywords: Vec::new(),
                sensitive_area: false,
                fresh_for: None,
            },
            Timestamp(100),
        )
    }

    #[test]
    fn memories_round_trip_and_are_selected_by_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::open(&dir.path().join("memory.db")).unwrap();
        let a = proposed("m1", "/w/a");
        store.put(&a).unwrap();
        store.put(&proposed("m2", "/w/b")).unwrap();
        assert_eq!(store.get("m1").unwrap(), Some(a.clone()));
        assert_eq!(*store.in_workspace("/w/a").unwrap(), vec![a.clone()]);
        assert_eq!(store.all().unwrap().len(), 2);

        // A second open reads what the first wrote.
        drop(store);
        let store = MemoryStore::open(&dir.path().join("memory.db")).unwrap();
        assert_eq!(store.get("m1").unwrap(), Some(a));
        assert_eq!(store.get("m3").unwrap(), None);
    }

    #[test]
    fn parsed_memories_follow_changes_by_this_store_and_by_other_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let store = MemoryStore::open(&path).unwrap();
        store.put(&proposed("m1", "/w/a")).unwrap();
        let first = store.in_workspace("/w/a").unwrap();
        assert!(Arc::ptr_eq(&first, &store.in_workspace("/w/a").unwrap()));
        store.put(&proposed("m2", "/w/a")).unwrap();
        assert_eq!(store.in_workspace("/w/a").unwrap().len(), 2);

        let other = Connection::open(&path).unwrap();
        other
            .execute("DELETE FROM memories WHERE id = 'm1'", [])
            .unwrap();
        let seen = store.in_workspace("/w/a").unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].id(), "m2");
    }

    #[test]
    fn a_queued_held_action_is_written_by_the_writer_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let store = MemoryStore::open(&path).unwrap();
        let action: Action = serde_json::from_value(serde_json::json!({
            "workspace": "/w/a", "project": null, "role": "agent",
            "tier": "external_side_effect", "verdict": "HOLD", "relaxable": true,
            "commands": [], "destinations": [], "git": null
        }))
        .unwrap();
        store.record_held("r1", Timestamp(5), &action, Vec::new());
        let other = Connection::open(&path).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while other
            .query_row("SELECT count(*) FROM held", [], |r| r.get::<_, i64>(0))
            .unwrap()
            == 0
        {
            assert!(std::time::Instant::now() < deadline, "never written");
            std::thread::sleep(Duration::from_millis(5));
        }
        store.record_held("r2", Timestamp(6), &action, Vec::new());
        assert_eq!(store.held("r2").unwrap(), Some(action.clone()));
        assert_eq!(store.recent_held(10).unwrap().len(), 2);
    }

    #[test]
    fn an_unconfirmed_instruction_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::open(&dir.path().join("memory.db")).unwrap();
        let mut forged = proposed("m1", "/w/a");
        forged.item.use_policy.policy = UsePolicy::CanUseAsInstruction;
        assert!(matches!(store.put(&forged), Err(StoreError::Invalid(_))));
        assert_eq!(store.get("m1").unwrap(), None);
        assert_eq!(forged.review, ReviewStatus::NotRequired);
    }
}

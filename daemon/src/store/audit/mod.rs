//! The audit store: an append-only, hash-chained SQLite event log.
//!
//! # Storage
//!
//! One SQLite file (mode 0600, WAL) with the table `events`; every row is one
//! event, `seq` counts 1, 2, 3, … without gaps. Triggers abort any UPDATE or
//! DELETE on `events`, so changing history needs the triggers dropped first,
//! and then the hash chain shows it. Other components may keep their own
//! tables in the same file ([`AuditStore::open_with_schema`]) and change them
//! atomically with an event ([`AuditStore::append_with`]).
//!
//! The store writes what it is given. Redaction, and digesting raw arguments
//! and output, happen before an [`Event`] reaches it.
//!
//! # Hash chain
//!
//! For the event with sequence number `seq`:
//!
//! ```text
//! hash = lowercase_hex(HMAC-SHA256(key, prev_hash ‖ canonical_record))
//! ```
//!
//! with `key` the 32 bytes of `audit.key` beside the store (mode 0600, made at
//! the first start). Events of a store from before keys, below the
//! `keyed_from` recorded in the `audit_chain` table, use plain
//! `SHA-256(prev_hash ‖ canonical_record)`.
//!
//! where `prev_hash` is the `hash` of event `seq - 1` (64 ASCII `0`s for
//! `seq = 1`), fed to SHA-256 as its 64 ASCII hex characters, and
//! `canonical_record` is the UTF-8 text of one compact JSON object with:
//!
//! - one key per column except `hash` (29 keys, `prev_hash` and `seq`
//!   included), sorted by byte order of the key;
//! - each value exactly as stored: SQL NULL as `null`, INTEGER as a decimal
//!   integer (`-` for negatives, no leading zeros, no exponent), TEXT as a JSON
//!   string. The JSON-valued columns (`argv_redacted`, `rule_ids`,
//!   `credentials`, `detail`) are TEXT and enter as strings holding their
//!   stored text, not re-encoded; `truncated` is INTEGER 0 or 1;
//! - no whitespace outside strings; in strings only `"`, `\` and control
//!   characters U+0000–U+001F are escaped, as `\"`, `\\`, `\b`, `\f`, `\n`,
//!   `\r`, `\t`, or else `\u00XX` with lowercase hex; everything else,
//!   non-ASCII included, is written as raw UTF-8.
//!
//! Python reproduces the record as
//! `json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()`
//! for `row` = the row as a dict without `hash`, and the hash as
//! `hmac.new(key, prev_hash.encode() + record, hashlib.sha256).hexdigest()`.
//!
//! Verification walks from `seq = 1`, checking for each row that `seq` follows
//! on, that `prev_hash` equals the previous row's `hash` and that `hash`
//! recomputes; it also compares the last `seq` with the highest one SQLite
//! ever assigned (`sqlite_sequence`) to notice rows cut from the end.
//!
//! Without the key, a rewritten row cannot be given a valid hash. With it
//! (someone who can read praxisd's state), history is proven unchanged only
//! relative to a head kept elsewhere: the anchor file beside the store
//! (`audit.anchor`, checked at open and in verify), the system log in system
//! mode, or a head printed by `praxis audit anchor` and checked with
//! `praxis audit verify --anchor`.
//!
//! # Writing
//!
//! An append is acknowledged only once the event is as durable as its
//! [`Durability`] asks, so an [`Appended`] is proof the event is in the
//! store; an error means it is not, and the caller must treat the request
//! as HOLD.
//!
//! A NORMAL event without a transaction hook is acknowledged from the
//! append journal (`journal.rs`): under the one lock that assigns `seq`,
//! `ts` and `prev_hash`, the appender hashes its record and writes it as one
//! line to a file beside the store with one write(2). The bytes are then in
//! the kernel and survive a SIGKILL of praxisd, as a WAL commit under
//! `synchronous=NORMAL` does. A mover thread commits journaled events into
//! SQLite in large transactions and empties the journal behind them;
//! opening the store first moves in what a killed praxisd left there. Every
//! read of events waits until SQLite holds all acknowledged ones, so reads
//! see what was acknowledged, as before.
//!
//! Every other append (FULL, with a hook, or while the journal is as far
//! ahead of SQLite as it may run) commits in SQLite before it is
//! acknowledged, after the journaled events not yet there, in groups:
//! whoever leads takes every queued append in one step into one
//! transaction, after waiting up to 0.2 ms for the appenders the last batch
//! answered. An appender that finds nobody leading leads on its own thread
//! (no hand-over to another thread); an async one does so inside
//! `block_in_place`, so the runtime's other tasks move to another thread
//! meanwhile. After a commit the lead passes to a queued blocking appender,
//! or else to a writer thread, which also leads for reads' barriers. Each
//! appender builds its event's stored values and canonical record before it
//! queues it; the leader only fills in `seq`, `ts` and `prev_hash`, hashes
//! and inserts. A FULL commit fsyncs the WAL, which holds every event
//! before it. A second thread moves the WAL into the main file in the
//! background, ten times a second.

mod anchor;
mod ballast;
mod checkpoint;
mod error;
mod event;
mod head;
mod journal;
mod key;
mod read;
mod record;
mod schema;
mod spill;
mod time;
mod verify;
mod writer;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

pub use error::AuditError;
pub use event::{Appended, Durability, Event, EventKind, Maker, StoredEvent};
pub use verify::VerifyReport;
pub use writer::TxOp;

use checkpoint::Checkpointer;
use head::Head;
use journal::{Journal, Journaled};
use read::{Readers, sql_limit};
use record::Unplaced;
use writer::{Group, Guard, Job, Reply, Threads, Work};

/// Handle to the audit store. Cheap to clone; all clones share one writer
/// and one mover thread, which stop (after finishing queued appends and
/// moving the journal into SQLite) when the last clone is dropped.
#[derive(Clone)]
pub struct AuditStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    jobs: Arc<Group>,
    threads: Option<Threads>,
    readers: Readers,
    checkpointer: Option<Checkpointer>,
    /// Why the store can no longer be trusted (deleted, replaced, cut).
    lost: Arc<Mutex<Option<String>>>,
    /// The reserve is released: the filesystem is full.
    space_low: Arc<AtomicBool>,
    /// The chain's key, for verifying.
    chain: key::Chain,
    /// Whether the writer logs each committed head to syslog.
    syslog: Arc<AtomicBool>,
    /// The append journal, which also holds the chain's head. Last, so it
    /// is dropped after every connection to the database (see its `shm`).
    journal: Arc<Journal>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Other connections close first so the writer's is the last one and
        // checkpoints the WAL back into the main file as it closes.
        drop(self.checkpointer.take());
        self.readers.close_idle();
        // Closing the journal ends the mover once SQLite holds its lines;
        // closing the queue ends the writer loop once it is drained.
        self.journal.close();
        let Some(Threads { writer, mover }) = self.threads.take() else {
            return;
        };
        joined(mover, "mover");
        self.jobs.close();
        joined(writer, "writer");
    }
}

/// Waits for one of the store's threads to end, unless it is this one.
fn joined(handle: JoinHandle<()>, name: &str) {
    if handle.thread().id() != thread::current().id() && handle.join().is_err() {
        tracing::error!("audit {name} thread panicked");
    }
}

impl AuditStore {
    /// Opens (creating if needed) the store at `path`: file mode 0600, WAL,
    /// schema, and a check of the chain head the next event will link to.
    pub fn open(path: impl AsRef<Path>) -> Result<AuditStore, AuditError> {
        AuditStore::open_with_schema(path, &[])
    }

    /// Like [`AuditStore::open`], also running each of `extra` (idempotent
    /// schema SQL such as `CREATE TABLE IF NOT EXISTS …`) so other tables live
    /// in the same file and can be changed in an event's transaction.
    pub fn open_with_schema(
        path: impl AsRef<Path>,
        extra: &[&str],
    ) -> Result<AuditStore, AuditError> {
        let path = path.as_ref();
        let mut conn = schema::open_writer(path, &[&[key::SCHEMA], extra].concat())?;
        let io = |source| AuditError::Io {
            path: path.display().to_string(),
            source,
        };
        // A store whose key is gone, whose head does not verify, or that does
        // not hold its anchored head was tampered with or replaced: it is
        // kept as it is, and nothing more is written to it.
        let (chain, head, problem) = match key::Chain::for_writer(&conn, path) {
            Err(why) => (
                key::Chain::for_reader(&conn, path),
                Head::genesis(),
                Some(why),
            ),
            Ok(chain) => match verify::load_head(&conn, &chain) {
                Err(AuditError::HeadBroken { seq, problem }) => (
                    chain,
                    Head::genesis(),
                    Some(format!("the audit chain is broken at seq {seq}: {problem}")),
                ),
                Err(e) => return Err(e),
                Ok(head) => {
                    let problem = match anchor::read(path) {
                        Ok(Some(anchored)) => anchor::check(&conn, &anchored)?,
                        Ok(None) => None,
                        Err(why) => Some(why),
                    };
                    (chain, head, problem)
                }
            },
        };
        if let Some(why) = &problem {
            tracing::error!("{why}; refusing all work until an operator acts");
        }
        // Events a killed praxisd acknowledged from its journal go into
        // SQLite first; a store refusing work keeps its journal as it is.
        let head = match problem {
            None => journal::replay(path, &mut conn, head, &chain)?,
            Some(_) => head,
        };
        let lost = Arc::new(Mutex::new(problem.clone()));
        // Without its reserve the store starts as on a full filesystem.
        let space_low = Arc::new(AtomicBool::new(false));
        if let Err(e) = ballast::ensure(path) {
            tracing::error!("audit reserve not in place ({e}): new work is refused until it is");
            space_low.store(true, Ordering::SeqCst);
        }
        let guard = Guard {
            db: path.to_owned(),
            opened: anchor::identity(path).map_err(io)?,
            lost: Arc::clone(&lost),
            space_low: Arc::clone(&space_low),
            syslog: Arc::new(AtomicBool::new(false)),
            anchor: anchor::open(path).map_err(io)?,
        };
        if problem.is_none() {
            anchor::write(&guard.anchor, &head).map_err(io)?;
        }
        let syslog = Arc::clone(&guard.syslog);
        let journal = Arc::new(Journal::open(
            path,
            guard.opened,
            head,
            chain.clone(),
            Arc::clone(&lost),
            Arc::clone(&space_low),
        )?);
        let checkpointer = Checkpointer::spawn(path)?;
        let verify_chain = chain.clone();
        let (jobs, threads) = writer::spawn(conn, Arc::clone(&journal), guard, chain)?;
        Ok(AuditStore {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                jobs,
                journal,
                threads: Some(threads),
                readers: Readers::new(path),
                checkpointer: Some(checkpointer),
                lost,
                space_low,
                chain: verify_chain,
                syslog,
            }),
        })
    }

    /// Why new work must be refused, if it must: the store cannot be
    /// trusted, or its filesystem is full (the reserve is in use).
    pub fn refusing(&self) -> Option<String> {
        let path = &self.inner.path;
        // Room again: the reserve goes back in place and work resumes.
        if self.inner.space_low.load(Ordering::SeqCst)
            && ballast::free(path) >= 2 * ballast::SIZE
            && ballast::ensure(path).is_ok()
        {
            self.inner.space_low.store(false, Ordering::SeqCst);
            tracing::info!("the audit store's filesystem has room again: reserve restored");
        }
        self.lost().or_else(|| {
            self.inner.space_low.load(Ordering::SeqCst).then(|| {
                format!(
                    "the filesystem of the audit store {} is full: praxisd refuses new work until there is room again",
                    self.inner.path.display()
                )
            })
        })
    }

    /// Keeps `event` in the spill journal beside the store, for an event
    /// (a refusal) that could not be committed; the writer moves it into the
    /// chain with its next batch that commits.
    pub fn spill(&self, event: &Event) -> Result<(), AuditError> {
        spill::append(&self.inner.path, event).map_err(|source| AuditError::Io {
            path: spill::path_of(&self.inner.path).display().to_string(),
            source,
        })
    }

    /// Why the store can no longer be trusted, if it cannot: deleted or
    /// replaced while praxisd ran, or not holding its anchored head.
    pub fn lost(&self) -> Option<String> {
        self.inner
            .lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Appends `event` and blocks until it is committed. Do not call from an
    /// async task; use [`AuditStore::append_async`] there.
    pub fn append(&self, event: Event, durability: Durability) -> Result<Appended, AuditError> {
        self.append_blocking(event, durability, None)
    }

    /// Appends `event` and waits (without blocking the runtime) until it is
    /// committed.
    pub async fn append_async(
        &self,
        event: Event,
        durability: Durability,
    ) -> Result<Appended, AuditError> {
        self.append_awaiting(event, durability, None).await
    }

    /// Appends `event` after running `op` in the same transaction, right
    /// before the event's insert. If `op` returns `Err(reason)` (or panics),
    /// or the insert fails, both are undone and this call returns
    /// [`AuditError::Rejected`] (or the insert's error); other events of the
    /// batch are unaffected. Blocks until committed.
    pub fn append_with(
        &self,
        event: Event,
        durability: Durability,
        op: TxOp,
    ) -> Result<Appended, AuditError> {
        self.append_blocking(event, durability, Some(op))
    }

    /// The async form of [`AuditStore::append_with`].
    pub async fn append_with_async(
        &self,
        event: Event,
        durability: Durability,
        op: TxOp,
    ) -> Result<Appended, AuditError> {
        self.append_awaiting(event, durability, Some(op)).await
    }

    /// Journals `record` if it may be acknowledged from the journal
    /// (NORMAL, no hook) and the journal has room; otherwise hands it back
    /// for the SQLite path. An async caller (`blocking` false) does not wait
    /// for the journal's lock while a SQLite commit holds it (an fsync,
    /// maybe): it queues for the SQLite path and awaits that instead.
    fn journal(
        &self,
        record: Unplaced,
        durability: Durability,
        op: Option<&TxOp>,
        blocking: bool,
    ) -> Journaled {
        if durability != Durability::Normal
            || op.is_some()
            || (!blocking && self.inner.journal.committing())
        {
            return Journaled::Not(record);
        }
        self.inner.journal.append(record)
    }

    fn append_blocking(
        &self,
        event: Event,
        durability: Durability,
        op: Option<TxOp>,
    ) -> Result<Appended, AuditError> {
        let record = match self.journal(Unplaced::of(&event)?, durability, op.as_ref(), true) {
            Journaled::Done(outcome) => return outcome,
            Journaled::Not(record) => record,
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let job = Job {
            record,
            durability,
            op,
            reply: Reply::Blocking(tx),
        };
        self.inner.jobs.append_blocking(job, &rx)
    }

    async fn append_awaiting(
        &self,
        event: Event,
        durability: Durability,
        op: Option<TxOp>,
    ) -> Result<Appended, AuditError> {
        let record = match self.journal(Unplaced::of(&event)?, durability, op.as_ref(), false) {
            Journaled::Done(outcome) => return outcome,
            Journaled::Not(record) => record,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = Job {
            record,
            durability,
            op,
            reply: Reply::Async(tx),
        };
        // On a multi-thread runtime the task may lead: block_in_place hands
        // this worker's other tasks to another thread while SQLite runs.
        let may_lead = tokio::runtime::Handle::try_current().is_ok_and(|runtime| {
            runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        });
        match self.inner.jobs.push(Work::Append(job), may_lead) {
            None => return Err(AuditError::WriterGone),
            Some(writer::Pushed::Lead) => tokio::task::block_in_place(|| self.inner.jobs.lead()),
            Some(writer::Pushed::Wait) => {}
        }
        committed(rx).await
    }

    /// Hands `events` to the writer in order, all at once, so that it usually
    /// commits them in one transaction: an action's record and what came with
    /// it cost one commit, not one each. None is known committed before
    /// [`Queued::committed`] says so.
    pub fn queue_all(&self, events: Vec<(Event, Durability)>) -> Queued {
        // Once one event takes the SQLite path the rest follow it, so the
        // list keeps its order in the chain.
        let mut queuing = false;
        Queued(
            events
                .into_iter()
                .map(|(event, durability)| {
                    let mut record = Unplaced::of(&event)?;
                    if !queuing {
                        match self.journal(record, durability, None, false) {
                            Journaled::Done(outcome) => return Ok(answered(outcome)),
                            Journaled::Not(handed_back) => record = handed_back,
                        }
                    }
                    queuing = true;
                    self.enqueue(record, durability)
                })
                .collect(),
        )
    }

    /// Queues an append; the receiver answers once it is committed.
    fn enqueue(&self, record: Unplaced, durability: Durability) -> Result<Committed, AuditError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.hand_over(Work::Append(Job {
            record,
            durability,
            op: None,
            reply: Reply::Async(tx),
        }))?;
        Ok(rx)
    }

    /// Queues work the writer thread leads for when nobody leads.
    fn hand_over(&self, work: Work) -> Result<(), AuditError> {
        match self.inner.jobs.push(work, false) {
            Some(writer::Pushed::Wait | writer::Pushed::Lead) => Ok(()),
            None => Err(AuditError::WriterGone),
        }
    }

    /// Waits until every append queued before this call is committed or has
    /// failed, so that a read after it sees them: an answer can go out
    /// before its record commits (see `Queued`).
    pub async fn settled(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.hand_over(Work::Barrier(tx)).is_ok() {
            // A writer gone has nothing left to commit.
            let _ = rx.await;
        }
    }

    /// The readers, once SQLite holds every event acknowledged so far.
    fn reading(&self) -> &Readers {
        self.inner.journal.settled();
        &self.inner.readers
    }

    /// Walks the whole chain and names the first broken `seq`, if any. Also
    /// catches rows removed behind the head this handle committed.
    pub fn verify(&self) -> Result<VerifyReport, AuditError> {
        if let Some(why) = self.lost() {
            return Ok(VerifyReport {
                ok: false,
                events_checked: 0,
                first_broken: None,
                problem: Some(why),
            });
        }
        // The acknowledged head, once SQLite holds it and before the
        // snapshot starts, so the snapshot is guaranteed to contain it.
        let committed = self.inner.journal.settled();
        self.inner
            .readers
            .with(|conn| verify::verify(conn, Some(&committed), &self.inner.chain))
    }

    /// The head last committed: `(seq, hash)`, the anchor to keep elsewhere.
    pub fn head(&self) -> (i64, String) {
        let head = self.inner.journal.head();
        (head.seq, head.hash)
    }

    /// Waits until the database file holds every event acknowledged before
    /// this call, and returns that head: what an outside reader of the file
    /// (or a copy of it) sees from then on. The store's own reads wait for
    /// this themselves.
    pub fn in_file(&self) -> (i64, String) {
        let head = self.inner.journal.settled();
        (head.seq, head.hash)
    }

    /// [`AuditStore::verify`], then that the chain holds event `seq` with
    /// `hash`: a head kept outside this host, so a chain rewritten with the
    /// key, or cut behind that head, fails too.
    pub fn verify_against(&self, seq: i64, hash: &str) -> Result<VerifyReport, AuditError> {
        let report = self.verify()?;
        if !report.ok {
            return Ok(report);
        }
        let outside = Head {
            seq,
            hash: hash.to_owned(),
        };
        let problem = self
            .reading()
            .with(|conn| anchor::check(conn, &outside).map_err(AuditError::from))?;
        Ok(match problem {
            Some(problem) => VerifyReport {
                ok: false,
                first_broken: Some(seq),
                problem: Some(problem.replace("its anchor", "the given anchor")),
                ..report
            },
            None => report,
        })
    }

    /// Also writes each committed head to the system log (system mode), so
    /// a copy of the anchor lives outside the state dir.
    pub fn anchor_to_syslog(&self) {
        self.inner.syslog.store(true, Ordering::SeqCst);
    }

    /// The last `n` events, oldest first.
    pub fn tail(&self, n: usize) -> Result<Vec<StoredEvent>, AuditError> {
        let mut events = self
            .reading()
            .with(|conn| read::events(conn, "ORDER BY seq DESC LIMIT ?1", [sql_limit(n)]))?;
        events.reverse();
        Ok(events)
    }

    /// Up to `limit` events with `seq` greater than `seq`, oldest first: the
    /// polling step of `tail -f` and `watch`.
    pub fn after(&self, seq: i64, limit: usize) -> Result<Vec<StoredEvent>, AuditError> {
        self.reading().with(|conn| {
            read::events(
                conn,
                "WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                [seq, sql_limit(limit)],
            )
        })
    }

    /// Events at or after the RFC 3339 time `ts` (any offset, or a bare date).
    pub fn since(&self, ts: &str) -> Result<Vec<StoredEvent>, AuditError> {
        let ts = time::normalize(ts)?;
        self.reading()
            .with(|conn| read::events(conn, "WHERE ts >= ?1 ORDER BY seq", [&ts]))
    }

    /// Every event of one request, in order.
    pub fn by_request(&self, request_id: &str) -> Result<Vec<StoredEvent>, AuditError> {
        self.reading()
            .with(|conn| read::events(conn, "WHERE request_id = ?1 ORDER BY seq", [request_id]))
    }

    /// Every event of one agent session (any runtime), in order: the
    /// trajectory `praxis session show` draws.
    pub fn by_session(&self, session: &str) -> Result<Vec<StoredEvent>, AuditError> {
        self.reading()
            .with(|conn| read::events(conn, "WHERE session = ?1 ORDER BY seq", [session]))
    }

    /// The one request id that starts with `prefix`: `Ok(None)` when none
    /// does, `Err` naming two when it is ambiguous.
    pub fn request_with_prefix(
        &self,
        prefix: &str,
    ) -> Result<Result<Option<String>, Vec<String>>, AuditError> {
        let ids: Vec<String> = self.reading().with(|conn| {
            let mut stmt = conn.prepare(
                "SELECT DISTINCT request_id FROM events WHERE request_id >= ?1 AND request_id < ?1 || char(1114111) LIMIT 2",
            )?;
            let rows = stmt.query_map([prefix], |row| row.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<String>>>().map_err(AuditError::from)
        })?;
        Ok(match ids.len() {
            0 => Ok(None),
            1 => Ok(ids.into_iter().next()),
            _ => Err(ids),
        })
    }

    /// The other requests tied to `request_id` by an approval: the runs an
    /// approval of it allowed (or, for a run, the held request it approved).
    pub fn linked_requests(&self, request_id: &str) -> Result<Vec<String>, AuditError> {
        self.reading().with(|conn| {
            let mut stmt = conn.prepare(
                "SELECT DISTINCT o.request_id FROM events e JOIN events o ON o.approval_id = e.approval_id \
                 WHERE e.request_id = ?1 AND e.approval_id IS NOT NULL AND o.request_id IS NOT NULL \
                 AND o.request_id != ?1 ORDER BY o.seq",
            )?;
            let rows = stmt.query_map([request_id], |row| row.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<String>>>().map_err(AuditError::from)
        })
    }

    /// Number of events per kind.
    pub fn count_by_kind(&self) -> Result<BTreeMap<String, u64>, AuditError> {
        self.reading().with(|conn| read::count_by(conn, "kind", ""))
    }

    /// Number of `decided` events per decision.
    pub fn count_by_decision(&self) -> Result<BTreeMap<String, u64>, AuditError> {
        self.reading()
            .with(|conn| read::count_by(conn, "decision", "AND kind = 'decided'"))
    }

    /// Writes events (all, or those at or after `since`) to `out` as JSON
    /// Lines: one object per event, keys named as the columns, JSON-valued
    /// columns as JSON. Returns the number of lines.
    pub fn export_jsonl(
        &self,
        since: Option<&str>,
        out: &mut dyn Write,
    ) -> Result<u64, AuditError> {
        let since = since.map(time::normalize).transpose()?;
        self.reading()
            .with(|conn| read::export_jsonl(conn, since.as_deref(), out))
    }

    /// Runs a read-only query on the store's file over a table added with
    /// [`AuditStore::open_with_schema`], which only SQLite commits change.
    /// It does not wait for the append journal (requests read these tables
    /// on their way to a decision), so `events` may lag what was
    /// acknowledged: read events with the methods above.
    pub fn read<T>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Result<T, AuditError> {
        self.inner
            .readers
            .with(|conn| f(conn).map_err(AuditError::from))
    }
}

/// Verifies the store at `path` without a running daemon, opening it
/// read-only.
pub fn verify_file(path: impl AsRef<Path>) -> Result<VerifyReport, AuditError> {
    let conn = schema::open_reader(path.as_ref())?;
    let chain = key::Chain::for_reader(&conn, path.as_ref());
    let report = verify::verify(&conn, None, &chain)?;
    if !report.ok {
        return Ok(report);
    }
    // Events acknowledged from the journal and not yet in SQLite (praxisd
    // stopped or killed before it moved them) go on from the file's head.
    let head = verify::load_head(&conn, &chain)?;
    let journaled = journal::check(path.as_ref(), head, &chain)?;
    let report = VerifyReport {
        events_checked: report.events_checked + journaled.continuing,
        ..report
    };
    if let Some((seq, problem)) = journaled.broken {
        return Ok(VerifyReport {
            ok: false,
            first_broken: Some(seq),
            problem: Some(problem),
            ..report
        });
    }
    // A chain consistent in itself may still be cut or rewritten as a whole:
    // the anchor beside the file tells.
    let anchored = anchor::read(path.as_ref()).map_err(AuditError::Lost)?;
    match anchored
        .map(|head| anchor::check(&conn, &head))
        .transpose()?
        .flatten()
    {
        Some(problem) => Ok(VerifyReport {
            ok: false,
            problem: Some(problem),
            ..report
        }),
        None => Ok(report),
    }
}

/// Where the writer answers for one queued append.
type Committed = tokio::sync::oneshot::Receiver<Result<Appended, AuditError>>;

/// A receiver already holding `outcome`.
fn answered(outcome: Result<Appended, AuditError>) -> Committed {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // The receiver is right here: the send cannot fail.
    let _ = tx.send(outcome);
    rx
}

async fn committed(job: Committed) -> Result<Appended, AuditError> {
    job.await.map_err(|_| AuditError::WriterGone)?
}

/// Appends handed to the writer by [`AuditStore::queue_all`], in order.
#[must_use = "an append counts only once its commit is known"]
pub struct Queued(Vec<Result<Committed, AuditError>>);

impl Queued {
    /// Waits (without blocking the runtime) until every append is committed;
    /// one outcome per event, in order.
    pub async fn committed(self) -> Vec<Result<Appended, AuditError>> {
        let mut outcomes = Vec::with_capacity(self.0.len());
        for job in self.0 {
            outcomes.push(match job {
                Ok(job) => committed(job).await,
                Err(e) => Err(e),
            });
        }
        outcomes
    }
}

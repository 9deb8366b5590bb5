//! The single writer thread and its group commit.
//!
//! Appenders build their event's record, put a [`Job`] on the [`Queue`] and
//! wait. The thread sleeps until a job is queued, then yields until as many
//! are queued as its last batch answered (for at most [`LINGER`]), takes them all
//! at once, and writes them in one IMMEDIATE transaction: chain computed in
//! queue order, one COMMIT (one fsync under `synchronous=FULL`) for the whole
//! batch, then each waiter gets its answer. Nothing is acknowledged before
//! its COMMIT returned.

use std::iter;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rusqlite::types::Value;
use rusqlite::{Connection, Transaction, TransactionBehavior, params_from_iter};

use std::path::PathBuf;

use std::sync::atomic::{AtomicBool, Ordering};

use super::event::{Appended, Durability};
use super::head::Head;
use super::key::Chain;
use super::record::{COLUMNS, Unplaced};
use super::{AuditError, time, verify};
use super::{anchor, ballast, spill};

/// Work run inside the batch transaction right before its event is inserted;
/// an `Err` rejects that event alone.
pub type TxOp = Box<dyn FnOnce(&Transaction<'_>) -> Result<(), String> + Send>;

/// How long the writer waits for the appenders its last batch answered
/// before committing without them: about what a woken thread takes to come
/// back on a busy machine. After a batch of one nobody waits, so an
/// appender alone pays nothing.
const LINGER: Duration = Duration::from_micros(200);

/// Upper bound on events per transaction, so one waiter is never held behind
/// an unbounded queue.
const MAX_BATCH: usize = 4096;

static INSERT: LazyLock<String> = LazyLock::new(|| {
    let placeholders: Vec<String> = (1..=COLUMNS.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO events ({}) VALUES ({})",
        COLUMNS.join(", "),
        placeholders.join(", ")
    )
});

/// Where the answer for one append goes.
pub(crate) enum Reply {
    Blocking(SyncSender<Result<Appended, AuditError>>),
    Async(tokio::sync::oneshot::Sender<Result<Appended, AuditError>>),
}

impl Reply {
    fn send(self, outcome: Result<Appended, AuditError>) {
        // A waiter that went away (cancelled task) needs no answer; its
        // event's fate is already decided and recorded.
        match self {
            Reply::Blocking(tx) => drop(tx.send(outcome)),
            Reply::Async(tx) => drop(tx.send(outcome)),
        }
    }
}

/// What the writer is handed, in order.
pub(crate) enum Work {
    Append(Job),
    /// Answered once every append handed over before it is committed (or
    /// failed): what a read waits for to see them.
    Barrier(tokio::sync::oneshot::Sender<()>),
}

/// One append request, its record already built by the appender.
pub(crate) struct Job {
    pub record: Unplaced,
    pub durability: Durability,
    pub op: Option<TxOp>,
    pub reply: Reply,
}

/// The hand-over from appenders to the writer: one list under one lock. An
/// append wakes the writer only if it sleeps on an empty queue, so a batch
/// costs the writer at most one wake-up, not one per append, and it takes
/// the whole batch in one step.
pub(crate) struct Queue {
    pending: Mutex<Pending>,
    ready: Condvar,
}

#[derive(Default)]
struct Pending {
    work: Vec<Work>,
    /// The writer sleeps until an item is queued.
    asleep: bool,
    /// A barrier is queued: the writer must not linger.
    barrier: bool,
    /// The store was dropped or the writer is gone: nothing more is taken.
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `work`; false once the writer is gone.
    pub(crate) fn push(&self, work: Work) -> bool {
        let mut pending = self.lock();
        if pending.closed {
            return false;
        }
        pending.barrier |= matches!(work, Work::Barrier(_));
        pending.work.push(work);
        if pending.asleep {
            pending.asleep = false;
            self.ready.notify_one();
        }
        true
    }

    /// No more work: the writer finishes what is queued and stops.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// Waits for a first item, then up to `linger` for `wanted` items in
    /// all, and takes up to [`MAX_BATCH`]. Empty once closed and drained.
    fn take(&self, wanted: usize, linger: Duration) -> Vec<Work> {
        let mut pending = self.lock();
        while pending.work.is_empty() && !pending.closed {
            pending.asleep = true;
            pending = self
                .ready
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        pending.asleep = false;
        let deadline = Instant::now() + linger;
        let wanted = wanted.min(MAX_BATCH);
        // The writer yields its core to the appenders meanwhile rather than
        // sleeping: they come back within microseconds when a core is free,
        // and a sleeping writer would need a wake-up of its own.
        while pending.work.len() < wanted
            && !pending.barrier
            && !pending.closed
            && Instant::now() < deadline
        {
            drop(pending);
            thread::yield_now();
            pending = self.lock();
        }
        if pending.work.len() <= MAX_BATCH {
            pending.barrier = false;
            return std::mem::take(&mut pending.work);
        }
        let rest = pending.work.split_off(MAX_BATCH);
        pending.barrier = rest.iter().any(|w| matches!(w, Work::Barrier(_)));
        std::mem::replace(&mut pending.work, rest)
    }
}

/// Closes the queue when the writer stops, even by a panic: what is still
/// queued is dropped, so its waiters learn the writer is gone.
struct Closing(Arc<Queue>);

impl Drop for Closing {
    fn drop(&mut self) {
        let mut pending = self.0.lock();
        pending.closed = true;
        pending.work.clear();
    }
}

/// Starts the writer thread on `conn`, chaining onto `head`. `shared` mirrors
/// the committed head for readers.
pub(crate) fn spawn(
    conn: Connection,
    head: Head,
    shared: Arc<Mutex<Head>>,
    guard: Guard,
    chain: Chain,
) -> Result<(Arc<Queue>, JoinHandle<()>), AuditError> {
    let queue = Arc::new(Queue {
        pending: Mutex::new(Pending::default()),
        ready: Condvar::new(),
    });
    let closing = Closing(Arc::clone(&queue));
    let writer = Writer {
        conn,
        head,
        shared,
        synchronous: Durability::Normal,
        guard,
        chain,
    };
    let handle = thread::Builder::new()
        .name("praxis-audit-writer".into())
        .spawn(move || writer.run(&closing))
        .map_err(|source| AuditError::Io {
            path: "audit writer thread".into(),
            source,
        })?;
    Ok((queue, handle))
}

/// What one turn of the writer took from the queue.
#[derive(Default)]
struct Gathered {
    batch: Vec<Job>,
    barriers: Vec<tokio::sync::oneshot::Sender<()>>,
}

impl Gathered {
    fn take(&mut self, item: Work) {
        match item {
            Work::Append(job) => self.batch.push(job),
            Work::Barrier(waiter) => self.barriers.push(waiter),
        }
    }
}

struct Writer {
    conn: Connection,
    head: Head,
    shared: Arc<Mutex<Head>>,
    /// The `synchronous` level the connection is currently set to.
    synchronous: Durability,
    guard: Guard,
    chain: Chain,
}

/// What keeps the store honest between commits: the file the writer opened,
/// its anchor, and (once found) why it can no longer be trusted.
pub(crate) struct Guard {
    pub db: PathBuf,
    pub opened: (u64, u64),
    /// Set for good once the store was deleted, replaced or cut: every later
    /// append is refused with it, until an operator acts and praxisd restarts.
    pub lost: Arc<Mutex<Option<String>>>,
    /// The reserve was released: the filesystem is full, new work is refused
    /// until the reserve fits again.
    pub space_low: Arc<AtomicBool>,
    /// Log each committed head to syslog too (system mode).
    pub syslog: Arc<AtomicBool>,
    /// `audit.anchor`, rewritten after every batch.
    pub anchor: std::fs::File,
}

impl Guard {
    fn lost(&self) -> Option<String> {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Checks the file is still the one opened; marks the store lost if not.
    fn check(&self) -> Option<String> {
        if let Some(why) = self.lost() {
            return Some(why);
        }
        let why = anchor::still_there(&self.db, self.opened)?;
        tracing::error!("{why}; refusing all work until an operator acts");
        *self.lost.lock().unwrap_or_else(PoisonError::into_inner) = Some(why.clone());
        Some(why)
    }
}

impl Writer {
    fn run(mut self, queue: &Closing) {
        // Appends answered by the last batch: their appenders are usually
        // about to append again, and waiting a moment for them lets their
        // appends share this commit instead of each paying one of its own.
        let mut returning = 0;
        loop {
            let work = queue.0.take(returning, LINGER);
            if work.is_empty() {
                return;
            }
            let mut gathered = Gathered::default();
            work.into_iter().for_each(|item| gathered.take(item));
            let Gathered { batch, barriers } = gathered;
            returning = batch.len();
            if !batch.is_empty() {
                self.commit(batch);
            }
            for waiter in barriers {
                // A reader that went away needs no answer.
                let _ = waiter.send(());
            }
        }
    }

    fn commit(&mut self, batch: Vec<Job>) {
        let durability = batch
            .iter()
            .map(|job| job.durability)
            .max()
            .unwrap_or(Durability::Normal);
        let (replies, work): (Vec<Reply>, Vec<(Unplaced, Option<TxOp>)>) = batch
            .into_iter()
            .map(|job| (job.reply, (job.record, job.op)))
            .unzip();
        // Written to a deleted or replaced file, an event would be lost.
        if let Some(why) = self.guard.check() {
            for reply in replies {
                reply.send(Err(AuditError::Lost(why.clone())));
            }
            return;
        }
        let db = self.guard.db.clone();
        // Nearly full: use the reserve now rather than fail this batch.
        if ballast::free(&db) < ballast::SIZE / 2 {
            self.release_reserve();
        }
        let spilled = spill::take(&db).unwrap_or_else(|e| {
            tracing::error!("audit spill journal unreadable: {e}");
            None
        });
        let replays: Vec<(Unplaced, Option<TxOp>)> = spilled
            .iter()
            .flat_map(|t| t.events.iter())
            .filter_map(|event| match Unplaced::of(event) {
                Ok(record) => Some((record, None)),
                Err(e) => {
                    tracing::error!("spilled audit event dropped: {e}");
                    None
                }
            })
            .collect();
        let replayed = replays.len();
        // Events without a transaction hook can be written again if the
        // filesystem fills under this batch and the reserve is released.
        let hooked: Vec<bool> = work.iter().map(|(_, op)| op.is_some()).collect();
        let mut work: Vec<(Unplaced, Option<TxOp>)> = replays.into_iter().chain(work).collect();
        let mut result = self
            .set_synchronous(durability)
            .and_then(|()| write_batch(&mut self.conn, &self.head, &mut work, &self.chain));
        if matches!(&result, Err(e) if disk_full(e)) && self.release_reserve() {
            self.reload_head();
            let mut retry: Vec<(Unplaced, Option<TxOp>)> = work
                .into_iter()
                .skip(replayed)
                .zip(&hooked)
                .filter(|(_, hooked)| !**hooked)
                .map(|((record, _), _)| (record, None))
                .collect();
            result = write_batch(&mut self.conn, &self.head, &mut retry, &self.chain).map(
                |(outcomes, head)| {
                    let mut retried = outcomes.into_iter();
                    let lost = || {
                        Err(AuditError::Commit(
                            "the filesystem filled during the batch".into(),
                        ))
                    };
                    let outcomes = hooked
                        .iter()
                        .map(|&hooked| match hooked {
                            false => retried.next().unwrap_or_else(lost),
                            true => lost(),
                        })
                        .collect();
                    (outcomes, head)
                },
            );
            // The spilled events were not in the retry: they stay spilled.
            return self.answer(result, replies, None, 0);
        }
        self.answer(result, replies, spilled, replayed);
    }

    /// Gives back the reserve; true if there was one to give.
    fn release_reserve(&self) -> bool {
        let released = ballast::release(&self.guard.db);
        if released {
            self.guard.space_low.store(true, Ordering::SeqCst);
            tracing::error!(
                "the audit store's filesystem is full: reserve released, new work refused"
            );
        }
        released
    }

    fn reload_head(&mut self) {
        match verify::load_head(&self.conn, &self.chain) {
            Ok(head) => self.head = head,
            Err(e) => tracing::error!(error = %e, "audit head unreadable after failed batch"),
        }
    }

    /// Hands each waiter its outcome; the first `replayed` outcomes are the
    /// spill journal's, which is emptied once they are in.
    fn answer(
        &mut self,
        result: Result<(Vec<Result<Appended, AuditError>>, Head), AuditError>,
        replies: Vec<Reply>,
        spilled: Option<spill::Taken>,
        replayed: usize,
    ) {
        match result {
            Ok((outcomes, head)) => {
                self.head = head;
                *self.shared.lock().unwrap_or_else(PoisonError::into_inner) = self.head.clone();
                if let Err(e) = anchor::write(&self.guard.anchor, &self.head) {
                    tracing::error!("audit anchor not written: {e}");
                }
                if self.guard.syslog.load(Ordering::Relaxed) {
                    anchor::to_syslog(&self.head);
                }
                if let Some(taken) = spilled {
                    tracing::warn!("{replayed} spilled audit event(s) moved into the chain");
                    taken.done();
                }
                for (reply, outcome) in replies.into_iter().zip(outcomes.into_iter().skip(replayed))
                {
                    reply.send(outcome);
                }
            }
            Err(error) => {
                let message = error.to_string();
                tracing::error!(error = %message, "audit batch not committed");
                // The transaction rolled back; re-read the tip in case SQLite
                // had already ended it on its own.
                self.reload_head();
                for reply in replies {
                    reply.send(Err(AuditError::Commit(message.clone())));
                }
            }
        }
    }

    fn set_synchronous(&mut self, durability: Durability) -> Result<(), AuditError> {
        if self.synchronous != durability {
            let level = match durability {
                Durability::Full => "FULL",
                Durability::Normal => "NORMAL",
            };
            self.conn.pragma_update(None, "synchronous", level)?;
            self.synchronous = durability;
        }
        Ok(())
    }
}

/// Whether the filesystem under the store is full.
fn disk_full(e: &AuditError) -> bool {
    matches!(e, AuditError::Sqlite(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::DiskFull)
}

/// Writes one batch in one transaction. The outer error aborts the whole
/// batch; inner errors reject single events. Hooks are taken as they run;
/// the events stay, for a retry.
fn write_batch(
    conn: &mut Connection,
    head: &Head,
    work: &mut [(Unplaced, Option<TxOp>)],
    chain: &Chain,
) -> Result<(Vec<Result<Appended, AuditError>>, Head), AuditError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // One commit, one time: the events of a batch are written together.
    let ts = time::now();
    let mut tip = head.clone();
    let mut outcomes = Vec::with_capacity(work.len());
    for (record, op) in work.iter_mut() {
        let outcome = match op.take() {
            None => insert(&tx, &tip, record, &ts, chain),
            Some(op) => with_savepoint(&tx, &tip, record, &ts, op, chain)?,
        };
        if let Ok(appended) = &outcome {
            tip = Head {
                seq: appended.seq,
                hash: appended.hash.clone(),
            }
        }
        // Some failures (disk full, I/O) make SQLite roll back the whole
        // transaction; later inserts would then autocommit one by one.
        if tx.is_autocommit()
            && let Err(e) = outcome
        {
            return Err(e);
        }
        outcomes.push(outcome);
    }
    tx.commit()?;
    Ok((outcomes, tip))
}

/// Runs `op` and inserts `event` under a savepoint, so a failure of either
/// undoes both and leaves the rest of the batch alone.
fn with_savepoint(
    tx: &Transaction<'_>,
    tip: &Head,
    record: &Unplaced,
    ts: &str,
    op: TxOp,
    chain: &Chain,
) -> Result<Result<Appended, AuditError>, AuditError> {
    tx.execute_batch("SAVEPOINT audit_event")?;
    let outcome = match panic::catch_unwind(AssertUnwindSafe(|| op(tx))) {
        Ok(Ok(())) => insert(tx, tip, record, ts, chain),
        Ok(Err(reason)) => Err(AuditError::Rejected(reason)),
        Err(_) => Err(AuditError::Rejected("transaction hook panicked".into())),
    };
    if outcome.is_err() {
        tx.execute_batch("ROLLBACK TO audit_event")?;
    }
    tx.execute_batch("RELEASE audit_event")?;
    Ok(outcome)
}

/// Chains `record` onto `tip` and inserts it.
fn insert(
    tx: &Transaction<'_>,
    tip: &Head,
    record: &Unplaced,
    ts: &str,
    chain: &Chain,
) -> Result<Appended, AuditError> {
    let seq = tip.seq + 1;
    let corrupt = |problem| AuditError::Corrupt { seq, problem };
    let placed = record.place(seq, ts, &tip.hash).map_err(corrupt)?;
    let hash = chain
        .hash(seq, &tip.hash, &placed.canonical)
        .map_err(corrupt)?;
    let hash_value = Value::Text(hash.clone());
    tx.prepare_cached(&INSERT)?.execute(params_from_iter(
        placed.values().chain(iter::once(&hash_value)),
    ))?;
    Ok(Appended {
        seq,
        ts: ts.to_owned(),
        hash,
    })
}

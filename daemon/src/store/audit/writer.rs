//! The SQLite writer: its group commit, and the mover that brings the
//! append journal's events into SQLite.
//!
//! Appends that SQLite must hold before they are acknowledged (FULL ones,
//! those with a transaction hook, and any while the journal is full) put a
//! [`Job`] on the [`Group`]'s queue and wait, unless nobody leads: then the
//! appender leads. The leader yields until as many are queued as the last
//! batch answered (for at most [`LINGER`]), takes them all at once, and
//! writes them in one IMMEDIATE transaction, after every journaled event
//! SQLite does not hold yet: chain computed in queue order under the
//! journal's lock, one COMMIT (one fsync under `synchronous=FULL`) for the
//! whole batch, then each waiter gets its answer and the lead passes on.
//! Nothing on this path is acknowledged before its COMMIT returned.
//!
//! The mover thread commits journaled events on its own whenever some wait,
//! without the journal's lock, so journaled appends go on meanwhile.

use std::iter;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rusqlite::types::Value;
use rusqlite::{Connection, Transaction, TransactionBehavior, params_from_iter};

use std::path::PathBuf;

use std::sync::atomic::{AtomicBool, Ordering};

use super::journal::{Ahead, Journal, Row};

use super::error::AuditError;
use super::event::{Appended, Durability};
use super::head::Head;
use super::key::Chain;
use super::record::{INSERT, Unplaced};
use super::time;
use super::{anchor, ballast, spill};

/// Work run inside the batch transaction right before its event is inserted;
/// an `Err` rejects that event alone.
pub type TxOp = Box<dyn FnOnce(&Transaction<'_>) -> Result<(), String> + Send>;

/// How long the leader waits for the appenders the last batch answered
/// before committing without them: about what a woken thread takes to come
/// back on a busy machine. After a batch of one nobody waits, so an
/// appender alone pays nothing.
const LINGER: Duration = Duration::from_micros(200);

/// Bytes written between two checks of the free space: far below half the
/// reserve, which the check keeps free.
const FREE_CHECK_BYTES: u64 = ballast::SIZE / 8;

/// What a commit writes besides its records, at most: its WAL pages for the
/// indexes, `sqlite_sequence` and the commit frame.
const BATCH_BYTES: u64 = 16 * 4096;

/// Bytes a record costs in the WAL per byte of its canonical text: the
/// row, its index entries and page slack.
const WRITE_FACTOR: u64 = 4;

/// Upper bound on events per transaction, so one waiter is never held behind
/// an unbounded queue.
const MAX_BATCH: usize = 4096;

/// How long the mover lets journaled lines gather before it commits them,
/// unless a read wants them sooner: long enough that a short command's
/// intent and outcome go into SQLite together once it is done, not beside
/// its start and its report, where the commit would take a core from them.
const MOVE_LINGER: Duration = Duration::from_millis(20);

/// How often the mover looks for journaled lines when none woke it: what
/// an outside reader of the database may lag behind, at most, besides
/// [`MOVE_LINGER`] and the commit.
const MOVE_EVERY: Duration = Duration::from_millis(250);

/// How long the mover waits before it tries again after a failed commit.
const MOVE_RETRY: Duration = Duration::from_millis(100);

/// What a blocking appender hears while it waits: its outcome, or that the
/// lead passed to it and it commits the queue itself.
pub(crate) enum Answer {
    Done(Result<Appended, AuditError>),
    Lead,
}

/// Where the answer for one append goes.
pub(crate) enum Reply {
    Blocking(SyncSender<Answer>),
    Async(tokio::sync::oneshot::Sender<Result<Appended, AuditError>>),
}

impl Reply {
    fn send(self, outcome: Result<Appended, AuditError>) {
        // A waiter that went away (cancelled task) needs no answer; its
        // event's fate is already decided and recorded.
        match self {
            Reply::Blocking(tx) => drop(tx.send(Answer::Done(outcome))),
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

/// The group commit: one queue under one lock, and the write connection
/// that whoever holds the lead commits it with. A blocking appender that
/// finds nobody leading leads itself: it takes the queue and commits it on
/// its own thread, with no hand-over to another thread; the others wait
/// for the COMMIT that holds their event. An async appender on a
/// multi-thread runtime leads the same way inside `block_in_place`, which
/// hands its worker's other tasks to another thread meanwhile. After a
/// commit the lead passes to a blocking appender still queued, or else to
/// the writer thread, which also leads for barriers and for async appends
/// elsewhere.
pub(crate) struct Group {
    pending: Mutex<Pending>,
    /// Wakes the writer thread when the lead is its.
    ready: Condvar,
    /// Locked only by the lead's holder, so never contended.
    writer: Mutex<Writer>,
}

#[derive(Default)]
struct Pending {
    work: Vec<Work>,
    /// Someone holds the lead: only they take and commit the queue.
    leading: bool,
    /// The lead is the writer thread's.
    writer_turn: bool,
    /// Appends answered by the last batch: their appenders are usually
    /// about to append again, and waiting a moment for them lets their
    /// appends share the next commit instead of each paying one of its own.
    returning: usize,
    /// The store was dropped or the writer is gone: nothing more is taken.
    closed: bool,
}

/// What a pushed append does next.
#[must_use]
pub(crate) enum Pushed {
    /// Nobody led: the caller leads, taking and committing the queue.
    Lead,
    /// Someone leads: the caller waits for its answer.
    Wait,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `work`; `None` once the writer is gone. A caller that may lead
    /// (a blocking appender) is told to when nobody does; otherwise the
    /// writer thread is woken to lead.
    pub(crate) fn push(&self, work: Work, may_lead: bool) -> Option<Pushed> {
        let mut pending = self.lock();
        if pending.closed {
            return None;
        }
        pending.work.push(work);
        if pending.leading {
            return Some(Pushed::Wait);
        }
        pending.leading = true;
        if may_lead {
            return Some(Pushed::Lead);
        }
        pending.writer_turn = true;
        self.ready.notify_one();
        Some(Pushed::Wait)
    }

    /// Appends as a blocking caller: leads when told to, and returns the
    /// outcome once the COMMIT that holds the event returned.
    pub(crate) fn append_blocking(
        &self,
        job: Job,
        answer: &Receiver<Answer>,
    ) -> Result<Appended, AuditError> {
        match self.push(Work::Append(job), true) {
            None => return Err(AuditError::WriterGone),
            Some(Pushed::Lead) => self.lead(),
            Some(Pushed::Wait) => {}
        }
        loop {
            match answer.recv() {
                Ok(Answer::Done(outcome)) => return outcome,
                Ok(Answer::Lead) => self.lead(),
                Err(_) => return Err(AuditError::WriterGone),
            }
        }
    }

    /// No more work: the writer finishes what is queued and stops.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// Commits one batch from the queue, then passes the lead on. Only the
    /// lead's holder calls it.
    pub(crate) fn lead(&self) {
        let passing = PassOn(self);
        let work = self.take();
        let answered = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .commit_work(work);
        self.lock().returning = answered;
        drop(passing);
    }

    /// Waits up to [`LINGER`] for as many items as the last batch answered,
    /// and takes up to [`MAX_BATCH`].
    fn take(&self) -> Vec<Work> {
        let mut pending = self.lock();
        let deadline = Instant::now() + LINGER;
        let wanted = pending.returning.min(MAX_BATCH);
        // The leader yields its core to the appenders meanwhile rather than
        // sleeping: they come back within microseconds when a core is free,
        // and a sleeping leader would need a wake-up of its own.
        while pending.work.len() < wanted
            && !pending.work.iter().any(|w| matches!(w, Work::Barrier(_)))
            && !pending.closed
            && Instant::now() < deadline
        {
            drop(pending);
            thread::yield_now();
            pending = self.lock();
        }
        if pending.work.len() <= MAX_BATCH {
            return std::mem::take(&mut pending.work);
        }
        let rest = pending.work.split_off(MAX_BATCH);
        std::mem::replace(&mut pending.work, rest)
    }

    /// After a commit: the lead passes to a blocking appender still queued,
    /// else to the writer thread, else to nobody.
    fn pass_on(&self) {
        let mut pending = self.lock();
        if pending.work.is_empty() {
            pending.leading = false;
            // A closed queue now drained: the writer thread may stop.
            if pending.closed {
                self.ready.notify_one();
            }
            return;
        }
        let handed = pending.work.iter().any(|work| match work {
            Work::Append(Job {
                reply: Reply::Blocking(tx),
                ..
            }) => tx.try_send(Answer::Lead).is_ok(),
            _ => false,
        });
        if !handed {
            pending.writer_turn = true;
            self.ready.notify_one();
        }
    }

    /// The writer thread: leads whenever the lead is its, until the queue is
    /// closed and drained.
    fn serve(&self) {
        loop {
            let mut pending = self.lock();
            loop {
                if pending.writer_turn {
                    pending.writer_turn = false;
                    break;
                }
                if pending.closed && !pending.leading {
                    if pending.work.is_empty() {
                        return;
                    }
                    pending.leading = true;
                    break;
                }
                pending = self
                    .ready
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            drop(pending);
            self.lead();
        }
    }
}

impl Group {
    /// The mover: commits journaled events whenever some wait, until the
    /// journal is closed and SQLite holds them all (or, closed, they cannot
    /// be committed: they stay in the journal for the next open).
    fn move_journal(&self, journal: &Journal) {
        while journal.wait_for_lines(MOVE_EVERY) {
            // Lines that come meanwhile share the commit: each costs its
            // WAL pages, wake-ups and checks once per commit, not per line.
            journal.linger(MOVE_LINGER);
            let moved = self
                .writer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .commit(Vec::new());
            if !moved {
                if journal.closed() {
                    return;
                }
                thread::sleep(MOVE_RETRY);
            }
        }
    }
}

/// Passes the lead on when a commit ends, even by a panic, so nobody waits
/// for a leader that is gone.
struct PassOn<'a>(&'a Group);

impl Drop for PassOn<'_> {
    fn drop(&mut self) {
        self.0.pass_on();
    }
}

/// Closes the queue when the writer thread stops, even by a panic: what is
/// still queued is dropped, so its waiters learn the writer is gone.
struct Closing(Arc<Group>);

impl Drop for Closing {
    fn drop(&mut self) {
        let mut pending = self.0.lock();
        pending.closed = true;
        pending.work.clear();
    }
}

/// The threads of a running writer.
pub(crate) struct Threads {
    /// Leads for barriers and for appends nobody else leads.
    pub writer: JoinHandle<()>,
    /// Moves journaled events into SQLite.
    pub mover: JoinHandle<()>,
}

/// Starts the writer and the mover on `conn`, chaining onto the head of
/// `journal`.
pub(crate) fn spawn(
    conn: Connection,
    journal: Arc<Journal>,
    guard: Guard,
    chain: Chain,
) -> Result<(Arc<Group>, Threads), AuditError> {
    let group = Arc::new(Group {
        pending: Mutex::new(Pending::default()),
        ready: Condvar::new(),
        writer: Mutex::new(Writer {
            conn,
            journal: Arc::clone(&journal),
            synchronous: Durability::Normal,
            guard,
            chain,
            unchecked_bytes: FREE_CHECK_BYTES,
        }),
    });
    let thread_error = |source| AuditError::Io {
        path: "audit writer thread".into(),
        source,
    };
    let closing = Closing(Arc::clone(&group));
    let writer = thread::Builder::new()
        .name("praxis-audit-writer".into())
        .spawn(move || closing.0.serve())
        .map_err(thread_error)?;
    let moving = Arc::clone(&group);
    let mover = thread::Builder::new()
        .name("praxis-audit-mover".into())
        .spawn(move || moving.move_journal(&journal))
        .map_err(thread_error)?;
    Ok((group, Threads { writer, mover }))
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
    /// Holds the chain's head, and the events acknowledged ahead of SQLite.
    journal: Arc<Journal>,
    /// The `synchronous` level the connection is currently set to.
    synchronous: Durability,
    guard: Guard,
    chain: Chain,
    /// Bytes written (estimated) since free space was last checked.
    unchecked_bytes: u64,
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
    /// Checks the file is still the one opened; marks the store lost if not.
    fn check(&self) -> Option<String> {
        anchor::lost_or_gone(&self.db, self.opened, &self.lost)
    }
}

impl Writer {
    /// Commits the appends of `work` as one batch, then answers its
    /// barriers; returns how many appends it answered.
    fn commit_work(&mut self, work: Vec<Work>) -> usize {
        let mut gathered = Gathered::default();
        work.into_iter().for_each(|item| gathered.take(item));
        let Gathered { batch, barriers } = gathered;
        let answered = batch.len();
        // A barrier alone moves the journal in too: a read after it sees
        // every acknowledged event.
        let _ = self.commit(batch);
        for waiter in barriers {
            // A reader that went away needs no answer.
            let _ = waiter.send(());
        }
        answered
    }

    /// Commits `batch` after every journaled event SQLite does not hold
    /// yet; with an empty batch, commits just those. False if something
    /// was left uncommitted.
    fn commit(&mut self, batch: Vec<Job>) -> bool {
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
            return false;
        }
        let db = self.guard.db.clone();
        // Nearly full: use the reserve now rather than fail this batch. The
        // check is a system call, so it runs once per FREE_CHECK_BYTES
        // written, far less than the reserve's half that it keeps free.
        if self.unchecked_bytes >= FREE_CHECK_BYTES {
            self.unchecked_bytes = 0;
            if ballast::free(&db) < ballast::SIZE / 2 {
                self.release_reserve();
            }
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
        let journal = Arc::clone(&self.journal);
        // Events to place chain onto the head, so they hold the journal's
        // lock to their COMMIT; journaled events alone are placed already,
        // and appends go on into the other file while they commit.
        let placing = !work.is_empty() || replayed > 0;
        let mut ahead = match placing {
            true => journal.lock_to_commit(),
            false => journal.lock(),
        };
        let absorbed = ahead.take();
        let (tip, held) = if placing {
            (ahead.head.clone(), Some(ahead))
        } else {
            let Some(last) = absorbed.last() else {
                return true;
            };
            ahead.turn();
            drop(ahead);
            (last.head(), None)
        };
        self.unchecked_bytes += BATCH_BYTES
            + WRITE_FACTOR
                * (absorbed.iter().map(Row::size).sum::<u64>()
                    + work.iter().map(|(record, _)| record.size()).sum::<u64>());
        // Events without a transaction hook can be written again if the
        // filesystem fills under this batch and the reserve is released.
        let hooked: Vec<bool> = work.iter().map(|(_, op)| op.is_some()).collect();
        let mut work: Vec<(Unplaced, Option<TxOp>)> = replays.into_iter().chain(work).collect();
        let mut result = self
            .set_synchronous(durability)
            .and_then(|()| write_batch(&mut self.conn, &absorbed, &tip, &mut work, &self.chain));
        let mut spilled = spilled.map(|taken| (taken, replayed));
        if matches!(&result, Err(e) if disk_full(e)) && self.release_reserve() {
            let mut retry: Vec<(Unplaced, Option<TxOp>)> = work
                .into_iter()
                .skip(replayed)
                .zip(&hooked)
                .filter(|(_, hooked)| !**hooked)
                .map(|((record, _), _)| (record, None))
                .collect();
            result = write_batch(&mut self.conn, &absorbed, &tip, &mut retry, &self.chain).map(
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
            spilled = None;
        }
        match held {
            Some(mut ahead) => {
                let committed = self.answer(result, replies, spilled, absorbed, true, &mut ahead);
                journal.committed(ahead);
                committed
            }
            None => {
                let mut ahead = journal.lock();
                self.answer(result, replies, spilled, absorbed, false, &mut ahead)
            }
        }
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

    /// Hands each waiter its outcome; with `spilled`, the first outcomes
    /// (as many as it says) are the spill journal's, which is emptied once
    /// they are in. Journaled events `absorbed` go back to wait if the
    /// batch failed. True if it committed.
    fn answer(
        &mut self,
        result: Result<(Vec<Result<Appended, AuditError>>, Head), AuditError>,
        replies: Vec<Reply>,
        spilled: Option<(spill::Taken, usize)>,
        absorbed: Vec<Row>,
        placing: bool,
        ahead: &mut Ahead,
    ) -> bool {
        match result {
            Ok((outcomes, head)) => {
                if placing {
                    ahead.head = head.clone();
                }
                self.journal.stored(ahead, head.clone());
                if let Err(e) = anchor::write(&self.guard.anchor, &head) {
                    tracing::error!("audit anchor not written: {e}");
                }
                if self.guard.syslog.load(Ordering::Relaxed) {
                    anchor::to_syslog(&head);
                }
                let replayed = spilled.as_ref().map_or(0, |(_, replayed)| *replayed);
                if let Some((taken, replayed)) = spilled {
                    tracing::warn!("{replayed} spilled audit event(s) moved into the chain");
                    taken.done();
                }
                for (reply, outcome) in replies.into_iter().zip(outcomes.into_iter().skip(replayed))
                {
                    reply.send(outcome);
                }
                true
            }
            Err(error) => {
                let message = error.to_string();
                tracing::error!(error = %message, "audit batch not committed");
                // The transaction rolled back: the journaled events wait
                // for the next commit, the head stays theirs.
                ahead.put_back(absorbed);
                for reply in replies {
                    reply.send(Err(AuditError::Commit(message.clone())));
                }
                false
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

/// Writes one batch in one transaction: the journaled rows `absorbed`,
/// then `work` chained onto `head`, the head after them. The outer error
/// aborts the whole batch; inner errors reject single events. Hooks are
/// taken as they run; the events stay, for a retry.
fn write_batch(
    conn: &mut Connection,
    absorbed: &[Row],
    head: &Head,
    work: &mut [(Unplaced, Option<TxOp>)],
    chain: &Chain,
) -> Result<(Vec<Result<Appended, AuditError>>, Head), AuditError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare_cached(&INSERT)?;
        for row in absorbed {
            insert.execute(params_from_iter(row.values()))?;
        }
    }
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

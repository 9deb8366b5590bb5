//! The append journal: where a NORMAL event without a transaction hook is
//! made durable before SQLite holds it.
//!
//! An appender, under the one lock that assigns `seq`, `ts` and
//! `prev_hash`, hashes its record and writes one line,
//! `hash TAB canonical_record LF`, to an append-only file beside the store
//! with a single write(2). Once that write returns, the bytes are in the
//! kernel: they survive a SIGKILL of praxisd as a WAL commit under
//! `synchronous=NORMAL` does, and the append is acknowledged. The writer
//! moves journaled events into SQLite in large transactions and empties a
//! file once SQLite holds every line of it. Two files take turns, so
//! appenders write to one while the other's lines are committed.
//!
//! Opening the store first moves the lines a killed praxisd left into
//! SQLite, each checked to continue the chain and to hash as it says. A
//! last line without its LF was torn by a kill inside its write, so it was
//! never acknowledged: it is dropped. A complete line that does not check
//! ends the replay there; the file is kept aside for an operator.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::types::Value;

use super::error::AuditError;
use super::event::Appended;
use super::head::Head;
use super::key::Chain;
use super::record::{self, COLUMNS, RECORD_LEN, Unplaced};
use super::{anchor, ballast, time};

/// Acknowledged events SQLite does not hold yet, at most. Past it appends
/// take the SQLite path, which moves them in with its own batch: the
/// journal never runs further ahead of SQLite than this.
const MAX_PENDING: usize = 1 << 14;

/// Where SQLite's write lock on a WAL database lies: byte 120 of its
/// `-shm` file, the first of its locks (the WAL format's `WAL_WRITE_LOCK`).
const WAL_WRITE_LOCK_BYTE: i64 = 120;

/// Lines waiting that wake the mover at once, rather than at its next look.
const WAKE_AT: usize = 256;

/// How long a read waits for the journal to reach SQLite before it reads
/// what is there: only a failing store takes that long.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// The two journal files of the store at `db`.
pub(crate) fn paths_of(db: &Path) -> [PathBuf; 2] {
    let name = db
        .file_name()
        .map_or_else(|| "audit.db".into(), |n| n.to_string_lossy().into_owned());
    [0, 1].map(|i| db.with_file_name(format!("{name}-append-{i}")))
}

/// One acknowledged event as SQLite will hold it: every column, `hash` last.
pub(crate) struct Row(Vec<Value>);

impl Row {
    /// The values to insert, in `COLUMNS` order.
    pub(crate) fn values(&self) -> &[Value] {
        &self.0
    }

    /// Bytes of its text values, about what its row takes.
    pub(crate) fn size(&self) -> u64 {
        self.0
            .iter()
            .map(|v| match v {
                Value::Text(s) => s.len() as u64,
                _ => 8,
            })
            .sum()
    }

    /// The chain head this row is.
    pub(crate) fn head(&self) -> Head {
        let text = |v: Option<&Value>| match v {
            Some(Value::Text(s)) => s.clone(),
            _ => String::new(),
        };
        Head {
            seq: match self.0.first() {
                Some(Value::Integer(seq)) => *seq,
                _ => 0,
            },
            hash: text(self.0.last()),
        }
    }
}

/// What [`Journal::append`] did with a record.
#[must_use]
pub(crate) enum Journaled {
    /// Written and acknowledged, or refused.
    Done(Result<Appended, AuditError>),
    /// Not journaled (the journal is as far ahead of SQLite as it may run,
    /// or the append must not be acknowledged from it): the record takes
    /// the SQLite path.
    Not(Unplaced),
}

/// The state under the journal's lock.
pub(crate) struct Ahead {
    /// The last acknowledged event: what the next one chains onto.
    pub head: Head,
    /// The last event SQLite holds.
    stored: Head,
    /// Acknowledged events SQLite does not hold yet, in `seq` order.
    pending: Vec<Row>,
    /// The file appends go to.
    active: usize,
    /// Each file's length: where a failed write is cut back to.
    len: [u64; 2],
    /// The last `seq` in each file.
    last_seq: [i64; 2],
    /// The last commit into SQLite failed: appends take the SQLite path,
    /// and fail as it does, until one succeeds.
    failing: bool,
    /// A read waits for the pending lines: the mover stops lingering.
    wanted: bool,
    closed: bool,
}

impl Ahead {
    /// Takes every pending row, to be inserted.
    pub(crate) fn take(&mut self) -> Vec<Row> {
        std::mem::take(&mut self.pending)
    }

    /// Puts back rows whose commit failed, ahead of any appended since;
    /// appends take the SQLite path until a commit succeeds.
    pub(crate) fn put_back(&mut self, mut rows: Vec<Row>) {
        rows.append(&mut self.pending);
        self.pending = rows;
        self.failing = true;
    }

    /// Turns appends to the other file if it is empty, so the lines just
    /// taken can be cut from theirs once committed while appends go on.
    pub(crate) fn turn(&mut self) {
        let other = 1 - self.active;
        if self.len[other] == 0 {
            self.active = other;
        }
    }
}

/// The journal files and the lock that orders every journaled append.
pub(crate) struct Journal {
    paths: [PathBuf; 2],
    files: [File; 2],
    /// The database's `-shm` file, where another process's write lock
    /// shows. Closing a descriptor of it drops this process's own SQLite
    /// locks on it, so the store drops the journal after every connection.
    shm: File,
    state: Mutex<Ahead>,
    /// Wakes the mover when lines wait, and readers when they are moved.
    lines: Condvar,
    moved: Condvar,
    /// A SQLite commit holds the lock to its end.
    committing: AtomicBool,
    chain: Chain,
    db: PathBuf,
    /// The identity of the database file opened.
    opened: (u64, u64),
    /// The store's lost flag: once set, nothing more is acknowledged.
    lost: Arc<Mutex<Option<String>>>,
    space_low: Arc<AtomicBool>,
}

fn open_for_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

impl Journal {
    /// Opens the journal of the store at `db`, whose SQLite head is `head`
    /// (after [`replay`], the files are empty).
    pub(crate) fn open(
        db: &Path,
        opened: (u64, u64),
        head: Head,
        chain: Chain,
        lost: Arc<Mutex<Option<String>>>,
        space_low: Arc<AtomicBool>,
    ) -> Result<Journal, AuditError> {
        let paths = paths_of(db);
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| AuditError::Io { path, source }
        };
        let files = [
            open_for_append(&paths[0]).map_err(io(&paths[0]))?,
            open_for_append(&paths[1]).map_err(io(&paths[1]))?,
        ];
        let mut shm_path = db.as_os_str().to_owned();
        shm_path.push("-shm");
        let shm_path = PathBuf::from(shm_path);
        let shm = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&shm_path)
            .map_err(io(&shm_path))?;
        let len = [0, 1].map(|i| files[i].metadata().map_or(0, |m| m.len()));
        // Lines left in place (a store refusing work) are never cut.
        let last_seq = len.map(|n| if n == 0 { 0 } else { i64::MAX });
        Ok(Journal {
            paths,
            files,
            shm,
            state: Mutex::new(Ahead {
                head: head.clone(),
                stored: head,
                pending: Vec::new(),
                active: 0,
                len,
                last_seq,
                failing: false,
                wanted: false,
                closed: false,
            }),
            lines: Condvar::new(),
            moved: Condvar::new(),
            committing: AtomicBool::new(false),
            chain,
            db: db.to_owned(),
            opened,
            lost,
            space_low,
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Ahead> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the lock for a SQLite commit of events still to be chained,
    /// held to its end: appenders that must not block can tell.
    pub(crate) fn lock_to_commit(&self) -> MutexGuard<'_, Ahead> {
        let ahead = self.lock();
        self.committing.store(true, Ordering::SeqCst);
        ahead
    }

    /// Whether a SQLite commit holds the lock (it may take an fsync).
    pub(crate) fn committing(&self) -> bool {
        self.committing.load(Ordering::SeqCst)
    }

    /// The commit that took the lock with [`Journal::lock_to_commit`] ended.
    pub(crate) fn committed(&self, ahead: MutexGuard<'_, Ahead>) {
        self.committing.store(false, Ordering::SeqCst);
        drop(ahead);
    }

    fn lost(&self) -> Option<String> {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether another process holds the database's write lock (or it
    /// cannot be told): SQLite could not take an event now, so an append
    /// takes the SQLite path and waits, or fails, as it does.
    fn locked_elsewhere(&self) -> bool {
        let mut probe = libc::flock {
            l_type: libc::F_WRLCK as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: WAL_WRITE_LOCK_BYTE,
            l_len: 1,
            l_pid: 0,
        };
        // F_GETLK reports only other processes' locks: this one's own
        // connections never show.
        match nix::fcntl::fcntl(&self.shm, nix::fcntl::FcntlArg::F_GETLK(&mut probe)) {
            Ok(_) => probe.l_type != libc::F_UNLCK as libc::c_short,
            Err(_) => true,
        }
    }

    /// Why nothing may be appended: the store lost, or its file deleted or
    /// replaced (checked before every append, as before every SQLite
    /// commit: an event journaled for a file that is gone would be lost).
    fn refusing(&self) -> Option<String> {
        anchor::lost_or_gone(&self.db, self.opened, &self.lost)
    }

    /// The last acknowledged event.
    pub(crate) fn head(&self) -> Head {
        self.lock().head.clone()
    }

    /// Chains `record` onto the head, writes its line and acknowledges it.
    pub(crate) fn append(&self, record: Unplaced) -> Journaled {
        if let Some(why) = self.refusing() {
            return Journaled::Done(Err(AuditError::Lost(why)));
        }
        if self.locked_elsewhere() {
            return Journaled::Not(record);
        }
        let mut ahead = self.lock();
        if ahead.closed {
            return Journaled::Done(Err(AuditError::WriterGone));
        }
        if ahead.pending.len() >= MAX_PENDING || ahead.failing {
            return Journaled::Not(record);
        }
        let seq = ahead.head.seq + 1;
        let ts = time::now();
        let prev_hash = ahead.head.hash.clone();
        let corrupt = |problem| AuditError::Corrupt { seq, problem };
        let placed = match record.place(seq, &ts, &prev_hash) {
            Ok(placed) => placed,
            Err(problem) => return Journaled::Done(Err(corrupt(problem))),
        };
        let hash = match self.chain.hash(seq, &prev_hash, &placed.canonical) {
            Ok(hash) => hash,
            Err(problem) => return Journaled::Done(Err(corrupt(problem))),
        };
        let mut line = Vec::with_capacity(hash.len() + placed.canonical.len() + 2);
        line.extend_from_slice(hash.as_bytes());
        line.push(b'\t');
        line.extend_from_slice(&placed.canonical);
        line.push(b'\n');
        drop(placed);
        if let Err(e) = self.write_line(&mut ahead, &line) {
            return Journaled::Done(Err(e));
        }
        let active = ahead.active;
        ahead.last_seq[active] = seq;
        ahead.head = Head {
            seq,
            hash: hash.clone(),
        };
        let row = record.into_row(seq, ts.clone(), prev_hash, hash.clone());
        ahead.pending.push(Row(row));
        let wake = ahead.pending.len() == WAKE_AT;
        drop(ahead);
        // The mover looks for lines on its own every so often; woken for
        // each first line, it cost every command's intent a wake-up.
        if wake {
            self.lines.notify_one();
        }
        Journaled::Done(Ok(Appended { seq, ts, hash }))
    }

    /// Writes `line` with one write(2). A failed or short write is cut
    /// back, so no torn line stays in front of later ones; a full
    /// filesystem releases the reserve and is tried once more.
    fn write_line(&self, ahead: &mut Ahead, line: &[u8]) -> Result<(), AuditError> {
        let active = ahead.active;
        let mut outcome = self.write_once(active, ahead.len[active], line);
        if matches!(&outcome, Err(e) if e.raw_os_error() == Some(libc::ENOSPC))
            && ballast::release(&self.db)
        {
            self.space_low.store(true, Ordering::SeqCst);
            tracing::error!(
                "the audit store's filesystem is full: reserve released, new work refused"
            );
            outcome = self.write_once(active, ahead.len[active], line);
        }
        match outcome {
            Ok(()) => {
                ahead.len[active] += line.len() as u64;
                Ok(())
            }
            Err(source) => Err(AuditError::Io {
                path: self.paths[active].display().to_string(),
                source,
            }),
        }
    }

    fn write_once(&self, file: usize, len: u64, line: &[u8]) -> std::io::Result<()> {
        let written = (&self.files[file]).write(line);
        if matches!(written, Ok(n) if n == line.len()) {
            return Ok(());
        }
        if let Err(e) = self.files[file].set_len(len) {
            let why = format!(
                "the audit journal {} holds a torn line that could not be cut ({e})",
                self.paths[file].display()
            );
            tracing::error!("{why}; refusing all work until an operator acts");
            *self.lost.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
        }
        match written {
            Ok(_) => Err(std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                "short write",
            )),
            Err(e) => Err(e),
        }
    }

    /// SQLite now holds every event up to `stored`: readers waiting for it
    /// are woken, and each file all of whose lines it holds is emptied.
    pub(crate) fn stored(&self, ahead: &mut Ahead, stored: Head) {
        let caught_up = stored.seq == ahead.head.seq;
        ahead.stored = stored;
        ahead.failing = false;
        for file in 0..2 {
            if ahead.len[file] == 0
                || ahead.last_seq[file] > ahead.stored.seq
                || (file == ahead.active && !caught_up)
            {
                continue;
            }
            match self.files[file].set_len(0) {
                Ok(()) => {
                    ahead.len[file] = 0;
                    ahead.last_seq[file] = 0;
                }
                // Kept lines are skipped at the next open: SQLite has them.
                Err(e) => tracing::error!(
                    "audit journal {} not emptied: {e}",
                    self.paths[file].display()
                ),
            }
        }
        self.moved.notify_all();
    }

    /// Waits until lines wait to be moved, looking every `every` (appends
    /// wake the mover only once [`WAKE_AT`] lines wait, and a read wanting
    /// them at once); false once the journal is closed and SQLite holds
    /// them all.
    pub(crate) fn wait_for_lines(&self, every: Duration) -> bool {
        let mut ahead = self.lock();
        while ahead.pending.is_empty() {
            if ahead.closed {
                return false;
            }
            ahead = self
                .lines
                .wait_timeout(ahead, every)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Lets more lines gather, for at most `most`: until a read wants the
    /// pending ones, or the journal is closed.
    pub(crate) fn linger(&self, most: Duration) {
        let ahead = self.lock();
        let (mut ahead, _) = self
            .lines
            .wait_timeout_while(ahead, most, |ahead| !ahead.wanted && !ahead.closed)
            .unwrap_or_else(PoisonError::into_inner);
        ahead.wanted = false;
    }

    /// Waits until SQLite holds every event acknowledged before this call,
    /// so a read after it sees them; returns that head. A store that
    /// cannot take them (lost, failing) is read as it is.
    pub(crate) fn settled(&self) -> Head {
        let mut ahead = self.lock();
        let target = ahead.head.clone();
        if ahead.stored.seq >= target.seq || self.lost().is_some() {
            return target;
        }
        ahead.wanted = true;
        self.lines.notify_all();
        let (ahead, waited) = self
            .moved
            .wait_timeout_while(ahead, SETTLE_LIMIT, |ahead| ahead.stored.seq < target.seq)
            .unwrap_or_else(PoisonError::into_inner);
        if waited.timed_out() {
            tracing::error!(
                "audit journal not moved into the store within {SETTLE_LIMIT:?}: reading without seq {}..={}",
                ahead.stored.seq + 1,
                target.seq
            );
        }
        target
    }

    /// Whether [`Journal::close`] was called.
    pub(crate) fn closed(&self) -> bool {
        self.lock().closed
    }

    /// No more appends: the mover moves what is left and stops.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.lines.notify_all();
    }
}

/// A journal line: `seq`, hash, canonical record and the record's values
/// (`seq` through `prev_hash`).
type Line = (i64, String, Vec<u8>, Vec<Value>);

/// The complete lines in the journal of the store at `db`, in `seq` order. A
/// last line without its LF was torn by a kill inside its write and never
/// acknowledged: it is left out (`torn` is told of its file). Reading a file
/// stops at a line that does not parse, and `unparsed` is told of its file.
fn lines(
    db: &Path,
    mut torn: impl FnMut(&Path),
    mut unparsed: impl FnMut(&Path),
) -> Result<Vec<Line>, AuditError> {
    let mut lines = Vec::new();
    for path in paths_of(db) {
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(AuditError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let (complete, rest) = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(end) => bytes.split_at(end + 1),
            None => (&[][..], &bytes[..]),
        };
        if !rest.is_empty() {
            torn(&path);
        }
        for line in complete.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match parse(line) {
                Some(line) => lines.push(line),
                None => {
                    unparsed(&path);
                    break;
                }
            }
        }
    }
    lines.sort_by_key(|(seq, ..)| *seq);
    Ok(lines)
}

/// The lines that continue the chain from `head`, in order, and the `seq`
/// of the first that does not, if any (where the walk stopped). A line at or behind the
/// tip is skipped: SQLite holds it already (its file not emptied yet).
fn chained(lines: Vec<Line>, head: &Head, chain: &Chain) -> (Vec<Line>, Option<i64>) {
    let mut continuing: Vec<Line> = Vec::new();
    for line in lines {
        let tip = continuing.last().map_or(head.seq, |l| l.0);
        if line.0 <= tip {
            continue;
        }
        let (seq, hash, canonical, values) = &line;
        let prev_hash = match values.get(RECORD_LEN - 1) {
            Some(Value::Text(prev)) => prev.as_str(),
            _ => "",
        };
        let tip_hash = continuing
            .last()
            .map_or(head.hash.as_str(), |l| l.1.as_str());
        let continues = *seq == tip + 1
            && prev_hash == tip_hash
            && chain.hash(*seq, prev_hash, canonical).as_deref() == Ok(hash.as_str());
        if !continues {
            return (continuing, Some(*seq));
        }
        continuing.push(line);
    }
    (continuing, None)
}

/// Moves the lines a killed praxisd left in the journal of the store at
/// `db` into SQLite, after `head`, and empties the files; returns the new
/// head. A complete line that does not parse or does not continue the chain
/// ends the replay there, and its file is kept aside for an operator.
pub(crate) fn replay(
    db: &Path,
    conn: &mut Connection,
    head: Head,
    chain: &Chain,
) -> Result<Head, AuditError> {
    let lines = lines(
        db,
        |path| {
            tracing::warn!(
                "audit journal {}: a torn last line (never acknowledged) dropped",
                path.display()
            )
        },
        |path| keep_aside(path, "a line that does not parse"),
    )?;
    let (moving, broken) = chained(lines, &head, chain);
    if let Some(seq) = broken {
        for path in paths_of(db) {
            keep_aside(&path, &format!("seq {seq} does not continue the chain"));
        }
    }
    let tx = conn.transaction()?;
    let mut tip = head;
    let moved = moving.len();
    for (seq, hash, _, mut row) in moving {
        row.push(Value::Text(hash.clone()));
        tx.prepare_cached(&record::INSERT)?
            .execute(rusqlite::params_from_iter(row.iter()))?;
        tip = Head { seq, hash };
    }
    tx.commit()?;
    if moved > 0 {
        tracing::warn!("{moved} journaled audit event(s) moved into the store at open");
    }
    for path in paths_of(db) {
        match OpenOptions::new().write(true).open(&path) {
            Ok(file) => file.set_len(0).map_err(|source| AuditError::Io {
                path: path.display().to_string(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(AuditError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        }
    }
    Ok(tip)
}

/// What a check of the journal found: the events after the store's head
/// that continue its chain, and the first `seq` that does not, with why.
pub(crate) struct Checked {
    pub(crate) continuing: u64,
    pub(crate) broken: Option<(i64, String)>,
}

/// Checks, changing nothing, the lines in the journal of the store at `db`
/// that come after `head`: the events a stopped praxisd acknowledged and
/// that SQLite does not hold yet, which the next open moves in as
/// [`replay`] does.
pub(crate) fn check(db: &Path, head: Head, chain: &Chain) -> Result<Checked, AuditError> {
    let mut unparsed = None;
    let lines = lines(
        db,
        |_| {},
        |path| {
            unparsed.get_or_insert_with(|| path.display().to_string());
        },
    )?;
    let (continuing, broken) = chained(lines, &head, chain);
    let tip = continuing.last().map_or(head.seq, |l| l.0);
    let why = match (broken, unparsed) {
        (Some(_), _) => Some(format!(
            "the journaled event does not continue the chain from seq {tip}"
        )),
        (None, Some(file)) => Some(format!("a line of the journal {file} does not parse")),
        (None, None) => None,
    };
    let continuing = continuing.len() as u64;
    let broken = why.map(|why| (tip + 1, why));
    Ok(Checked { continuing, broken })
}

/// One journal line; `None` if it is not a line the journal writes, its
/// record re-encoding to exactly its text.
fn parse(line: &[u8]) -> Option<Line> {
    let tab = line.iter().position(|&b| b == b'\t')?;
    let (hash, canonical) = (&line[..tab], &line[tab + 1..]);
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(canonical).ok()?;
    let values = COLUMNS[..RECORD_LEN]
        .iter()
        .map(|column| match object.get(*column)? {
            serde_json::Value::Null => Some(Value::Null),
            serde_json::Value::Number(n) => n.as_i64().map(Value::Integer),
            serde_json::Value::String(s) => Some(Value::Text(s.clone())),
            _ => None,
        })
        .collect::<Option<Vec<Value>>>()?;
    if record::canonical(&values).ok()? != canonical {
        return None;
    }
    let seq = match values.first() {
        Some(Value::Integer(seq)) => *seq,
        _ => return None,
    };
    Some((
        seq,
        String::from_utf8(hash.to_vec()).ok()?,
        canonical.to_vec(),
        values,
    ))
}

/// Copies a journal file whose lines cannot all be replayed beside it, for
/// an operator: the lines from the bad one on are not in the chain.
fn keep_aside(path: &Path, why: &str) {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".rejected");
    let aside = PathBuf::from(aside);
    let copied = fs::copy(path, &aside);
    tracing::error!(
        "audit journal {}: {why}; the lines from there on are not in the chain (copy kept in {}: {copied:?})",
        path.display(),
        aside.display()
    );
}

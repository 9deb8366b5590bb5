//! The anchor: the chain head kept beside the store (`audit.anchor`, not a
//! name `rm audit.db*` matches), rewritten after every committed batch. A
//! store that does not reach the anchored head, or holds another event
//! there, was truncated or replaced; so was one whose file is no longer the
//! file the writer opened.

use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension};

use super::head::Head;

/// The anchor file of the store at `db`.
pub(crate) fn path_of(db: &Path) -> PathBuf {
    db.with_file_name("audit.anchor")
}

/// The anchored head, if an anchor was ever written.
pub(crate) fn read(db: &Path) -> Result<Option<Head>, String> {
    let path = path_of(db);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    // Made but never written (a crash at the very first start).
    if text.trim().is_empty() {
        return Ok(None);
    }
    let (seq, hash) = text
        .trim()
        .split_once(' ')
        .ok_or_else(|| format!("{}: not `seq hash`", path.display()))?;
    let seq = seq
        .parse()
        .map_err(|_| format!("{}: bad seq {seq:?}", path.display()))?;
    Ok(Some(Head {
        seq,
        hash: hash.to_owned(),
    }))
}

/// The anchor file, open for rewriting in place after every batch.
pub(crate) fn open(db: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path_of(db))
}

/// Records `head` in the anchor file: one fixed-width line written in place
/// (a single small write, not a new file per batch).
pub(crate) fn write(file: &fs::File, head: &Head) -> std::io::Result<()> {
    file.write_all_at(format!("{:020} {}\n", head.seq, head.hash).as_bytes(), 0)
}

/// Why the store at `conn` does not hold the anchored head, if it does not.
pub(crate) fn check(conn: &Connection, anchor: &Head) -> Result<Option<String>, rusqlite::Error> {
    if anchor.seq == 0 {
        return Ok(None);
    }
    let stored: Option<String> = conn
        .query_row(
            "SELECT hash FROM events WHERE seq = ?1",
            [anchor.seq],
            |row| row.get(0),
        )
        .optional()?;
    Ok(match stored {
        None => Some(format!(
            "the audit store does not reach seq {} recorded in its anchor: events were cut or the store was replaced",
            anchor.seq
        )),
        Some(hash) if hash != anchor.hash => Some(format!(
            "event {} in the audit store is not the one its anchor recorded: the store was rewritten or replaced",
            anchor.seq
        )),
        Some(_) => None,
    })
}

/// The identity (device, inode) of the file at `db`.
pub(crate) fn identity(db: &Path) -> std::io::Result<(u64, u64)> {
    let meta = fs::metadata(db)?;
    Ok((meta.dev(), meta.ino()))
}

/// Why the file at `db` is no longer the one with identity `opened`, if so.
pub(crate) fn still_there(db: &Path, opened: (u64, u64)) -> Option<String> {
    match identity(db) {
        Ok(now) if now == opened => None,
        Ok(_) => Some(format!(
            "the audit store {} was replaced while praxisd ran",
            db.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
            "the audit store {} was deleted while praxisd ran",
            db.display()
        )),
        Err(e) => Some(format!("the audit store {}: {e}", db.display())),
    }
}

/// Why the store at `db` can no longer be trusted: already marked `lost`,
/// or no longer the file with identity `opened`, which marks it lost for
/// good (until an operator acts and praxisd restarts).
pub(crate) fn lost_or_gone(
    db: &Path,
    opened: (u64, u64),
    lost: &Mutex<Option<String>>,
) -> Option<String> {
    let marked = || lost.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(why) = marked().as_ref() {
        return Some(why.clone());
    }
    // Not under the lock: appenders check at once.
    let why = still_there(db, opened)?;
    let mut lost = marked();
    if lost.is_none() {
        tracing::error!("{why}; refusing all work until an operator acts");
        *lost = Some(why);
    }
    lost.clone()
}

/// Logs `head` to the system log (LOG_AUTHPRIV | LOG_INFO), where journald or
/// a log shipper keeps it outside the state dir.
pub(crate) fn to_syslog(head: &Head) {
    let Ok(line) = std::ffi::CString::new(format!("audit head {} {}", head.seq, head.hash)) else {
        return;
    };
    // SAFETY: a NUL-terminated "%s" format and one C string, both alive for
    // the call; syslog copies what it needs.
    unsafe {
        libc::syslog(
            libc::LOG_AUTHPRIV | libc::LOG_INFO,
            c"praxisd: %s".as_ptr(),
            line.as_ptr(),
        )
    };
}

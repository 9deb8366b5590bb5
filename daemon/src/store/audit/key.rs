//! The chain key: 32 random bytes in `audit.key` beside the store (mode
//! 0600, readable by praxisd's user only), made at the first start. Events
//! are chained with HMAC-SHA256 under it, so rewriting history and
//! recomputing the chain needs the key, not just write access to the store.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key events are chained under, as an HMAC state already keyed: each
/// event's HMAC starts from a copy of it.
#[derive(Clone)]
pub(crate) struct ChainKey(Hmac<Sha256>);

impl std::fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChainKey(..)")
    }
}

impl ChainKey {
    fn of(bytes: &[u8; 32]) -> ChainKey {
        ChainKey(Hmac::new_from_slice(bytes).expect("HMAC takes any key length"))
    }

    /// `hex(HMAC-SHA256(key, prev_hash ‖ canonical))`.
    pub(crate) fn chain(&self, prev_hash: &str, canonical: &[u8]) -> String {
        let mut mac = self.0.clone();
        mac.update(prev_hash.as_bytes());
        mac.update(canonical);
        hex::encode(mac.finalize().into_bytes())
    }
}

/// The key file of the store at `db`.
pub(crate) fn path_of(db: &Path) -> PathBuf {
    db.with_file_name("audit.key")
}

/// The store's key, if it has one.
pub(crate) fn load(db: &Path) -> std::io::Result<Option<ChainKey>> {
    let mut bytes = [0u8; 32];
    match fs::File::open(path_of(db)) {
        Ok(mut file) => {
            file.read_exact(&mut bytes)?;
            Ok(Some(ChainKey::of(&bytes)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes a new key (it must not exist yet).
pub(crate) fn create(db: &Path) -> std::io::Result<ChainKey> {
    let mut bytes = [0u8; 32];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path_of(db))?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    Ok(ChainKey::of(&bytes))
}

/// Where the key applies: events from `keyed_from` on are chained under it,
/// older ones (of a store from before keys) with plain SHA-256.
#[derive(Clone, Debug)]
pub(crate) struct Chain {
    key: Option<ChainKey>,
    keyed_from: i64,
}

/// The table that records from which event on the chain is keyed.
pub(crate) const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS audit_chain (keyed_from INTEGER NOT NULL);";

fn keyed_from(conn: &rusqlite::Connection) -> rusqlite::Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    let exists: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit_chain'",
        [],
        |row| row.get(0),
    )?;
    if exists == 0 {
        return Ok(None);
    }
    conn.query_row("SELECT keyed_from FROM audit_chain LIMIT 1", [], |row| {
        row.get(0)
    })
    .optional()
}

impl Chain {
    /// The writer's chain: the key is made at the first start (keying every
    /// event after the current last one); a keyed store whose key is gone is
    /// an error, since its events can no longer be checked or extended.
    pub(crate) fn for_writer(conn: &rusqlite::Connection, db: &Path) -> Result<Chain, String> {
        let from = keyed_from(conn).map_err(|e| e.to_string())?;
        let key = load(db).map_err(|e| format!("{}: {e}", path_of(db).display()))?;
        match (from, key) {
            (Some(keyed_from), Some(key)) => Ok(Chain {
                key: Some(key),
                keyed_from,
            }),
            (Some(keyed_from), None) => Err(format!(
                "the chain key {} is missing: events from seq {keyed_from} on cannot be checked",
                path_of(db).display()
            )),
            (None, key) => {
                let key = match key {
                    Some(key) => key,
                    None => create(db).map_err(|e| format!("{}: {e}", path_of(db).display()))?,
                };
                let last: i64 = conn
                    .query_row("SELECT coalesce(max(seq), 0) FROM events", [], |row| {
                        row.get(0)
                    })
                    .map_err(|e| e.to_string())?;
                conn.execute(
                    "INSERT INTO audit_chain (keyed_from) VALUES (?1)",
                    [last + 1],
                )
                .map_err(|e| e.to_string())?;
                Ok(Chain {
                    key: Some(key),
                    keyed_from: last + 1,
                })
            }
        }
    }

    /// A reader's chain: the key if this user can read it.
    pub(crate) fn for_reader(conn: &rusqlite::Connection, db: &Path) -> Chain {
        Chain {
            key: load(db).ok().flatten(),
            keyed_from: keyed_from(conn).ok().flatten().unwrap_or(i64::MAX),
        }
    }

    /// The hash of event `seq`: keyed from `keyed_from` on.
    pub(crate) fn hash(
        &self,
        seq: i64,
        prev_hash: &str,
        canonical: &[u8],
    ) -> Result<String, String> {
        if seq < self.keyed_from {
            return Ok(super::record::chain_hash(prev_hash, canonical));
        }
        match &self.key {
            Some(key) => Ok(key.chain(prev_hash, canonical)),
            None => Err(String::from(
                "keyed event and no chain key to check it (run as praxisd's user)",
            )),
        }
    }
}

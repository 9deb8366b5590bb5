//! Chain verification: the full walk behind `praxis audit verify`, and the
//! cheap head check done at open.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::error::AuditError;
use super::head::Head;
use super::key::Chain;
use super::record::{GENESIS, RECORD_LEN, SELECT_LIST, canonical, read_values};

/// The result of walking the chain.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// True when every event links and hashes correctly and none is missing.
    pub ok: bool,
    /// Events found intact before the first break (all of them when `ok`).
    pub events_checked: u64,
    /// The first `seq` that is missing or does not verify.
    pub first_broken: Option<i64>,
    /// Why that `seq` is broken, one line.
    pub problem: Option<String>,
}

impl VerifyReport {
    fn broken(events_checked: u64, seq: i64, problem: String) -> VerifyReport {
        VerifyReport {
            ok: false,
            events_checked,
            first_broken: Some(seq),
            problem: Some(problem),
        }
    }
}

/// Walks every event from seq 1 in one read snapshot. `committed` is the head
/// the live writer last committed, if any: rows behind it cannot have
/// vanished or changed.
pub(crate) fn verify(
    conn: &Connection,
    committed: Option<&Head>,
    chain: &Chain,
) -> Result<VerifyReport, AuditError> {
    let snapshot = conn.unchecked_transaction()?;
    let mut stmt =
        snapshot.prepare(&format!("SELECT {} FROM events ORDER BY seq", *SELECT_LIST))?;
    let mut rows = stmt.query([])?;
    let mut prev = GENESIS.to_owned();
    let mut checked: u64 = 0;
    let mut expected: i64 = 1;
    while let Some(row) = rows.next()? {
        let (record, hash) = read_values(row)?;
        let hash = match check_row(expected, &prev, &record, hash, chain) {
            Ok(hash) => hash,
            Err(problem) => return Ok(VerifyReport::broken(checked, expected, problem)),
        };
        if let Some(head) = committed.filter(|head| head.seq == expected)
            && head.hash != hash
        {
            return Ok(VerifyReport::broken(
                checked,
                expected,
                "hash differs from the one committed by this daemon (row rewritten)".into(),
            ));
        }
        prev = hash;
        checked += 1;
        expected += 1;
    }
    let last = expected - 1;
    let recorded = highest_recorded_seq(&snapshot)?.max(committed.map_or(0, |head| head.seq));
    if recorded > last {
        return Ok(VerifyReport::broken(
            checked,
            last + 1,
            format!(
                "events {} to {recorded} are missing from the end of the log",
                last + 1
            ),
        ));
    }
    Ok(VerifyReport {
        ok: true,
        events_checked: checked,
        first_broken: None,
        problem: None,
    })
}

/// Reads and checks the last event, the one the next append chains onto.
/// Refuses a head whose hash does not recompute, or a log whose end was cut.
pub(crate) fn load_head(conn: &Connection, chain: &Chain) -> Result<Head, AuditError> {
    let last = conn
        .query_row(
            &format!(
                "SELECT {} FROM events ORDER BY seq DESC LIMIT 1",
                *SELECT_LIST
            ),
            [],
            read_values,
        )
        .optional()?;
    let recorded = highest_recorded_seq(conn)?;
    let Some((record, hash)) = last else {
        if recorded > 0 {
            return Err(AuditError::HeadBroken {
                seq: 1,
                problem: "every event is missing".into(),
            });
        }
        return Ok(Head {
            seq: 0,
            hash: GENESIS.to_owned(),
        });
    };
    let (seq, prev) = match (&record[0], &record[RECORD_LEN - 1]) {
        (Value::Integer(seq), Value::Text(prev)) => (*seq, prev.clone()),
        _ => {
            return Err(AuditError::HeadBroken {
                seq: 0,
                problem: "last row is malformed".into(),
            });
        }
    };
    let hash = check_row(seq, &prev, &record, hash, chain)
        .map_err(|problem| AuditError::HeadBroken { seq, problem })?;
    if recorded > seq {
        return Err(AuditError::HeadBroken {
            seq: seq + 1,
            problem: format!(
                "events {} to {recorded} are missing from the end of the log",
                seq + 1
            ),
        });
    }
    Ok(Head { seq, hash })
}

/// Checks one row against the expected `seq` and the previous hash; returns
/// the row's (verified) hash.
fn check_row(
    expected: i64,
    prev: &str,
    record: &[Value],
    hash: Value,
    chain: &Chain,
) -> Result<String, String> {
    match &record[0] {
        Value::Integer(seq) if *seq == expected => {}
        Value::Integer(seq) if *seq > expected => {
            return Err(format!(
                "seq {expected} is missing (next stored seq is {seq})"
            ));
        }
        other => return Err(format!("unexpected seq value {other:?}")),
    }
    match &record[RECORD_LEN - 1] {
        Value::Text(stored) if stored == prev => {}
        _ if expected == 1 => return Err("prev_hash is not the genesis value".into()),
        _ => {
            return Err(format!(
                "prev_hash does not match the hash of seq {}",
                expected - 1
            ));
        }
    }
    let computed = chain.hash(expected, prev, &canonical(record)?)?;
    match hash {
        Value::Text(stored) if stored == computed => Ok(stored),
        Value::Text(_) => Err("hash mismatch: the row's content was changed".into()),
        _ => Err("hash is not text".into()),
    }
}

/// The highest `seq` SQLite ever assigned to `events` (0 if none).
fn highest_recorded_seq(conn: &Connection) -> Result<i64, AuditError> {
    Ok(conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
            [],
            |row| row.get(0),
        )
        .optional()?
        .unwrap_or(0))
}

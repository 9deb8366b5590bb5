//! The row layout of `events`, the canonical record and the chain hash.
//!
//! Appending and verifying share this code: an event becomes a list of SQLite
//! values in [`COLUMNS`] order, and the canonical record is computed from those
//! values, so the verifier hashes exactly what was stored.

use std::sync::LazyLock;

use rusqlite::types::Value;
use sha2::{Digest, Sha256};

use super::error::AuditError;
use super::event::{Event, EventKind, StoredEvent};

/// `prev_hash` of the first event.
pub(crate) const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The columns of `events`, in table order. `hash` is last and is the only
/// column not covered by the canonical record.
pub(crate) const COLUMNS: [&str; 30] = [
    "seq",
    "ts",
    "kind",
    "request_id",
    "session",
    "role",
    "uid",
    "pid",
    "runtime",
    "cwd",
    "argv_redacted",
    "arguments_digest",
    "tier",
    "decision",
    "reason",
    "rule_ids",
    "policy_revision",
    "profile",
    "exit_code",
    "signal",
    "duration_ms",
    "stdout_bytes",
    "stderr_bytes",
    "output_digest",
    "truncated",
    "approval_id",
    "credentials",
    "detail",
    "prev_hash",
    "hash",
];

/// Number of columns in the canonical record (all but `hash`).
pub(crate) const RECORD_LEN: usize = COLUMNS.len() - 1;

/// Indices into a record, ordered by column name (byte order).
static SORTED: LazyLock<Vec<usize>> = LazyLock::new(|| {
    let mut order: Vec<usize> = (0..RECORD_LEN).collect();
    order.sort_by_key(|&i| COLUMNS[i]);
    order
});

/// The insert of one full row, every column in table order.
pub(crate) static INSERT: LazyLock<String> = LazyLock::new(|| {
    let placeholders: Vec<String> = (1..=COLUMNS.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO events ({}) VALUES ({})",
        COLUMNS.join(", "),
        placeholders.join(", ")
    )
});

/// Comma-separated column list for SELECTs, in table order.
pub(crate) static SELECT_LIST: LazyLock<String> = LazyLock::new(|| COLUMNS.join(", "));

/// The stored values of one event, `seq` through `prev_hash`.
pub(crate) fn record_of(
    event: &Event,
    seq: i64,
    ts: &str,
    prev_hash: &str,
) -> Result<Vec<Value>, AuditError> {
    fn text(v: &Option<String>) -> Value {
        v.as_ref().map_or(Value::Null, |s| Value::Text(s.clone()))
    }
    fn int<T: TryInto<i64> + Copy>(v: Option<T>, field: &'static str) -> Result<Value, AuditError> {
        v.map_or(Ok(Value::Null), |n| {
            n.try_into()
                .map(Value::Integer)
                .map_err(|_| AuditError::OutOfRange { field })
        })
    }
    fn json<T: serde::Serialize>(v: &Option<T>) -> Result<Value, AuditError> {
        v.as_ref().map_or(Ok(Value::Null), |v| {
            serde_json::to_string(v)
                .map(Value::Text)
                .map_err(AuditError::Json)
        })
    }
    let values = vec![
        Value::Integer(seq),
        Value::Text(ts.to_owned()),
        Value::Text(event.kind.as_str().to_owned()),
        text(&event.request_id),
        text(&event.session),
        text(&event.role),
        int(event.uid, "uid")?,
        int(event.pid, "pid")?,
        text(&event.runtime),
        text(&event.cwd),
        json(&event.argv_redacted)?,
        text(&event.arguments_digest),
        text(&event.tier),
        text(&event.decision),
        text(&event.reason),
        json(&event.rule_ids)?,
        text(&event.policy_revision),
        text(&event.profile),
        int(event.exit_code, "exit_code")?,
        int(event.signal, "signal")?,
        int(event.duration_ms, "duration_ms")?,
        int(event.stdout_bytes, "stdout_bytes")?,
        int(event.stderr_bytes, "stderr_bytes")?,
        text(&event.output_digest),
        int(event.truncated.map(i64::from), "truncated")?,
        text(&event.approval_id),
        json(&event.credentials)?,
        json(&event.detail)?,
        Value::Text(prev_hash.to_owned()),
    ];
    debug_assert_eq!(values.len(), RECORD_LEN);
    Ok(values)
}

/// The canonical record of a row: a compact JSON object over every column but
/// `hash`, keys in byte order, values as stored. Fails on a value of a type the
/// schema does not allow (REAL, BLOB), which only a tampered row can hold.
pub(crate) fn canonical(record: &[Value]) -> Result<Vec<u8>, String> {
    canonical_without(record, &[]).map(|(out, _)| out)
}

/// Where the left-out values of a canonical record go, in text order: the
/// offset in the text and the column.
type Cuts = Vec<(usize, usize)>;

/// The canonical record with the values of the columns `open` left out, and
/// where they go.
fn canonical_without(record: &[Value], open: &[usize]) -> Result<(Vec<u8>, Cuts), String> {
    if record.len() != RECORD_LEN {
        return Err(format!(
            "row has {} columns, expected {RECORD_LEN}",
            record.len()
        ));
    }
    let mut out = Vec::with_capacity(1024);
    let mut cuts = Vec::with_capacity(open.len());
    out.push(b'{');
    for (n, &i) in SORTED.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(COLUMNS[i].as_bytes());
        out.extend_from_slice(b"\":");
        if open.contains(&i) {
            cuts.push((out.len(), i));
        } else {
            write_value(&mut out, &record[i], i)?;
        }
    }
    out.push(b'}');
    Ok((out, cuts))
}

/// Writes one value of column `column` as the canonical record holds it.
fn write_value(out: &mut Vec<u8>, value: &Value, column: usize) -> Result<(), String> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Integer(v) => out.extend_from_slice(v.to_string().as_bytes()),
        Value::Text(s) => serde_json::to_writer(out, s).map_err(|e| e.to_string())?,
        Value::Real(_) | Value::Blob(_) => {
            return Err(format!(
                "column {} holds a value of a foreign type",
                COLUMNS[column]
            ));
        }
    }
    Ok(())
}

/// The columns only the writer knows, in [`COLUMNS`] order: `seq`, `ts`,
/// `prev_hash`.
const PLACE: [usize; 3] = [0, 1, RECORD_LEN - 1];

/// An event's stored values and canonical record with its place in the chain
/// (`seq`, `ts`, `prev_hash`) still open. The appender builds it before it
/// queues it, so the leader, which every append of a batch waits on, only
/// fills in the place and hashes.
pub(crate) struct Unplaced {
    values: Vec<Value>,
    canonical: Vec<u8>,
    cuts: Cuts,
}

/// An [`Unplaced`] record given its place: the values to insert and the
/// canonical record to hash.
pub(crate) struct Placed<'a> {
    place: [Value; 3],
    values: &'a [Value],
    pub canonical: Vec<u8>,
}

impl Unplaced {
    pub(crate) fn of(event: &Event) -> Result<Unplaced, AuditError> {
        let values = record_of(event, 0, "", "")?;
        let (canonical, cuts) = canonical_without(&values, &PLACE)
            .map_err(|problem| AuditError::Corrupt { seq: 0, problem })?;
        Ok(Unplaced {
            values,
            canonical,
            cuts,
        })
    }

    /// Bytes of its canonical record, about what its row takes.
    pub(crate) fn size(&self) -> u64 {
        self.canonical.len() as u64
    }

    /// The record as event `seq`, written at `ts`, chained onto `prev_hash`.
    pub(crate) fn place(&self, seq: i64, ts: &str, prev_hash: &str) -> Result<Placed<'_>, String> {
        let place = [
            Value::Integer(seq),
            Value::Text(ts.to_owned()),
            Value::Text(prev_hash.to_owned()),
        ];
        let mut canonical = Vec::with_capacity(self.canonical.len() + 128);
        let mut from = 0;
        for &(at, column) in &self.cuts {
            canonical.extend_from_slice(&self.canonical[from..at]);
            let slot = PLACE.iter().position(|&c| c == column).unwrap_or(0);
            write_value(&mut canonical, &place[slot], column)?;
            from = at;
        }
        canonical.extend_from_slice(&self.canonical[from..]);
        Ok(Placed {
            place,
            values: &self.values,
            canonical,
        })
    }
}

impl Unplaced {
    /// The full row of the record placed as event `seq` with `hash`: every
    /// column in [`COLUMNS`] order, `hash` last.
    pub(crate) fn into_row(
        self,
        seq: i64,
        ts: String,
        prev_hash: String,
        hash: String,
    ) -> Vec<Value> {
        let mut values = self.values;
        let place = [Value::Integer(seq), Value::Text(ts), Value::Text(prev_hash)];
        for (column, value) in PLACE.into_iter().zip(place) {
            values[column] = value;
        }
        values.push(Value::Text(hash));
        values
    }
}

impl Placed<'_> {
    /// The stored values, `seq` through `prev_hash`.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Value> {
        self.values
            .iter()
            .enumerate()
            .map(|(i, v)| match PLACE.iter().position(|&c| c == i) {
                Some(slot) => &self.place[slot],
                None => v,
            })
    }
}

/// `hex(SHA-256(prev_hash ‖ canonical))`, `prev_hash` as its 64 ASCII hex bytes.
pub(crate) fn chain_hash(prev_hash: &str, canonical: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev_hash.as_bytes());
    hasher.update(canonical);
    hex::encode(hasher.finalize())
}

/// Reads a full `events` row (selected as [`SELECT_LIST`]) as generic values:
/// the record and the stored hash.
pub(crate) fn read_values(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Vec<Value>, Value)> {
    let mut record = Vec::with_capacity(RECORD_LEN);
    for i in 0..RECORD_LEN {
        record.push(row.get::<_, Value>(i)?);
    }
    Ok((record, row.get::<_, Value>(RECORD_LEN)?))
}

/// Decodes a stored row back into a [`StoredEvent`].
pub(crate) fn stored_of(record: Vec<Value>, hash: Value) -> Result<StoredEvent, AuditError> {
    let seq = match record.first() {
        Some(Value::Integer(seq)) => *seq,
        _ => return Err(corrupt(0, "seq is not an integer")),
    };
    let mut cols = Columns {
        seq,
        values: record.into_iter().zip(COLUMNS),
    };
    cols.next_value()?; // seq, read above
    let ts = cols.required_text()?;
    let kind = EventKind::parse(&cols.required_text()?);
    let event = Event {
        kind,
        request_id: cols.text()?,
        session: cols.text()?,
        role: cols.text()?,
        uid: cols.int()?,
        pid: cols.int()?,
        runtime: cols.text()?,
        cwd: cols.text()?,
        argv_redacted: cols.json()?,
        arguments_digest: cols.text()?,
        tier: cols.text()?,
        decision: cols.text()?,
        reason: cols.text()?,
        rule_ids: cols.json()?,
        policy_revision: cols.text()?,
        profile: cols.text()?,
        exit_code: cols.int()?,
        signal: cols.int()?,
        duration_ms: cols.int()?,
        stdout_bytes: cols.int()?,
        stderr_bytes: cols.int()?,
        output_digest: cols.text()?,
        truncated: cols.int::<i64>()?.map(|v| v != 0),
        approval_id: cols.text()?,
        credentials: cols.json()?,
        detail: cols.json()?,
    };
    let prev_hash = cols.required_text()?;
    let hash = match hash {
        Value::Text(hash) => hash,
        _ => return Err(corrupt(seq, "hash is not text")),
    };
    Ok(StoredEvent {
        seq,
        ts,
        event,
        prev_hash,
        hash,
    })
}

fn corrupt(seq: i64, problem: impl Into<String>) -> AuditError {
    AuditError::Corrupt {
        seq,
        problem: problem.into(),
    }
}

/// Walks a record's values in column order, decoding each by its expected type.
struct Columns<I> {
    seq: i64,
    values: I,
}

impl<I: Iterator<Item = (Value, &'static str)>> Columns<I> {
    fn next_value(&mut self) -> Result<(Value, &'static str), AuditError> {
        self.values
            .next()
            .ok_or_else(|| corrupt(self.seq, "row is missing columns"))
    }

    fn text(&mut self) -> Result<Option<String>, AuditError> {
        match self.next_value()? {
            (Value::Null, _) => Ok(None),
            (Value::Text(s), _) => Ok(Some(s)),
            (_, name) => Err(corrupt(self.seq, format!("{name} is not text"))),
        }
    }

    fn required_text(&mut self) -> Result<String, AuditError> {
        match self.next_value()? {
            (Value::Text(s), _) => Ok(s),
            (_, name) => Err(corrupt(self.seq, format!("{name} is not text"))),
        }
    }
    fn int<T: TryFrom<i64>>(&mut self) -> Result<Option<T>, AuditError> {
        match self.next_value()? {
            (Value::Null, _) => Ok(None),
            (Value::Integer(n), name) => T::try_from(n)
                .map(Some)
                .map_err(|_| corrupt(self.seq, format!("{name} is out of range"))),
            (_, name) => Err(corrupt(self.seq, format!("{name} is not an integer"))),
        }
    }

    fn json<T: serde::de::DeserializeOwned>(&mut self) -> Result<Option<T>, AuditError> {
        match self.next_value()? {
            (Value::Null, _) => Ok(None),
            (Value::Text(s), name) => serde_json::from_str(&s)
                .map(Some)
                .map_err(|e| corrupt(self.seq, format!("{name} is not valid JSON: {e}"))),
            (_, name) => Err(corrupt(self.seq, format!("{name} is not text"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_record_is_sorted_compact_json_with_explicit_nulls() {
        let event = Event {
            argv_redacted: Some(vec!["echo".into(), "a\"b\n".into()]),
            exit_code: Some(-1),
            truncated: Some(true),
            ..Event::new(EventKind::Finished)
        };
        let record = record_of(&event, 7, "2025-01-01T00:00:00.000Z", GENESIS).unwrap();
        let text = String::from_utf8(canonical(&record).unwrap()).unwrap();
        assert!(
            text.starts_with(r#"{"approval_id":null,"arguments_digest":null,"argv_redacted":"[\"echo\",\"a\\\"b\\n\"]","#)
        );
        assert!(text.contains(r#""exit_code":-1,"#));
        assert!(text.contains(r#""seq":7,"#));
        assert!(text.contains(r#""truncated":1,"#));
        assert!(text.ends_with(r#""uid":null}"#));
        // Every record column appears exactly once and `hash` not at all.
        let parsed: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(parsed.len(), RECORD_LEN);
        assert!(!parsed.contains_key("hash"));
    }

    #[test]
    fn chain_hash_is_sha256_of_prev_hash_then_record() {
        // Reference value: sha256 over 64 ASCII zeros followed by "{}".
        assert_eq!(
            chain_hash(GENESIS, b"{}"),
            "5508d2b710e64bc470079e1b211d9c58e21011e59d0559e422345dc19d659a75"
        );
    }

    #[test]
    fn record_decodes_back_to_the_event() {
        let mut detail = serde_json::Map::new();
        detail.insert("note".into(), serde_json::json!({"nested": [1, 2]}));
        let event = Event {
            request_id: Some("r1".into()),
            uid: Some(u32::MAX),
            stdout_bytes: Some(1 << 40),
            rule_ids: Some(vec![]),
            credentials: Some(vec!["GH_TOKEN".into()]),
            detail: Some(detail),
            truncated: Some(false),
            ..Event::new(EventKind::Other("future_kind".into()))
        };
        let record = record_of(&event, 1, "ts", GENESIS).unwrap();
        let stored = stored_of(record, Value::Text("h".into())).unwrap();
        assert_eq!(stored.event, event);
        assert_eq!(
            (stored.seq, stored.ts.as_str(), stored.hash.as_str()),
            (1, "ts", "h")
        );
    }

    #[test]
    fn a_record_placed_later_is_the_record_built_in_place() {
        let event = Event {
            argv_redacted: Some(vec!["echo".into(), "\u{1}é".into()]),
            exit_code: Some(-3),
            ..Event::new(EventKind::Finished)
        };
        let ts = "2025-01-01T00:00:00.000Z";
        let record = record_of(&event, 42, ts, &"ab".repeat(32)).unwrap();
        let unplaced = Unplaced::of(&event).unwrap();
        let placed = unplaced.place(42, ts, &"ab".repeat(32)).unwrap();
        assert_eq!(placed.canonical, canonical(&record).unwrap());
        assert!(placed.values().eq(record.iter()));
    }

    #[test]
    fn foreign_types_are_not_canonical() {
        let mut record = record_of(&Event::new(EventKind::Kill), 1, "ts", GENESIS).unwrap();
        record[14] = Value::Real(1.5);
        assert!(canonical(&record).unwrap_err().contains("reason"));
    }
}

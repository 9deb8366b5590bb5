//! Audit store behaviour through its public API, with tampering done the way
//! an attacker with file access would: a raw SQLite connection.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use praxis_daemon::store::audit::{
    AuditError, AuditStore, Durability, Event, EventKind, StoredEvent, TxOp, verify_file,
};
use rusqlite::Connection;
use serde_json::json;
use sha2::Sha256;

const APPROVALS: &str = "CREATE TABLE IF NOT EXISTS approvals (id TEXT PRIMARY KEY, consumed INTEGER NOT NULL DEFAULT 0)";

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    (dir, path)
}

fn decided(n: usize) -> Event {
    Event {
        request_id: Some(format!("req-{n}")),
        session: Some("s1".into()),
        role: Some("agent".into()),
        uid: Some(1000),
        pid: Some(4242),
        cwd: Some("/home/dev/project".into()),
        argv_redacted: Some(vec!["git".into(), "push".into(), "[REDACTED]".into()]),
        arguments_digest: Some("ab".repeat(32)),
        tier: Some("external_side_effect".into()),
        decision: Some(if n.is_multiple_of(2) { "ALLOW" } else { "HOLD" }.into()),
        reason: Some(format!("reason {n}")),
        rule_ids: Some(vec!["hold.git_push".into()]),
        policy_revision: Some("rev1".into()),
        profile: Some("workspace-write".into()),
        ..Event::new(EventKind::Decided)
    }
}

fn fill(store: &AuditStore, n: usize) {
    for i in 1..=n {
        let appended = store.append(decided(i), Durability::Normal).unwrap();
        assert_eq!(appended.seq, i as i64);
    }
    // The tests edit the file as an outsider: it must hold the events.
    assert_eq!(store.in_file().0, n as i64);
}

/// Runs SQL on the file as an outsider would.
fn tamper(path: &Path, sql: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
}

fn seqs(events: &[StoredEvent]) -> Vec<i64> {
    events.iter().map(|e| e.seq).collect()
}

#[test]
fn append_then_verify_round_trip() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 10);
    let report = store.verify().unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.events_checked, 10);
    assert_eq!(report.first_broken, None);

    let tail = store.tail(3).unwrap();
    assert_eq!(seqs(&tail), [8, 9, 10]);
    assert_eq!(tail[2].event, decided(10));
    assert_eq!(tail[1].hash, tail[2].prev_hash);
    assert_eq!(seqs(&store.after(4, 2).unwrap()), [5, 6]);
    assert_eq!(seqs(&store.by_request("req-7").unwrap()), [7]);
    assert_eq!(store.tail(100).unwrap().len(), 10);
    assert_eq!(store.tail(100).unwrap()[0].prev_hash, "0".repeat(64));
}

#[test]
fn database_file_is_private_and_in_wal_mode() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 1);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let mode: String = store
        .read(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0)))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_large_wal_is_checkpointed_in_the_background() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    let main_size = || std::fs::metadata(&path).unwrap().len();
    let wal_size = || std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());
    let before = main_size();
    // Past the WAL limit of the background thread (4 MiB), far below the
    // writer's own checkpoint threshold (64 MiB), so only the background
    // thread moves these pages into the main file.
    let mut n = 0;
    while wal_size() <= 4 << 20 {
        n += 1;
        let appended = store.append(decided(n), Durability::Normal).unwrap();
        assert_eq!(appended.seq, n as i64);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while main_size() <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint within 10 s"
        );
        thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_small_wal_is_not_checkpointed_after_a_pause() {
    // A complete checkpoint makes the next commit restart the WAL and fsync
    // its header inside that commit: after every pause, the next command
    // would pay it. A small WAL stays as it is (synced, not copied back).
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 20);
    let main_size = || std::fs::metadata(&path).unwrap().len();
    let before = main_size();
    thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(main_size(), before, "the WAL was checkpointed at a pause");
}

#[test]
fn tampered_reason_or_decision_names_that_seq() {
    for column in ["reason", "decision"] {
        let (_dir, path) = scratch();
        let store = AuditStore::open(&path).unwrap();
        fill(&store, 10);
        tamper(
            &path,
            &format!(
                "DROP TRIGGER events_no_update; UPDATE events SET {column} = 'edited' WHERE seq = 5;"
            ),
        );
        for report in [store.verify().unwrap(), verify_file(&path).unwrap()] {
            assert!(!report.ok);
            assert_eq!(report.first_broken, Some(5), "{column}: {report:?}");
            assert_eq!(report.events_checked, 4);
            assert!(report.problem.unwrap().contains("hash mismatch"));
        }
    }
}

#[test]
fn tampered_prev_hash_is_named() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 10);
    let forged = "f".repeat(64);
    tamper(
        &path,
        &format!(
            "DROP TRIGGER events_no_update; UPDATE events SET prev_hash = '{forged}' WHERE seq = 5;"
        ),
    );
    let report = verify_file(&path).unwrap();
    assert_eq!(report.first_broken, Some(5));
    assert!(
        report.problem.unwrap().contains("prev_hash"),
        "prev_hash tamper not named"
    );
}

/// The documented hash, computed independently of the store's code: a
/// sorted JSON object of the stored row (minus `hash`), prefixed by `prev_hash`.
/// The row's `prev_hash`, its canonical record as the module docs define it,
/// and its stored hash.
fn canonical_row(conn: &Connection, seq: i64) -> (String, String, String) {
    use rusqlite::types::Value;
    let mut stmt = conn.prepare("SELECT * FROM events WHERE seq = ?1").unwrap();
    let names: Vec<String> = stmt.column_names().map(String::from).collect();
    stmt.query_row([seq], |row| {
        let mut fields = std::collections::BTreeMap::new();
        let mut stored = String::new();
        for (i, name) in names.iter().enumerate() {
            let value = match row.get::<_, Value>(i)? {
                Value::Null => serde_json::Value::Null,
                Value::Integer(n) => json!(n),
                Value::Text(s) if name == "hash" => {
                    stored = s;
                    continue;
                }
                Value::Text(s) => json!(s),
                other => panic!("unexpected stored type {other:?}"),
            };
            fields.insert(name.clone(), value);
        }
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}:{}",
                    serde_json::to_string(k).unwrap(),
                    serde_json::to_string(v).unwrap()
                )
            })
            .collect();
        let prev = fields["prev_hash"].as_str().unwrap().to_owned();
        Ok((prev, format!("{{{}}}", body.join(",")), stored))
    })
    .unwrap()
}

/// HMAC-SHA256 under the store's key (`audit.key`) of `prev_hash ‖ record`,
/// and the stored hash.
fn documented_hash(conn: &Connection, path: &Path, seq: i64) -> (String, String) {
    use hmac::{Hmac, Mac};
    let key = std::fs::read(path.with_file_name("audit.key")).unwrap();
    let (prev, canonical, stored) = canonical_row(conn, seq);
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{prev}{canonical}").as_bytes());
    (hex::encode(mac.finalize().into_bytes()), stored)
}

/// Plain SHA-256 of `prev_hash ‖ record`: what someone without the key computes.
fn unkeyed_hash(conn: &Connection, seq: i64) -> String {
    use sha2::Digest;
    let (prev, canonical, _) = canonical_row(conn, seq);
    hex::encode(Sha256::digest(format!("{prev}{canonical}").as_bytes()))
}

#[test]
fn hashes_follow_the_documented_format() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 3);
    let event = Event {
        detail: Some(json!({"k": "tab\t ü"}).as_object().unwrap().clone()),
        ..Event::new(EventKind::Reload)
    };
    assert_eq!(store.append(event, Durability::Normal).unwrap().seq, 4);
    assert_eq!(store.in_file().0, 4);
    let conn = Connection::open(&path).unwrap();
    for seq in 1..=4 {
        let (computed, stored) = documented_hash(&conn, &path, seq);
        assert_eq!(computed, stored, "seq {seq}");
    }
}

#[test]
fn forged_row_with_recomputed_hash_breaks_the_next_link() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 10);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TRIGGER events_no_update; UPDATE events SET decision = 'ALLOW' WHERE seq = 5;",
    )
    .unwrap();
    let (forged, _) = documented_hash(&conn, &path, 5);
    conn.execute("UPDATE events SET hash = ?1 WHERE seq = 5", [&forged])
        .unwrap();
    let report = store.verify().unwrap();
    assert_eq!(report.first_broken, Some(6), "{report:?}");
    assert!(
        report
            .problem
            .unwrap()
            .contains("prev_hash does not match the hash of seq 5")
    );
}

#[test]
fn deleted_row_is_reported_as_a_gap() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 10);
    tamper(
        &path,
        "DROP TRIGGER events_no_delete; DELETE FROM events WHERE seq = 5;",
    );
    let report = store.verify().unwrap();
    assert_eq!(report.first_broken, Some(5));
    assert!(report.problem.unwrap().contains("seq 5 is missing"));
}

#[test]
fn rows_cut_from_the_end_are_reported() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 10);
    tamper(
        &path,
        "DROP TRIGGER events_no_delete; DELETE FROM events WHERE seq >= 9;",
    );
    // The live store remembers what it committed; the file alone still has
    // sqlite_sequence.
    for report in [store.verify().unwrap(), verify_file(&path).unwrap()] {
        assert_eq!(report.first_broken, Some(9), "{report:?}");
    }
    drop(store);
    // Reopened, it is kept as it is and takes nothing more.
    let reopened = AuditStore::open(&path).unwrap();
    let why = reopened.lost().expect("a cut store is not trusted");
    assert!(why.contains("seq 9"), "{why}");
    assert!(matches!(
        reopened.append(decided(11), Durability::Normal),
        Err(AuditError::Lost(_))
    ));
}

#[test]
fn update_and_delete_are_refused_while_triggers_stand() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 3);
    let conn = Connection::open(&path).unwrap();
    for sql in [
        "UPDATE events SET reason = 'x' WHERE seq = 2",
        "DELETE FROM events WHERE seq = 2",
    ] {
        let err = conn.execute(sql, []).unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    assert!(store.verify().unwrap().ok);
}

#[test]
fn reopening_restores_dropped_triggers() {
    let (_dir, path) = scratch();
    fill(&AuditStore::open(&path).unwrap(), 2);
    tamper(
        &path,
        "DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;",
    );
    let _store = AuditStore::open(&path).unwrap();
    let conn = Connection::open(&path).unwrap();
    assert!(
        conn.execute("DELETE FROM events WHERE seq = 1", [])
            .is_err()
    );
}

#[test]
fn tampered_head_is_kept_but_takes_nothing() {
    let (_dir, path) = scratch();
    fill(&AuditStore::open(&path).unwrap(), 4);
    tamper(
        &path,
        "DROP TRIGGER events_no_update; UPDATE events SET reason = 'x' WHERE seq = 4;",
    );
    let store = AuditStore::open(&path).unwrap();
    let why = store.lost().expect("a forged head is not trusted");
    assert!(why.contains("seq 4") && why.contains("hash"), "{why}");
    assert!(matches!(
        store.append(decided(5), Durability::Normal),
        Err(AuditError::Lost(_))
    ));
    assert!(!store.verify().unwrap().ok);
}

#[test]
fn a_chain_recomputed_without_the_key_fails_verify() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 6);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TRIGGER events_no_update; UPDATE events SET reason = 'x' WHERE seq = 3;",
    )
    .unwrap();
    // Recompute seq 3 on with plain SHA-256, as the unkeyed format would.
    for seq in 3..=6 {
        let prev: String = conn
            .query_row("SELECT hash FROM events WHERE seq = ?1", [seq - 1], |r| {
                r.get(0)
            })
            .unwrap();
        conn.execute(
            "UPDATE events SET prev_hash = ?1 WHERE seq = ?2",
            rusqlite::params![prev, seq],
        )
        .unwrap();
        let unkeyed = unkeyed_hash(&conn, seq);
        conn.execute(
            "UPDATE events SET hash = ?1 WHERE seq = ?2",
            rusqlite::params![unkeyed, seq],
        )
        .unwrap();
    }
    for report in [store.verify().unwrap(), verify_file(&path).unwrap()] {
        assert_eq!(report.first_broken, Some(3), "{report:?}");
    }
}

/// Passes only if the batch transaction runs at `synchronous = level`.
fn expect_synchronous(level: i64) -> TxOp {
    Box::new(move |tx| {
        let got: i64 = tx
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        if got == level {
            Ok(())
        } else {
            Err(format!("synchronous is {got}, wanted {level}"))
        }
    })
}

#[test]
fn durability_selects_the_synchronous_level_per_batch() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    // SQLite numbers NORMAL 1 and FULL 2.
    let levels = [
        (Durability::Full, 2),
        (Durability::Normal, 1),
        (Durability::Full, 2),
    ];
    for (seq, (durability, level)) in (1..).zip(levels) {
        let event = Event::new(EventKind::Started);
        let appended = store
            .append_with(event, durability, expect_synchronous(level))
            .unwrap();
        assert_eq!(appended.seq, seq);
    }
}

#[test]
fn concurrent_appenders_get_contiguous_seqs_and_a_valid_chain() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    let per_thread = 50;
    let handles: Vec<_> = (0..64)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                (0..per_thread)
                    .map(|i| {
                        let durability = if (t + i) % 7 == 0 {
                            Durability::Full
                        } else {
                            Durability::Normal
                        };
                        store.append(decided(t * 1000 + i), durability).unwrap().seq
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all = BTreeSet::new();
    for handle in handles {
        let got = handle.join().unwrap();
        // Each thread's appends are ordered in the chain as it made them.
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        all.extend(got);
    }
    let total = 64 * per_thread as i64;
    assert_eq!(all, (1..=total).collect::<BTreeSet<_>>());
    let report = store.verify().unwrap();
    assert!(
        report.ok && report.events_checked == total as u64,
        "{report:?}"
    );
}

fn insert_approval(id: &'static str) -> TxOp {
    Box::new(move |tx| {
        tx.execute("INSERT INTO approvals (id) VALUES (?1)", [id])
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

fn approvals(store: &AuditStore) -> Vec<String> {
    store
        .read(|c| {
            let mut stmt = c.prepare("SELECT id FROM approvals ORDER BY id")?;
            stmt.query_map([], |r| r.get(0))?.collect()
        })
        .unwrap()
}

#[test]
fn failing_hook_rolls_back_only_its_event() {
    let (_dir, path) = scratch();
    let store = AuditStore::open_with_schema(&path, &[APPROVALS]).unwrap();
    fill(&store, 2);
    let op: TxOp = Box::new(|tx| {
        tx.execute("INSERT INTO approvals (id) VALUES ('half-done')", [])
            .map_err(|e| e.to_string())?;
        Err("approval already consumed".into())
    });
    match store.append_with(
        Event::new(EventKind::ApprovalConsumed),
        Durability::Full,
        op,
    ) {
        Err(AuditError::Rejected(reason)) => assert_eq!(reason, "approval already consumed"),
        other => panic!("hook failure not reported: {other:?}"),
    }
    assert!(
        approvals(&store).is_empty(),
        "hook's write survived its rejection"
    );
    // The rejected event used no seq.
    assert_eq!(store.append(decided(3), Durability::Normal).unwrap().seq, 3);
    assert!(store.verify().unwrap().ok);
}

#[test]
fn hook_and_event_share_one_transaction() {
    let (_dir, path) = scratch();
    let store = AuditStore::open_with_schema(&path, &[APPROVALS]).unwrap();
    // The hook succeeds, then the event cannot be stored: the hook's row must
    // go with it.
    let unstorable = Event {
        duration_ms: Some(u64::MAX),
        ..Event::new(EventKind::Finished)
    };
    let err = store
        .append_with(unstorable, Durability::Normal, insert_approval("a1"))
        .unwrap_err();
    assert!(
        matches!(
            err,
            AuditError::OutOfRange {
                field: "duration_ms"
            }
        ),
        "{err}"
    );
    assert!(approvals(&store).is_empty());

    let appended = store
        .append_with(
            Event::new(EventKind::ApprovalConsumed),
            Durability::Full,
            insert_approval("a2"),
        )
        .unwrap();
    assert_eq!(appended.seq, 1);
    assert_eq!(approvals(&store), ["a2"]);
}

#[test]
fn racing_hooks_reject_individually_within_batches() {
    let (_dir, path) = scratch();
    let store = AuditStore::open_with_schema(&path, &[APPROVALS]).unwrap();
    // 32 threads race to consume 8 approvals; the primary key lets exactly
    // one consumer of each id through, whatever batches the writer forms.
    let handles: Vec<_> = (0..32)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                let id: &'static str = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"][t % 8];
                let event = Event {
                    approval_id: Some(id.into()),
                    ..Event::new(EventKind::ApprovalConsumed)
                };
                let consumed = store.append_with(event, Durability::Full, insert_approval(id));
                let plain = store.append(decided(t), Durability::Normal);
                (consumed.is_ok(), plain.is_ok())
            })
        })
        .collect();
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(outcomes.iter().filter(|(consumed, _)| *consumed).count(), 8);
    assert!(outcomes.iter().all(|(_, plain)| *plain));
    assert_eq!(approvals(&store).len(), 8);
    assert_eq!(store.tail(1000).unwrap().len(), 8 + 32);
    assert!(store.verify().unwrap().ok);
}

#[test]
fn detail_and_optional_fields_round_trip() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    let detail = json!({
        "note": "line\nbreak \"quoted\" \u{0007} é 漢字",
        "nested": {"list": [1, -2, 3.5, null, true]},
    });
    let event = Event {
        detail: Some(detail.as_object().unwrap().clone()),
        exit_code: Some(-1),
        signal: Some(9),
        duration_ms: Some(1234),
        stdout_bytes: Some(1 << 33),
        stderr_bytes: Some(0),
        output_digest: Some("cd".repeat(32)),
        truncated: Some(true),
        approval_id: Some("ap-1".into()),
        credentials: Some(vec!["GH_TOKEN".into()]),
        runtime: Some("claude-code".into()),
        ..Event::new(EventKind::Other("lesson_proposed".into()))
    };
    let appended = store.append(event.clone(), Durability::Normal).unwrap();
    let stored = store.tail(1).unwrap().remove(0);
    assert_eq!(stored.event, event);
    assert_eq!(
        (stored.seq, stored.ts, stored.hash),
        (appended.seq, appended.ts, appended.hash)
    );
    assert!(verify_file(&path).unwrap().ok);
}

#[test]
fn export_writes_one_json_object_per_line() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 5);
    let mut out = Vec::new();
    assert_eq!(store.export_jsonl(None, &mut out).unwrap(), 5);
    let lines: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["seq"], 1);
    assert_eq!(lines[0]["kind"], "decided");
    assert_eq!(lines[0]["rule_ids"], json!(["hold.git_push"]));
    assert_eq!(
        lines[0]["argv_redacted"],
        json!(["git", "push", "[REDACTED]"])
    );
    assert!(lines[0]["detail"].is_null());
    assert_eq!(lines[4]["prev_hash"], lines[3]["hash"]);

    let mut none = Vec::new();
    assert_eq!(
        store
            .export_jsonl(Some("2999-01-01T00:00:00+00:00"), &mut none)
            .unwrap(),
        0
    );
    assert!(none.is_empty());
    let mut all = Vec::new();
    assert_eq!(store.export_jsonl(Some("2000-01-01"), &mut all).unwrap(), 5);
    assert!(matches!(
        store.export_jsonl(Some("last tuesday"), &mut all),
        Err(AuditError::BadTimestamp(_))
    ));
}

#[test]
fn since_and_counts() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    fill(&store, 5);
    let kill = store
        .append(Event::new(EventKind::Kill), Durability::Full)
        .unwrap();
    assert_eq!(kill.seq, 6);
    let last = store.tail(1).unwrap().remove(0);
    assert_eq!(seqs(&store.since(&last.ts).unwrap()).last(), Some(&6));
    assert!(store.since("2999-01-01").unwrap().is_empty());
    let kinds = store.count_by_kind().unwrap();
    assert_eq!((kinds["decided"], kinds["kill"]), (5, 1));
    let decisions = store.count_by_decision().unwrap();
    assert_eq!((decisions["ALLOW"], decisions["HOLD"]), (2, 3));
}

#[test]
fn reopen_continues_the_chain() {
    let (_dir, path) = scratch();
    let first = AuditStore::open(&path).unwrap();
    fill(&first, 3);
    assert!(first.verify().unwrap().ok);
    drop(first);
    // The last connection closed checkpointed the log into the main file.
    let mut wal = path.clone().into_os_string();
    wal.push("-wal");
    assert!(!Path::new(&wal).exists(), "WAL left behind after close");
    let store = AuditStore::open(&path).unwrap();
    let appended = store.append(decided(4), Durability::Full).unwrap();
    assert_eq!(appended.seq, 4);
    let events = store.tail(2).unwrap();
    assert_eq!(events[1].prev_hash, events[0].hash);
    assert_eq!(appended.hash, events[1].hash);
    assert!(store.verify().unwrap().ok);
}

#[test]
fn readers_see_a_consistent_chain_during_writes() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..300 {
                    let _ = store
                        .append(decided(t * 1000 + i), Durability::Normal)
                        .unwrap();
                }
            })
        })
        .collect();
    let reader = {
        let store = store.clone();
        let done = Arc::clone(&done);
        thread::spawn(move || {
            let (mut seen, mut verifies) = (0i64, 0);
            while !done.load(Ordering::Acquire) || seen < 1200 {
                for event in store.after(seen, 64).unwrap() {
                    assert_eq!(event.seq, seen + 1, "watch skipped an event");
                    seen = event.seq;
                }
                let report = store.verify().unwrap();
                assert!(report.ok, "{report:?}");
                verifies += 1;
            }
            (seen, verifies)
        })
    };
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, Ordering::Release);
    let (seen, verifies) = reader.join().unwrap();
    assert_eq!(seen, 1200);
    assert!(verifies > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_appends_commit_before_returning() {
    let (_dir, path) = scratch();
    let store = AuditStore::open_with_schema(&path, &[APPROVALS]).unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move { store.append_async(decided(i), Durability::Normal).await })
        })
        .collect();
    for task in tasks {
        let appended = task.await.unwrap().unwrap();
        // Committed means visible to a fresh reader at once.
        assert_eq!(
            store.after(appended.seq - 1, 1).unwrap()[0].hash,
            appended.hash
        );
    }
    let approved = store
        .append_with_async(
            Event::new(EventKind::Approved),
            Durability::Full,
            insert_approval("x"),
        )
        .await
        .unwrap();
    assert_eq!(approved.seq, 17);
    assert_eq!(approvals(&store), ["x"]);
    assert!(store.verify().unwrap().ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_appends_keep_their_order_and_a_settled_read_sees_them() {
    let (_dir, path) = scratch();
    let store = AuditStore::open(&path).unwrap();
    // Queued now, awaited later: an answer can go out in between.
    let queued = store.queue_all((1..=40).map(|i| (decided(i), Durability::Normal)).collect());
    store.settled().await;
    let read = store.tail(100).unwrap();
    assert_eq!(seqs(&read), (1..=40).collect::<Vec<i64>>());
    assert_eq!(read[0].event.request_id.as_deref(), Some("req-1"));
    let outcomes = queued.committed().await;
    let committed: Vec<i64> = outcomes.into_iter().map(|o| o.unwrap().seq).collect();
    assert_eq!(committed, (1..=40).collect::<Vec<i64>>());
    // A barrier with nothing queued before it answers at once.
    store.settled().await;
    assert!(store.verify().unwrap().ok);
}

#[test]
fn offline_verify_of_a_missing_file_is_an_error() {
    let (_dir, path) = scratch();
    assert!(matches!(verify_file(&path), Err(AuditError::Sqlite(_))));
    assert!(!path.exists(), "offline verify must not create the store");
}

/// Where the killed appender writes, set only when the test below runs it.
const KILLED_APPENDER_DB: &str = "PRAXIS_TEST_KILLED_APPENDER_DB";

/// Run by [`an_appender_killed_mid_batch_loses_no_acknowledged_event`] as
/// its own process: appenders on 8 threads and one queue of batches append
/// until killed, printing `acked SEQ HASH REQUEST` once each append returned
/// and `inside` from within a transaction, right before holding it open.
#[test]
#[ignore = "a child process of the kill test, not a test by itself"]
fn killed_appender_child() {
    use std::io::Write;
    let Some(path) = std::env::var_os(KILLED_APPENDER_DB) else {
        return;
    };
    let store = AuditStore::open(PathBuf::from(path)).unwrap();
    let ack = |appended: &praxis_daemon::store::audit::Appended, request: &str| {
        let line = format!("acked {} {} {request}\n", appended.seq, appended.hash);
        std::io::stdout().lock().write_all(line.as_bytes()).unwrap();
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    thread::scope(|scope| {
        for t in 0..8 {
            let (store, ack) = (&store, &ack);
            scope.spawn(move || {
                for i in 0.. {
                    let n = t * 1_000_000 + i;
                    let request = format!("req-{n}");
                    // Every 50th append of thread 0 holds its batch open so
                    // the kill lands inside a transaction.
                    let appended = if t == 0 && i % 50 == 49 {
                        let hold: TxOp = Box::new(|_| {
                            std::io::stdout().lock().write_all(b"inside\n").unwrap();
                            thread::sleep(std::time::Duration::from_millis(20));
                            Ok(())
                        });
                        store.append_with(decided(n), Durability::Normal, hold)
                    } else {
                        store.append(decided(n), Durability::Normal)
                    };
                    ack(&appended.unwrap(), &request);
                }
            });
        }
        // Batches handed over at once, as an action and what came with it.
        scope.spawn(|| {
            for b in 0.. {
                let events: Vec<(Event, Durability)> = (0..16)
                    .map(|k| (decided(9_000_000 + b * 16 + k), Durability::Full))
                    .collect();
                let outcomes = runtime.block_on(store.queue_all(events).committed());
                for (k, outcome) in outcomes.iter().enumerate() {
                    ack(
                        outcome.as_ref().unwrap(),
                        &format!("req-{}", 9_000_000 + b * 16 + k),
                    );
                }
            }
        });
    });
}

/// `(seq, hash, request)` of an `acked` line of the killed appender.
fn acked(line: &str) -> Option<(i64, String, String)> {
    let mut fields = line.strip_prefix("acked ")?.split(' ');
    let seq = fields.next()?.parse().ok()?;
    Some((seq, fields.next()?.to_owned(), fields.next()?.to_owned()))
}

/// Runs the child test `child` on `path` (named in `env`), collects its
/// acknowledgements and SIGKILLs it at the first line `kill_at` picks (given
/// the line and how many were acknowledged before it); returns them all,
/// those written before the kill included, past 2 000.
fn kill_child(
    child: &str,
    env: &str,
    path: &Path,
    kill_at: impl Fn(&str, usize) -> bool,
) -> Vec<(i64, String, String)> {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", child, "--nocapture"])
        .env(env, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acknowledged = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let kill = kill_at(&line, acknowledged.len());
        acknowledged.extend(acked(&line));
        if kill {
            child.kill().unwrap();
            break;
        }
    }
    // Acknowledgements written before the kill count too.
    acknowledged.extend(lines.map_while(Result::ok).filter_map(|l| acked(&l)));
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    assert!(acknowledged.len() >= 2_000, "{}", acknowledged.len());
    acknowledged
}

/// Checks the reopened store at `path` verifies and holds each of
/// `acknowledged` at its seq and hash; returns the store.
fn holds_each(path: &Path, acknowledged: &[(i64, String, String)]) -> AuditStore {
    let store = AuditStore::open(path).unwrap();
    let report = store.verify().unwrap();
    assert!(report.ok, "{report:?}");
    let (head, _) = store.head();
    for (seq, hash, request) in acknowledged {
        assert!(
            *seq <= head,
            "acknowledged seq {seq} is past the head {head}"
        );
        let stored = store.by_request(request).unwrap();
        assert_eq!(stored.len(), 1, "{request}");
        assert_eq!((stored[0].seq, &stored[0].hash), (*seq, hash), "{request}");
    }
    store
}

#[test]
fn an_appender_killed_mid_batch_loses_no_acknowledged_event() {
    let (_dir, path) = scratch();
    // Past a few thousand acknowledged events, killed inside a transaction.
    let acknowledged = kill_child(
        "killed_appender_child",
        KILLED_APPENDER_DB,
        &path,
        |line, acknowledged| line == "inside" && acknowledged >= 2_000,
    );
    holds_each(&path, &acknowledged);
}

/// Where the journaling appender writes, set only when the tests below run it.
const JOURNALING_APPENDER_DB: &str = "PRAXIS_TEST_JOURNALING_APPENDER_DB";

/// Run by the journal's kill tests as their own process: another
/// connection holds the database's write lock, so no event reaches SQLite
/// and every acknowledgement comes from the append journal; appenders on 8
/// threads append until killed, printing `acked SEQ HASH REQUEST` once each
/// append returned.
#[test]
#[ignore = "a child process of the journal kill tests, not a test by itself"]
fn journaling_appender_child() {
    use std::io::Write;
    let Some(path) = std::env::var_os(JOURNALING_APPENDER_DB) else {
        return;
    };
    let store = AuditStore::open(PathBuf::from(&path)).unwrap();
    let blocker = Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    thread::scope(|scope| {
        for t in 0..8 {
            let store = &store;
            scope.spawn(move || {
                for i in 0.. {
                    let n = t * 1_000_000 + i;
                    let appended = store.append(decided(n), Durability::Normal).unwrap();
                    let line = format!("acked {} {} req-{n}\n", appended.seq, appended.hash);
                    std::io::stdout().lock().write_all(line.as_bytes()).unwrap();
                }
            });
        }
    });
}

/// Runs [`journaling_appender_child`] on `path` and SIGKILLs it while its
/// appenders are writing, past 2 000 acknowledged events; returns them,
/// after checking the database file holds none of them.
fn kill_journaling_appender(path: &Path) -> Vec<(i64, String, String)> {
    let acknowledged = kill_child(
        "journaling_appender_child",
        JOURNALING_APPENDER_DB,
        path,
        |_, acknowledged| acknowledged >= 2_000,
    );
    let in_file: i64 = Connection::open(path)
        .unwrap()
        .query_row("SELECT count(*) FROM events", [], |row| row.get(0))
        .unwrap();
    assert_eq!(in_file, 0, "events reached SQLite past the held lock");
    acknowledged
}

#[test]
fn a_journaling_appender_killed_mid_write_loses_no_acknowledged_event() {
    let (_dir, path) = scratch();
    let acknowledged = kill_journaling_appender(&path);
    let store = holds_each(&path, &acknowledged);
    let highest = acknowledged.iter().map(|(seq, ..)| *seq).max().unwrap();
    assert!(store.head().0 >= highest);
    // The chain goes on from what the journal brought back.
    let next = store.append(decided(1), Durability::Normal).unwrap();
    assert_eq!(next.seq, store.head().0);
    assert!(store.verify().unwrap().ok);
}

/// Verified offline, the store counts the events a killed praxisd
/// acknowledged from its journal, which SQLite does not hold yet; checking
/// them changes nothing.
#[test]
fn an_offline_verify_checks_the_journaled_events() {
    let (_dir, path) = scratch();
    let acknowledged = kill_journaling_appender(&path);
    let journals = ["audit.db-append-0", "audit.db-append-1"].map(|f| path.with_file_name(f));
    let sizes = || {
        journals
            .clone()
            .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
    };
    let before = sizes();
    let report = verify_file(&path).unwrap();
    assert!(report.ok, "{report:?}");
    assert!(
        report.events_checked >= acknowledged.len() as u64,
        "{} checked of {} acknowledged",
        report.events_checked,
        acknowledged.len()
    );
    assert_eq!(sizes(), before, "the journal was changed");
    // Once the store is open they are in SQLite, and the count stays.
    let opened = holds_each(&path, &acknowledged).verify().unwrap();
    assert_eq!(opened.events_checked, report.events_checked);
}

/// A journaled event whose hash was changed breaks the offline verify at
/// its `seq`.
#[test]
fn an_offline_verify_names_a_changed_journal_line() {
    let (_dir, path) = scratch();
    kill_journaling_appender(&path);
    let (file, start, seq) = last_journal_line(&path);
    let mut text = std::fs::read(&file).unwrap();
    let first = &mut text[start as usize];
    *first = if *first == b'0' { b'1' } else { b'0' };
    std::fs::write(&file, text).unwrap();
    let report = verify_file(&path).unwrap();
    assert_eq!(
        (report.ok, report.first_broken),
        (false, Some(seq)),
        "{report:?}"
    );
}

/// The journal line of the highest seq a killed appender left: its file
/// and where the line starts.
fn last_journal_line(path: &Path) -> (PathBuf, u64, i64) {
    let mut last: Option<(PathBuf, u64, i64)> = None;
    for file in ["audit.db-append-0", "audit.db-append-1"] {
        let file = path.with_file_name(file);
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            let seq: i64 = line
                .split_once("\"seq\":")
                .and_then(|(_, rest)| rest.split(',').next())
                .and_then(|seq| seq.parse().ok())
                .unwrap_or(0);
            if line.ends_with('\n') && last.as_ref().is_none_or(|(.., s)| seq > *s) {
                last = Some((file.clone(), start, seq));
            }
            start += line.len() as u64;
        }
    }
    last.expect("the killed appender left journal lines")
}

#[test]
fn a_torn_last_journal_line_is_dropped_and_the_chain_holds() {
    let (_dir, path) = scratch();
    let acknowledged = kill_journaling_appender(&path);
    // The last line cut inside its write, as a kill there leaves it.
    let (file, start, torn) = last_journal_line(&path);
    let journal = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    journal.set_len(start + 70).unwrap();
    drop(journal);
    let kept: Vec<_> = acknowledged
        .into_iter()
        .filter(|(seq, ..)| *seq != torn)
        .collect();
    let store = holds_each(&path, &kept);
    assert_eq!(store.head().0, torn - 1);
    let next = store.append(decided(1), Durability::Normal).unwrap();
    assert_eq!(next.seq, torn);
    assert!(store.verify().unwrap().ok);
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        0,
        "journal emptied"
    );
}

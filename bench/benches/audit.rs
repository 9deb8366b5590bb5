//! Audit store throughput: sustained appends with group commit (NORMAL and
//! FULL durability), single-appender latency, and chain verification speed.
//! Goal: at least 20 000 NORMAL events/s sustained from concurrent appenders.

use std::thread;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use praxis_daemon::audit::{AuditStore, Durability, Event, EventKind};

/// Concurrent appenders, as a daemon serving many clients would have.
const APPENDERS: u64 = 8;

/// Events in the log that verification walks.
const VERIFY_EVENTS: u64 = 20_000;

/// A decision event of typical size.
fn event(n: u64) -> Event {
    Event {
        request_id: Some(format!("req-{n:016x}")),
        session: Some("bench-session".into()),
        role: Some("agent".into()),
        uid: Some(1000),
        pid: Some(31337),
        runtime: Some("claude-code".into()),
        cwd: Some("/home/dev/src/project".into()),
        argv_redacted: Some(vec!["git".into(), "status".into(), "--short".into()]),
        arguments_digest: Some("5e".repeat(32)),
        tier: Some("read_only".into()),
        decision: Some("ALLOW".into()),
        reason: Some("T0 read_only allowed by the read-only profile".into()),
        rule_ids: Some(vec!["allow.git_read".into()]),
        policy_revision: Some("9f".repeat(32)),
        profile: Some("read-only".into()),
        ..Event::new(EventKind::Decided)
    }
}

/// Appends `total` events from [`APPENDERS`] threads and returns the wall time.
fn append_concurrently(store: &AuditStore, total: u64, durability: Durability) -> Duration {
    let start = Instant::now();
    thread::scope(|scope| {
        for t in 0..APPENDERS {
            let share = total / APPENDERS + u64::from(t < total % APPENDERS);
            scope.spawn(move || {
                for i in 0..share {
                    let _ = store
                        .append(event(t << 32 | i), durability)
                        .expect("append");
                }
            });
        }
    });
    start.elapsed()
}

fn appends(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = AuditStore::open(dir.path().join("audit.db")).expect("open store");
    let mut group = c.benchmark_group("audit_append");
    group.measurement_time(Duration::from_secs(8));
    // Each iteration is a burst of events spread over the appenders, so
    // starting the threads is a small part of what is measured.
    for (name, durability, burst) in [
        ("normal_8_appenders", Durability::Normal, 800),
        ("full_8_appenders", Durability::Full, 80),
    ] {
        group.throughput(Throughput::Elements(burst));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| append_concurrently(&store, iters * burst, durability));
        });
    }
    group.throughput(Throughput::Elements(1));
    group.bench_function("normal_1_appender_latency", |b| {
        let mut n = 0;
        b.iter(|| {
            n += 1;
            store.append(event(n), Durability::Normal).expect("append")
        });
    });
    group.finish();
}

fn verify(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = AuditStore::open(dir.path().join("audit.db")).expect("open store");
    let _ = append_concurrently(&store, VERIFY_EVENTS, Durability::Normal);
    let mut group = c.benchmark_group("audit_verify");
    group.throughput(Throughput::Elements(VERIFY_EVENTS));
    group.sample_size(20);
    group.bench_function("verify_chain", |b| {
        b.iter(|| {
            let report = store.verify().expect("verify");
            assert!(report.ok && report.events_checked == VERIFY_EVENTS);
            report
        });
    });
    group.finish();
}

criterion_group!(benches, appends, verify);
criterion_main!(benches);

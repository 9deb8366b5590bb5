//! Audit store throughput: sustained appends (NORMAL ones through the append
//! journal, FULL ones by group commit) from 1, 8 and 64 concurrent appenders
//! (blocking calls from threads, and async calls from tasks), NORMAL and FULL
//! durability, single-appender latency, and chain
//! verification speed. Goal: at least 100 000 NORMAL events/s from 8
//! appenders, each event acknowledged only once it is durable to its level.
//!
//! After the criterion groups, one summary line per appender count gives the
//! events/s of both paths, the ratio to the goal, and how long SQLite took
//! after the last acknowledgement to hold every event (NORMAL appends are
//! acknowledged from the append journal and moved into SQLite after).

use std::thread;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use praxis_daemon::ids;
use praxis_daemon::store::audit::{AuditStore, Durability, Event, EventKind};

/// Appender counts: one agent alone, a daemon serving a few, and many.
const APPENDERS: [u64; 3] = [1, 8, 64];

/// The goal, NORMAL events per second from 8 appenders.
const GOAL_EPS: f64 = 100_000.0;

/// Events in the log that verification walks.
const VERIFY_EVENTS: u64 = 20_000;

/// How long each summary measurement appends for.
const SUMMARY_TIME: Duration = Duration::from_secs(3);

/// A decision event of typical size, with a request id as the daemon makes
/// them (time-ordered, so the index on it grows at its end).
fn event() -> Event {
    Event {
        request_id: Some(ids::request_id()),
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

/// The events each of `appenders` appends out of `total`.
fn share(total: u64, appenders: u64, t: u64) -> u64 {
    total / appenders + u64::from(t < total % appenders)
}

/// Appends `total` events from `appenders` threads, each calling the blocking
/// append in a loop; returns the wall time.
fn append_threads(
    store: &AuditStore,
    appenders: u64,
    total: u64,
    durability: Durability,
) -> Duration {
    let start = Instant::now();
    thread::scope(|scope| {
        for t in 0..appenders {
            scope.spawn(move || {
                for _ in 0..share(total, appenders, t) {
                    let _ = store.append(event(), durability).expect("append");
                }
            });
        }
    });
    start.elapsed()
}

/// Appends `total` events from `appenders` tasks on `runtime`, each awaiting
/// the async append in a loop; returns the wall time.
fn append_tasks(
    runtime: &tokio::runtime::Runtime,
    store: &AuditStore,
    appenders: u64,
    total: u64,
) -> Duration {
    runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..appenders)
            .map(|t| {
                let store = store.clone();
                tokio::spawn(async move {
                    for _ in 0..share(total, appenders, t) {
                        let _ = store
                            .append_async(event(), Durability::Normal)
                            .await
                            .expect("append");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("appender task");
        }
        start.elapsed()
    })
}

/// The daemon's runtime shape: a multi-thread runtime on this machine's cores.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Events per iteration: enough that starting the appenders is a small part.
fn burst(appenders: u64) -> u64 {
    (appenders * 100).max(800)
}

fn appends(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = AuditStore::open(dir.path().join("audit.db")).expect("open store");
    let runtime = runtime();
    let mut group = c.benchmark_group("audit_append");
    group.measurement_time(Duration::from_secs(5));
    for appenders in APPENDERS {
        let burst = burst(appenders);
        group.throughput(Throughput::Elements(burst));
        group.bench_function(format!("normal_{appenders}_appenders"), |b| {
            b.iter_custom(|iters| {
                append_threads(&store, appenders, iters * burst, Durability::Normal)
            });
        });
        group.bench_function(format!("normal_{appenders}_appenders_async"), |b| {
            b.iter_custom(|iters| append_tasks(&runtime, &store, appenders, iters * burst));
        });
    }
    group.throughput(Throughput::Elements(80));
    group.bench_function("full_8_appenders", |b| {
        b.iter_custom(|iters| append_threads(&store, 8, iters * 80, Durability::Full));
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("normal_1_appender_latency", |b| {
        b.iter(|| store.append(event(), Durability::Normal).expect("append"));
    });
    group.finish();
}

/// Events per second appending for about [`SUMMARY_TIME`] with `append`,
/// which appends the given number of events and returns its wall time.
fn rate(mut append: impl FnMut(u64) -> Duration, step: u64) -> f64 {
    let (start, mut done, mut busy) = (Instant::now(), 0, Duration::ZERO);
    while start.elapsed() < SUMMARY_TIME {
        busy += append(step);
        done += step;
    }
    done as f64 / busy.as_secs_f64()
}

/// One line per appender count, for the report: events/s of both paths and
/// the ratio to the goal. NORMAL appends are acknowledged from the append
/// journal, so each line also gives how long SQLite took afterwards to hold
/// every acknowledged event (the journal runs at most a bounded number of
/// events ahead, so the rates are sustained ones, not a burst into memory).
fn summary(_: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = AuditStore::open(dir.path().join("audit.db")).expect("open store");
    let runtime = runtime();
    // How long the file takes to hold every event acknowledged so far.
    let drain = || {
        let start = Instant::now();
        let _ = store.in_file();
        start.elapsed().as_secs_f64() * 1e3
    };
    for appenders in APPENDERS {
        let step = burst(appenders);
        let threads = rate(
            |n| append_threads(&store, appenders, n, Durability::Normal),
            step,
        );
        let threads_drain = drain();
        let tasks = rate(|n| append_tasks(&runtime, &store, appenders, n), step);
        let tasks_drain = drain();
        println!(
            "audit append summary: {appenders:>2} appender(s): blocking {threads:>8.0} events/s ({:.2}x goal), async {tasks:>8.0} events/s ({:.2}x goal), {:.1} us/event; in SQLite {threads_drain:.1} / {tasks_drain:.1} ms later",
            threads / GOAL_EPS,
            tasks / GOAL_EPS,
            1e6 / threads
        );
    }
}

fn verify(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = AuditStore::open(dir.path().join("audit.db")).expect("open store");
    let _ = append_threads(&store, 8, VERIFY_EVENTS, Durability::Normal);
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

criterion_group!(benches, appends, summary, verify);
criterion_main!(benches);

//! Session detector cost per hook event (target: at most 50 µs): the whole
//! recorded trajectory corpus replayed from fresh state (criterion reports
//! time per event), and one event on the state of a long session.

use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use praxis_policy::verdict::{Tier, Verdict};
use praxis_session::{
    Detector, EventKind, HookEvent, Judgment, SessionPolicy, SessionState, Status,
};

fn corpus() -> Vec<Vec<HookEvent>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../session/tests/trajectories");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the trajectory corpus exists")
        .map(|e| e.expect("readable entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            std::fs::read_to_string(path)
                .expect("readable trajectory")
                .lines()
                .map(|line| {
                    let mut value: serde_json::Value = serde_json::from_str(line).expect("json");
                    value.as_object_mut().expect("an object").remove("expect");
                    serde_json::from_value(value).expect("a hook event")
                })
                .collect()
        })
        .collect()
}

fn edit(i: usize) -> HookEvent {
    let read = i.is_multiple_of(3);
    HookEvent {
        runtime: "claude-code".into(),
        session: "bench".into(),
        kind: EventKind::PreToolUse,
        tool: Some(if read { "Read" } else { "Edit" }.into()),
        target: Some(format!("crates/c{}/src/m{}.rs", i % 7, i % 23)),
        cwd: Some("/home/dev/big".into()),
        call_id: Some(format!("toolu_{i:06}")),
        status: Status::Unknown,
        at_ms: 1_763_980_000_000 + i as u64 * 9_000,
        judgment: Some(Judgment {
            tier: if read {
                Tier::ReadOnly
            } else {
                Tier::ReversibleWrite
            },
            verdict: Verdict::Allow,
            protected: false,
            role: None,
        }),
    }
}

fn bench(c: &mut Criterion) {
    let detector = Detector::new(SessionPolicy::shipped().expect("shipped policy")).expect("loads");
    let trajectories = corpus();
    let events: usize = trajectories.iter().map(Vec::len).sum();

    let mut group = c.benchmark_group("session_detector");
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function("corpus_replay_per_event", |b| {
        b.iter(|| {
            let mut transitions = 0;
            for trajectory in &trajectories {
                let mut state = SessionState::new(trajectory[0].scope(), None);
                for event in trajectory {
                    transitions += detector
                        .observe(&mut state, black_box(event))
                        .transitions
                        .len();
                }
            }
            transitions
        })
    });
    group.finish();

    // A long session: 500 actions over 7 crates, every call id remembered.
    let mut long = SessionState::default();
    for i in 0..500 {
        let _ = detector.observe(&mut long, &edit(i));
    }
    let next = edit(500);
    let mut group = c.benchmark_group("session_detector");
    group.throughput(Throughput::Elements(1));
    group.bench_function("one_event_after_500_actions", |b| {
        b.iter_batched(
            || long.clone(),
            |mut state| {
                detector
                    .observe(&mut state, black_box(&next))
                    .transitions
                    .len()
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

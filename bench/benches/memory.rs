//! Judgment memory on the decision path: what recall and the use rules add
//! to a held decision, over 1000 stored memories of one workspace and others;
//! and the daemon's recall stage as a held request pays for it, with its
//! SQLite read of the workspace's memories and its write of the held action.
//!
//! Target: consulting memory adds ≤ 20 µs to a decision.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use praxis_daemon::stage::recall::{self as stage, Recalled};
use praxis_daemon::store::memory::db::MemoryStore;
use praxis_memory::contract::{
    CreatedBy, MemorySource, ProvenanceStatus, RecallRequest, SourceKind, Visibility, parse,
};
use praxis_memory::lesson::{Action, ActionCommand, GitBranches, generalise};
use praxis_memory::memory::{Memory, Origin, OriginKind, Proposal, propose};
use praxis_memory::recall::recall;
use praxis_memory::relax::consult;
use praxis_memory::review::{ReviewAction, Reviewer, ReviewerKind, apply};
use praxis_memory::time::Timestamp;
use praxis_policy::{Tier, Verdict};

const PROGRAMS: [(&str, &str); 8] = [
    ("git", "push"),
    ("npm", "publish"),
    ("cargo", "publish"),
    ("docker", "push"),
    ("kubectl", "apply"),
    ("gh", "pr"),
    ("terraform", "apply"),
    ("curl", ""),
];

fn action(workspace: &str, program: &str, sub: &str, branch: &str) -> Action {
    Action {
        workspace: workspace.to_owned(),
        project: None,
        role: "agent".to_owned(),
        tier: Tier::ExternalSideEffect,
        verdict: Verdict::Hold,
        relaxable: true,
        commands: vec![ActionCommand {
            program: program.to_owned(),
            subcommand: if sub.is_empty() {
                Vec::new()
            } else {
                vec![sub.to_owned()]
            },
            flags: vec!["-u".to_owned()],
            operands: vec!["origin".to_owned(), branch.to_owned()],
            paths: Vec::new(),
            verdict: Verdict::Hold,
        }],
        destinations: vec!["github.com:443".to_owned()],
        git: Some(GitBranches {
            current: Some(branch.to_owned()),
            default: Some("main".to_owned()),
        }),
    }
}

/// 1000 memories: 20 workspaces of 50, each with confirmed lessons,
/// evidence and pending proposals over eight programs.
fn memories(now: Timestamp) -> Vec<Memory> {
    let human = Reviewer {
        name: "alice".to_owned(),
        kind: ReviewerKind::Human,
    };
    (0..1000)
        .map(|i| {
            let workspace = format!("/srv/repos/r{}", i % 20);
            let (program, sub) = PROGRAMS[i % PROGRAMS.len()];
            let approved = action(&workspace, program, sub, &format!("feature/{i}"));
            let proposed = propose(
                Proposal {
                    memory_id: format!("m{i:04}"),
                    summary: format!("{program} {sub} in {workspace}"),
                    content: "approved by the operator".to_owned(),
                    source: MemorySource {
                        kind: SourceKind::JudgeEvent,
                        uri: Some(format!("praxis:request/{i}")),
                        title: None,
                        timestamp: Some(now),
                    },
                    status: ProvenanceStatus::Generated,
                    confidence: 0.8,
                    created_by: CreatedBy::System,
                    model: None,
                    runtime: None,
                    workspace_id: workspace.clone(),
                    project_id: None,
                    visibility: Visibility::Workspace,
                    origin: Origin {
                        kind: OriginKind::OperatorApproval,
                        decision_id: None,
                        action_id: Some(format!("req-{i}")),
                        reason: "approved and remembered".to_owned(),
                    },
                    lesson: generalise(&approved),
                    keywords: vec![program.to_owned(), format!("r{}", i % 20)],
                    sensitive_area: false,
                    fresh_for: Some(90 * 86_400),
                },
                now,
            );
            let review = match i % 3 {
                0 => ReviewAction::Confirm {
                    as_instruction: true,
                    fresh_for: None,
                },
                1 => ReviewAction::EvidenceOnly,
                _ => return proposed,
            };
            apply(&proposed, &review, &human, now).expect("a human review")
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let now = Timestamp::parse("2026-11-24T12:00:00Z").expect("a timestamp");
    let memories = memories(now);
    // Held: a push to a new feature branch in workspace r0, which one
    // confirmed lesson relaxes.
    let held = action("/srv/repos/r0", "git", "push", "feature/new");
    assert!(consult(&memories, &held, now).allowed_by.is_some());
    c.bench_function("memory/consult 1000 memories (held push, relaxed)", |b| {
        b.iter(|| consult(black_box(&memories), black_box(&held), now))
    });
    // Held with nothing that relaxes it: every memory is examined.
    let unmatched = action("/srv/repos/r0", "rsync", "", "feature/new");
    assert!(consult(&memories, &unmatched, now).allowed_by.is_none());
    c.bench_function("memory/consult 1000 memories (held, no match)", |b| {
        b.iter(|| consult(black_box(&memories), black_box(&unmatched), now))
    });
    let request: RecallRequest =
        parse(include_str!("../../memory/tests/fixtures/recall.json")).expect("the recall fixture");
    let request = RecallRequest {
        workspace_id: "/srv/repos/r0".to_owned(),
        project_id: None,
        ..request
    };
    c.bench_function("memory/recall endpoint 1000 memories", |b| {
        b.iter(|| recall(black_box(&memories), black_box(&request), Vec::new(), now))
    });

    // The recall stage over a real memory.db holding the same memories.
    let dir = tempfile::tempdir().expect("a scratch dir");
    let store = MemoryStore::open(&dir.path().join("memory.db")).expect("the store");
    for memory in &memories {
        store.put(memory).expect("a stored memory");
    }
    let store = Ok(store);
    let relaxed = |r: Recalled| matches!(r, Recalled::Consulted(c, _) if c.allowed_by.is_some());
    assert!(relaxed(stage::recall(&store, "r-bench", &held, now)));
    c.bench_function(
        "memory/recall stage with SQLite (held push, relaxed)",
        |b| b.iter(|| stage::recall(black_box(&store), "r-bench", black_box(&held), now)),
    );
    assert!(!relaxed(stage::recall(&store, "r-bench", &unmatched, now)));
    c.bench_function("memory/recall stage with SQLite (held, no match)", |b| {
        b.iter(|| stage::recall(black_box(&store), "r-bench", black_box(&unmatched), now))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

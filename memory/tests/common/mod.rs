//! Builders shared by the memory tests: real actions as the pipeline would
//! describe them, memories made through `propose` and the review queue.
#![allow(dead_code)]

use praxis_memory::contract::{CreatedBy, MemorySource, ProvenanceStatus, SourceKind, Visibility};
use praxis_memory::lesson::{Action, ActionCommand, GitBranches, Lesson, PathArg, generalise};
use praxis_memory::memory::{Memory, Origin, OriginKind, Proposal, propose};
use praxis_memory::review::{ReviewAction, Reviewer, ReviewerKind, apply};
use praxis_memory::time::{DAY, Timestamp};
use praxis_policy::{Tier, Verdict};

pub const WORKSPACE: &str = "/srv/repos/shop";

pub fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

pub fn now() -> Timestamp {
    at("2026-11-24T12:00:00Z")
}

pub fn alice() -> Reviewer {
    Reviewer {
        name: "alice".into(),
        kind: ReviewerKind::Human,
    }
}

pub fn admin() -> Reviewer {
    Reviewer {
        name: "root-admin".into(),
        kind: ReviewerKind::Admin,
    }
}

pub fn agent() -> Reviewer {
    Reviewer {
        name: "coder-1".into(),
        kind: ReviewerKind::Agent,
    }
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| (*w).to_owned()).collect()
}

/// `git push [flags] origin <refspecs>` as the policy holds it.
pub fn push(flags: &[&str], operands: &[&str]) -> Action {
    Action {
        workspace: WORKSPACE.into(),
        project: None,
        role: "agent".into(),
        tier: Tier::ExternalSideEffect,
        verdict: Verdict::Hold,
        relaxable: true,
        commands: vec![ActionCommand {
            program: "git".into(),
            subcommand: words(&["push"]),
            flags: words(flags),
            operands: words(operands),
            paths: Vec::new(),
            verdict: Verdict::Hold,
        }],
        destinations: words(&["github.com:443"]),
        git: Some(GitBranches {
            current: Some("feature/login".into()),
            default: Some("main".into()),
        }),
    }
}

/// `rm -r <path>` inside the workspace, held.
pub fn rm(path: &str, classes: &[&str]) -> Action {
    Action {
        workspace: WORKSPACE.into(),
        project: None,
        role: "agent".into(),
        tier: Tier::ReversibleWrite,
        verdict: Verdict::Hold,
        relaxable: true,
        commands: vec![ActionCommand {
            program: "rm".into(),
            subcommand: Vec::new(),
            flags: words(&["-r"]),
            operands: Vec::new(),
            paths: vec![PathArg {
                text: path.into(),
                classes: words(classes),
            }],
            verdict: Verdict::Hold,
        }],
        destinations: Vec::new(),
        git: None,
    }
}

pub fn proposal(id: &str, lesson: Option<Lesson>, origin: OriginKind) -> Proposal {
    Proposal {
        memory_id: id.into(),
        summary: lesson
            .as_ref()
            .map_or("a note".to_owned(), |l| l.description.clone()),
        content: "approved by the operator".into(),
        source: MemorySource {
            kind: SourceKind::JudgeEvent,
            uri: Some(format!("praxis:request/{id}")),
            title: None,
            timestamp: Some(now()),
        },
        status: ProvenanceStatus::Generated,
        confidence: 0.8,
        created_by: CreatedBy::System,
        model: None,
        runtime: Some("praxis".into()),
        workspace_id: WORKSPACE.into(),
        project_id: None,
        visibility: Visibility::Workspace,
        origin: Origin {
            kind: origin,
            decision_id: Some(format!("dec-{id}")),
            action_id: Some(format!("req-{id}")),
            reason: "the operator approved a held push and asked to remember it".into(),
        },
        lesson,
        keywords: words(&["git", "shop"]),
        sensitive_area: false,
        fresh_for: Some(90 * DAY),
    }
}

/// A lesson proposed from an approved action, as `praxis approve --remember` does.
pub fn proposed_lesson(id: &str, approved: &Action) -> Memory {
    let lesson = generalise(approved).expect("a lesson from the approved action");
    propose(
        proposal(id, Some(lesson), OriginKind::OperatorApproval),
        now(),
    )
}

/// The same, confirmed as an instruction by a human in the queue.
pub fn confirmed_lesson(id: &str, approved: &Action) -> Memory {
    let proposed = proposed_lesson(id, approved);
    apply(
        &proposed,
        &ReviewAction::Confirm {
            as_instruction: true,
            fresh_for: None,
        },
        &alice(),
        now(),
    )
    .expect("a human confirms a pending lesson")
}

/// An observed approval kept as evidence.
pub fn evidence(id: &str, approved: &Action) -> Memory {
    let mut p = proposal(id, generalise(approved), OriginKind::OperatorApproval);
    p.status = ProvenanceStatus::Observed;
    let proposed = propose(p, now());
    apply(&proposed, &ReviewAction::EvidenceOnly, &alice(), now()).unwrap()
}

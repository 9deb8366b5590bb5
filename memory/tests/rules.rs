//! Every rule of the pure memory crate, one test or more each.

mod common;

use common::*;
use praxis_memory::contract::{ProvenanceStatus, UsePolicy, Visibility};
use praxis_memory::event::{Event, EventKind};
use praxis_memory::inspect::inspect;
use praxis_memory::intake::{IntakeError, IntakeLimits, screen, screen_proposal};
use praxis_memory::lesson::{BranchRule, generalise, matches};
use praxis_memory::memory::{OriginKind, Priority, ReviewStatus, propose};
use praxis_memory::metrics::metrics;
use praxis_memory::relax::{NoRelax, Relax, consult, injectable, may_relax};
use praxis_memory::replay::replay;
use praxis_memory::review::{ReviewAction, ReviewError, apply, legal, queue};
use praxis_memory::time::DAY;
use praxis_policy::{Tier, Verdict};

// ------------------------------------------------------------------ lessons

#[test]
fn a_push_to_a_feature_branch_generalises_to_non_default_branches_of_the_repo() {
    let lesson = generalise(&push(&[], &["origin", "feature/login"])).unwrap();
    assert_eq!(lesson.branches, BranchRule::NonDefault);
    assert_eq!(lesson.operands, ["origin", "*"]);
    assert_eq!(lesson.workspace, WORKSPACE);
    assert_eq!(lesson.role.as_deref(), Some("agent"));
    assert!(
        lesson
            .description
            .starts_with("git push to non-default branches of")
    );
    // Other feature branches, the bare push of the current feature branch,
    // HEAD and explicit refspecs to a feature branch are covered.
    for operands in [
        &["origin", "feature/signup"][..],
        &[],
        &["origin"],
        &["origin", "HEAD"],
        &["origin", "HEAD:refs/heads/fix/typo"],
    ] {
        assert!(matches(&lesson, &push(&[], operands)), "{operands:?}");
    }
}

#[test]
fn a_generalised_push_lesson_never_covers_the_default_branch_force_or_other_remotes() {
    let lesson = generalise(&push(&[], &["origin", "feature/login"])).unwrap();
    assert!(!matches(&lesson, &push(&[], &["origin", "main"])));
    assert!(!matches(&lesson, &push(&[], &["origin", "HEAD:main"])));
    assert!(!matches(
        &lesson,
        &push(&[], &["origin", "feature/x", "main"])
    ));
    assert!(!matches(
        &lesson,
        &push(&["--force"], &["origin", "feature/x"])
    ));
    assert!(!matches(&lesson, &push(&[], &["backup", "feature/x"])));
    let mut on_main = push(&[], &[]);
    on_main.git.as_mut().unwrap().current = Some("main".into());
    assert!(
        !matches(&lesson, &on_main),
        "bare push while on the default branch"
    );
    let mut detached = push(&[], &["origin", "HEAD"]);
    detached.git.as_mut().unwrap().current = None;
    assert!(
        !matches(&lesson, &detached),
        "HEAD of a detached work tree is unknown"
    );
    let mut unknown_default = push(&[], &["origin", "feature/x"]);
    unknown_default.git.as_mut().unwrap().default = None;
    assert!(
        !matches(&lesson, &unknown_default),
        "no known default branch"
    );
}

#[test]
fn a_lesson_is_bound_to_its_workspace_role_tier_and_destinations() {
    let lesson = generalise(&push(&[], &["origin", "feature/login"])).unwrap();
    let mut other = push(&[], &["origin", "feature/x"]);
    other.workspace = "/srv/repos/other".into();
    assert!(!matches(&lesson, &other));
    let mut role = push(&[], &["origin", "feature/x"]);
    role.role = "ci".into();
    assert!(!matches(&lesson, &role));
    let mut riskier = push(&[], &["origin", "feature/x"]);
    riskier.tier = Tier::HighRisk;
    assert!(!matches(&lesson, &riskier));
    let mut elsewhere = push(&[], &["origin", "feature/x"]);
    elsewhere.destinations = vec!["evil.example:443".into()];
    assert!(!matches(&lesson, &elsewhere));
}

#[test]
fn a_push_to_the_default_branch_generalises_to_that_branch_only() {
    let lesson = generalise(&push(&[], &["origin", "main"])).unwrap();
    assert_eq!(lesson.branches, BranchRule::Named(vec!["main".into()]));
    assert!(matches(&lesson, &push(&[], &["origin", "main"])));
    assert!(!matches(&lesson, &push(&[], &["origin", "feature/x"])));
}

#[test]
fn path_lessons_cover_paths_by_class_and_glob_only() {
    let lesson = generalise(&rm("build/out", &["workspace"])).unwrap();
    assert_eq!(lesson.paths.classes, ["workspace"]);
    assert!(matches(&lesson, &rm("target/debug", &["workspace"])));
    // A path with any class the lesson does not name is not covered.
    assert!(!matches(
        &lesson,
        &rm(".git/hooks", &["workspace", "protected"])
    ));
    assert!(!matches(&lesson, &rm("/etc/x", &["outside_workspace"])));
    assert!(!matches(&lesson, &rm("$X", &[])));
    let mut by_glob = lesson.clone();
    by_glob.paths.classes.clear();
    by_glob.paths.globs = vec!["target/*".into()];
    assert!(matches(&by_glob, &rm("target/debug", &["workspace"])));
    assert!(!matches(&by_glob, &rm("src/main.rs", &["workspace"])));
}

#[test]
fn every_held_command_of_a_compound_action_must_be_covered() {
    let lesson = generalise(&push(&[], &["origin", "feature/login"])).unwrap();
    let mut compound = push(&[], &["origin", "feature/x"]);
    compound
        .commands
        .extend(rm("build", &["workspace"]).commands);
    assert!(!matches(&lesson, &compound), "the held rm is not covered");
    compound.commands[1].verdict = Verdict::Allow;
    assert!(matches(&lesson, &compound), "an allowed rm needs no cover");
}

#[test]
fn nothing_to_generalise_from_gives_no_lesson() {
    let mut allowed = push(&[], &["origin", "feature/x"]);
    allowed.commands[0].verdict = Verdict::Allow;
    assert!(generalise(&allowed).is_none());
    let mut mixed = push(&[], &["origin", "feature/x"]);
    mixed.commands.extend(rm("build", &["workspace"]).commands);
    assert!(generalise(&mixed).is_none(), "two shapes of held command");
}

#[test]
fn every_generalised_lesson_matches_the_action_it_came_from() {
    for action in [
        push(&[], &["origin", "feature/login"]),
        push(&[], &["origin", "main"]),
        push(&["-u"], &["origin", "HEAD"]),
        push(&[], &[]),
        rm("build/out", &["workspace"]),
        rm("/tmp/x", &["scratch", "outside_workspace"]),
    ] {
        let lesson = generalise(&action).unwrap();
        assert!(matches(&lesson, &action), "{lesson:?}");
    }
}

// ------------------------------------------------------------------ use rules

#[test]
fn a_confirmed_instruction_relaxes_a_matching_hold_and_says_how() {
    let memory = confirmed_lesson("m1", &push(&[], &["origin", "feature/login"]));
    memory.check().unwrap();
    match may_relax(&memory, &push(&[], &["origin", "feature/other"]), now()) {
        Relax::Allow { memory_id, how } => {
            assert_eq!(memory_id, "m1");
            assert!(
                how.contains("instruction") && how.contains("non-default"),
                "{how}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn memory_never_relaxes_a_stop_an_unrelaxable_hold_or_an_allow() {
    let memory = confirmed_lesson("m1", &push(&[], &["origin", "feature/login"]));
    let mut stop = push(&[], &["origin", "feature/x"]);
    stop.verdict = Verdict::Stop;
    assert_eq!(may_relax(&memory, &stop, now()), Relax::No(NoRelax::Stop));
    let mut pinned = push(&[], &["origin", "feature/x"]);
    pinned.relaxable = false;
    assert_eq!(
        may_relax(&memory, &pinned, now()),
        Relax::No(NoRelax::NotRelaxable)
    );
    let mut allowed = push(&[], &["origin", "feature/x"]);
    allowed.verdict = Verdict::Allow;
    assert_eq!(
        may_relax(&memory, &allowed, now()),
        Relax::No(NoRelax::NotHeld)
    );
}

#[test]
fn each_missing_condition_keeps_the_hold() {
    let approved = push(&[], &["origin", "feature/login"]);
    let action = push(&[], &["origin", "feature/x"]);
    let confirmed = confirmed_lesson("m1", &approved);
    let no = |m: &praxis_memory::memory::Memory| may_relax(m, &action, now());

    let proposed = proposed_lesson("m2", &approved);
    assert_eq!(
        no(&proposed),
        Relax::No(NoRelax::NotUsable),
        "not confirmed"
    );

    let mut disputed = confirmed.clone();
    disputed.disputed_by.push("m9".into());
    assert_eq!(no(&disputed), Relax::No(NoRelax::Disputed));

    let mut superseded = confirmed.clone();
    superseded.superseded_by = Some("m3".into());
    assert_eq!(no(&superseded), Relax::No(NoRelax::Superseded));

    let mut stale = confirmed.clone();
    stale.item.freshness.stale_after = Some(now());
    assert_eq!(
        no(&stale),
        Relax::No(NoRelax::Stale),
        "stale_after is already stale"
    );

    let mut elsewhere = confirmed.clone();
    elsewhere.item.scope.workspace_id = "/srv/repos/other".into();
    assert_eq!(no(&elsewhere), Relax::No(NoRelax::OtherWorkspace));

    let mut project = confirmed.clone();
    project.item.scope.project_id = Some("billing".into());
    assert_eq!(no(&project), Relax::No(NoRelax::OtherProject));

    let mut evidence_policy = confirmed.clone();
    evidence_policy.item.use_policy.policy = UsePolicy::CanUseAsEvidence;
    assert!(matches!(no(&evidence_policy), Relax::Evidence { .. }));

    let mut unconfirmed = confirmed.clone();
    unconfirmed.item.provenance.status = ProvenanceStatus::Inferred;
    assert!(
        unconfirmed.check().is_err(),
        "an unconfirmed instruction is an invalid state"
    );
    assert_eq!(no(&unconfirmed), Relax::No(NoRelax::NotUsable));

    let mut no_lesson = confirmed.clone();
    no_lesson.lesson = None;
    assert_eq!(no(&no_lesson), Relax::No(NoRelax::NoLesson));

    assert_eq!(
        may_relax(&confirmed, &push(&[], &["origin", "main"]), now()),
        Relax::No(NoRelax::NoMatch)
    );
}

#[test]
fn evidence_grade_memories_come_back_as_evidence_with_the_hold() {
    let approved = push(&[], &["origin", "feature/login"]);
    let memories = [
        evidence("e1", &approved),
        evidence("e2", &approved),
        evidence("e3", &push(&[], &["origin", "main"])),
    ];
    let consulted = consult(&memories, &push(&[], &["origin", "feature/x"]), now());
    assert_eq!(consulted.allowed_by, None);
    assert_eq!(consulted.evidence, ["e1", "e2"]);
    assert_eq!(consulted.memory_used().len(), 2);
}

#[test]
fn consult_picks_the_most_recently_confirmed_instruction_whatever_the_order() {
    let approved = push(&[], &["origin", "feature/login"]);
    let older = confirmed_lesson("a-old", &approved);
    let mut newer = confirmed_lesson("z-new", &approved);
    newer.item.freshness.last_confirmed_at = Some(now().plus(60));
    let action = push(&[], &["origin", "feature/x"]);
    for memories in [
        [older.clone(), newer.clone()],
        [newer.clone(), older.clone()],
    ] {
        let consulted = consult(&memories, &action, now().plus(120));
        assert_eq!(consulted.allowed_by.unwrap().0, "z-new");
    }
}

// ------------------------------------------------------------------ proposals

#[test]
fn nothing_proposed_is_instruction_grade() {
    for status in [
        ProvenanceStatus::Observed,
        ProvenanceStatus::Inferred,
        ProvenanceStatus::UserConfirmed,
        ProvenanceStatus::Imported,
        ProvenanceStatus::Generated,
    ] {
        for lesson in [None, generalise(&push(&[], &["origin", "f"]))] {
            let mut p = proposal("p", lesson.clone(), OriginKind::DecisionWriteBack);
            p.status = status;
            let memory = propose(p, now());
            memory.check().unwrap();
            assert_ne!(memory.use_policy(), UsePolicy::CanUseAsInstruction);
            assert_ne!(
                memory.provenance(),
                ProvenanceStatus::UserConfirmed,
                "claimed, not given"
            );
            assert!(!memory.is_instruction_grade(now()));
            if lesson.is_some()
                || matches!(
                    status,
                    ProvenanceStatus::Inferred
                        | ProvenanceStatus::Generated
                        | ProvenanceStatus::UserConfirmed
                )
            {
                assert_eq!(
                    memory.use_policy(),
                    UsePolicy::RequiresConfirmation,
                    "{status:?}"
                );
                assert_eq!(memory.review, ReviewStatus::Pending);
            }
        }
    }
}

#[test]
fn human_corrections_enter_with_high_priority_and_lead_the_queue() {
    let approved = push(&[], &["origin", "feature/login"]);
    let first = proposed_lesson("first", &approved);
    let mut later = proposal(
        "correction",
        generalise(&approved),
        OriginKind::HumanCorrection,
    );
    later.summary = "never push on fridays".into();
    let correction = propose(later, now().plus(600));
    assert_eq!(correction.priority, Priority::High);
    assert_eq!(first.priority, Priority::Normal);
    let memories = [first, correction];
    let ids: Vec<&str> = queue(&memories).iter().map(|m| m.id()).collect();
    assert_eq!(ids, ["correction", "first"]);
}

#[test]
fn doubtful_records_are_not_injected_and_observed_ones_are_evidence() {
    let mut low = proposal("low", None, OriginKind::Import);
    low.status = ProvenanceStatus::Imported;
    low.confidence = 0.2;
    assert_eq!(
        propose(low, now()).use_policy(),
        UsePolicy::DoNotInjectAutomatically
    );
    let mut sensitive = proposal("sens", None, OriginKind::Import);
    sensitive.status = ProvenanceStatus::Observed;
    sensitive.sensitive_area = true;
    let sensitive = propose(sensitive, now());
    assert_eq!(sensitive.use_policy(), UsePolicy::DoNotInjectAutomatically);
    assert_eq!(sensitive.priority, Priority::High);
    let mut observed = proposal("obs", None, OriginKind::OperatorApproval);
    observed.status = ProvenanceStatus::Observed;
    let observed = propose(observed, now());
    assert_eq!(observed.use_policy(), UsePolicy::CanUseAsEvidence);
    assert_eq!(observed.review, ReviewStatus::NotRequired);
}

// ------------------------------------------------------------------ review queue

fn confirm() -> ReviewAction {
    ReviewAction::Confirm {
        as_instruction: true,
        fresh_for: None,
    }
}

#[test]
fn only_humans_review_and_only_admins_confirm_escalated_items() {
    let pending = proposed_lesson("m", &push(&[], &["origin", "f"]));
    assert!(matches!(
        apply(&pending, &confirm(), &agent(), now()),
        Err(ReviewError::NotHuman(_))
    ));
    let escalated = apply(&pending, &ReviewAction::Escalate, &alice(), now()).unwrap();
    assert_eq!(escalated.review, ReviewStatus::Escalated);
    assert_eq!(escalated.priority, Priority::High);
    assert_eq!(
        apply(&escalated, &confirm(), &alice(), now()),
        Err(ReviewError::NeedsAdmin)
    );
    let confirmed = apply(&escalated, &confirm(), &admin(), now()).unwrap();
    assert!(confirmed.is_instruction_grade(now()));
}

#[test]
fn the_legal_transitions() {
    use ReviewStatus as S;
    let all = [
        confirm(),
        ReviewAction::Edit {
            summary: Some("x".into()),
            content: None,
            lesson: None,
        },
        ReviewAction::EvidenceOnly,
        ReviewAction::Restrict {
            project_id: Some("p".into()),
            visibility: None,
            role: None,
        },
        ReviewAction::Stale,
        ReviewAction::Merge {
            into: "other".into(),
        },
        ReviewAction::Reject,
        ReviewAction::Escalate,
    ];
    let allowed = |status: S| -> Vec<&str> {
        all.iter()
            .filter(|a| legal(status, a))
            .map(|a| a.name())
            .collect()
    };
    let every = [
        "confirm",
        "edit",
        "evidence-only",
        "restrict",
        "stale",
        "merge",
        "reject",
        "escalate",
    ];
    assert_eq!(allowed(S::Pending), every);
    assert_eq!(allowed(S::EvidenceOnly), every);
    assert_eq!(allowed(S::Escalated), every[..7]);
    assert_eq!(allowed(S::Confirmed), every[1..]);
    assert_eq!(
        allowed(S::Stale),
        ["confirm", "evidence-only", "merge", "reject", "escalate"]
    );
    assert!(allowed(S::Rejected).is_empty());
    assert!(allowed(S::Merged).is_empty());
    let rejected = apply(
        &proposed_lesson("m", &push(&[], &["origin", "f"])),
        &ReviewAction::Reject,
        &alice(),
        now(),
    )
    .unwrap();
    assert!(matches!(
        apply(&rejected, &confirm(), &alice(), now()),
        Err(ReviewError::Illegal { .. })
    ));
}

#[test]
fn each_review_action_does_what_it_says() {
    let approved = push(&[], &["origin", "feature/login"]);
    let action = push(&[], &["origin", "feature/x"]);
    let confirmed = confirmed_lesson("m", &approved);
    assert_eq!(confirmed.provenance(), ProvenanceStatus::UserConfirmed);
    assert_eq!(confirmed.item.freshness.last_confirmed_at, Some(now()));

    // Edit: back to pending, no longer an instruction.
    let edited = apply(
        &confirmed,
        &ReviewAction::Edit {
            summary: Some("pushes of feature branches".into()),
            content: None,
            lesson: None,
        },
        &alice(),
        now(),
    )
    .unwrap();
    assert_eq!(edited.review, ReviewStatus::Pending);
    assert_eq!(edited.use_policy(), UsePolicy::RequiresConfirmation);
    edited.check().unwrap();
    assert!(matches!(may_relax(&edited, &action, now()), Relax::No(_)));
    assert_eq!(
        apply(
            &confirmed,
            &ReviewAction::Edit {
                summary: None,
                content: None,
                lesson: None
            },
            &alice(),
            now()
        ),
        Err(ReviewError::Empty)
    );

    // Restrict narrows only.
    let narrowed = apply(
        &confirmed,
        &ReviewAction::Restrict {
            project_id: None,
            visibility: Some(Visibility::Project),
            role: Some("agent".into()),
        },
        &alice(),
        now(),
    )
    .unwrap();
    assert_eq!(narrowed.item.scope.visibility, Visibility::Project);
    assert!(narrowed.is_instruction_grade(now()));
    assert!(matches!(
        apply(
            &narrowed,
            &ReviewAction::Restrict {
                project_id: None,
                visibility: Some(Visibility::Org),
                role: None
            },
            &alice(),
            now()
        ),
        Err(ReviewError::Widens(_))
    ));
    assert!(matches!(
        apply(
            &confirmed,
            &ReviewAction::Restrict {
                project_id: None,
                visibility: None,
                role: Some("ci".into())
            },
            &alice(),
            now()
        ),
        Err(ReviewError::Widens(_))
    ));

    // Stale: no longer relaxes, and reconfirming makes it fresh again.
    let stale = apply(&confirmed, &ReviewAction::Stale, &alice(), now()).unwrap();
    assert_eq!(may_relax(&stale, &action, now()), Relax::No(NoRelax::Stale));
    let again = apply(&stale, &confirm(), &alice(), now().plus(DAY)).unwrap();
    assert!(matches!(
        may_relax(&again, &action, now().plus(DAY)),
        Relax::Allow { .. }
    ));

    // Merge: superseded by the other memory.
    let merged = apply(
        &confirmed,
        &ReviewAction::Merge { into: "n".into() },
        &alice(),
        now(),
    )
    .unwrap();
    assert_eq!(merged.provenance(), ProvenanceStatus::Superseded);
    assert_eq!(
        may_relax(&merged, &action, now()),
        Relax::No(NoRelax::Superseded)
    );
    assert_eq!(
        apply(
            &confirmed,
            &ReviewAction::Merge { into: "m".into() },
            &alice(),
            now()
        ),
        Err(ReviewError::MergeSelf)
    );

    // Reject: never used again.
    let rejected = apply(&confirmed, &ReviewAction::Reject, &alice(), now()).unwrap();
    assert_eq!(
        may_relax(&rejected, &action, now()),
        Relax::No(NoRelax::Rejected)
    );
    assert!(!injectable(&rejected, now()));

    // Confirm as an instruction needs a lesson and an uncontested memory.
    let note = propose(proposal("note", None, OriginKind::ManualEntry), now());
    assert_eq!(
        apply(&note, &confirm(), &alice(), now()),
        Err(ReviewError::NoLesson)
    );
    let mut contested = proposed_lesson("c", &approved);
    contested.disputed_by.push("m".into());
    assert_eq!(
        apply(&contested, &confirm(), &alice(), now()),
        Err(ReviewError::Contested)
    );
    let as_evidence = apply(
        &note,
        &ReviewAction::Confirm {
            as_instruction: false,
            fresh_for: Some(DAY),
        },
        &alice(),
        now(),
    )
    .unwrap();
    assert_eq!(as_evidence.use_policy(), UsePolicy::CanUseAsEvidence);
    assert_eq!(
        as_evidence.item.freshness.stale_after,
        Some(now().plus(DAY))
    );
}

// ------------------------------------------------------------------ replay

#[test]
fn replay_counts_what_a_lesson_would_have_allowed() {
    let lesson = generalise(&push(&[], &["origin", "feature/login"])).unwrap();
    let mut stopped = push(&[], &["origin", "feature/y"]);
    stopped.verdict = Verdict::Stop;
    let mut pinned = push(&[], &["origin", "feature/z"]);
    pinned.relaxable = false;
    let past = vec![
        push(&[], &["origin", "feature/a"]),
        push(&[], &["origin", "main"]),
        stopped,
        pinned,
        rm("build", &["workspace"]),
        push(&[], &["origin", "feature/b"]),
    ];
    let result = replay(&lesson, &past);
    assert_eq!((result.would_allow, result.held), (2, 5));
    assert_eq!(result.examples, [0, 5]);
    assert_eq!(
        result.sentence(),
        "would have allowed 2 of the last 5 held requests"
    );
}

// ------------------------------------------------------------------ intake

fn redactor_says_secret() -> impl Fn(&str) -> bool {
    let redactor = praxis_policy::Policy::builtin().unwrap().redactor().clone();
    move |text: &str| !redactor.matches(text.as_bytes()).is_empty()
}

fn proposal_fixture() -> praxis_memory::contract::ActionProposal {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/action_proposal.json"
    ))
    .unwrap();
    praxis_memory::contract::parse(&text).unwrap()
}

#[test]
fn secret_like_data_is_refused_with_the_field() {
    let is_secret = redactor_says_secret();
    let limits = IntakeLimits::default();
    let clean = proposal_fixture();
    screen_proposal(&clean, &is_secret, &limits).unwrap();
    let mut leaky = clean.clone();
    leaky.evidence.source_refs[0].summary =
        "push with GITHUB_TOKEN=ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp".into();
    assert_eq!(
        screen_proposal(&leaky, &is_secret, &limits),
        Err(IntakeError::SecretLike {
            field: "evidence.source_refs[0].summary".into()
        })
    );
    let mut flagged = clean;
    flagged.sensitivity.contains_secret_like_data = true;
    assert_eq!(
        screen_proposal(&flagged, &is_secret, &limits),
        Err(IntakeError::FlaggedSecret)
    );
}

#[test]
fn transcript_sized_dumps_are_refused() {
    let never = |_: &str| false;
    let limits = IntakeLimits::default();
    let mut dump = proposal_fixture();
    dump.action.description = "user: hi\nassistant: hello\n".repeat(30);
    assert!(matches!(
        screen(&dump, &never, &limits),
        Err(IntakeError::TooManyLines { .. })
    ));
    dump.action.description = "x".repeat(limits.max_field_bytes + 1);
    assert!(
        matches!(screen(&dump, &never, &limits), Err(IntakeError::FieldTooLarge { ref field, .. }) if field == "action.description")
    );
    let mut many = proposal_fixture();
    many.expected_consequence.systems_changed = vec!["y".repeat(4000); 10];
    assert!(matches!(
        screen(&many, &never, &limits),
        Err(IntakeError::TooLarge { .. })
    ));
}

// ------------------------------------------------------------------ inspector, metrics

#[test]
fn the_inspector_answers_the_ten_questions() {
    let approved = push(&[], &["origin", "feature/login"]);
    let proposed = proposed_lesson("m", &approved);
    let confirmed = confirmed_lesson("m", &approved);
    let mut rival = proposed_lesson("rival", &approved);
    rival.disputed_by.push("m".into());
    let events = vec![
        Event::proposed(&proposed, now()),
        Event::reviewed(&proposed, &confirmed, "confirm", &alice(), now().plus(300)),
        Event {
            at: now().plus(400),
            kind: EventKind::Recalled {
                request_id: "rec-1".into(),
                workflow: Some("task-17".into()),
                memory_ids: vec!["m".into()],
                stale: 0,
                disputed: 0,
            },
        },
        Event {
            at: now().plus(401),
            kind: EventKind::Decided {
                decision_id: "dec-9".into(),
                decision: praxis_memory::contract::JudgeVerdict::Allow,
                judge: praxis_memory::contract::JudgeKind::Rule,
                memory_used: vec![praxis_memory::contract::MemoryUse {
                    memory_id: "m".into(),
                    used_as: praxis_memory::contract::UsedAs::Instruction,
                }],
            },
        },
        Event {
            at: now().plus(402),
            kind: EventKind::Recalled {
                request_id: "rec-2".into(),
                workflow: None,
                memory_ids: vec!["other".into()],
                stale: 0,
                disputed: 0,
            },
        },
    ];
    let others = [rival];
    let answer = inspect(&confirmed, &events, &others, now().plus(500));
    assert!(answer.why_it_exists.contains("approved"));
    assert_eq!(answer.created_by.decision_id.as_deref(), Some("dec-m"));
    assert_eq!(answer.source.uri.as_deref(), Some("praxis:request/m"));
    assert_eq!(answer.provenance, ProvenanceStatus::UserConfirmed);
    assert_eq!(answer.retrieved_by.len(), 1);
    assert_eq!(answer.retrieved_by[0].workflow.as_deref(), Some("task-17"));
    assert_eq!(answer.used.len(), 1);
    assert_eq!(answer.reviewed_by[0].by.name, "alice");
    assert_eq!(answer.can_influence.as_what, "instruction");
    assert!(
        answer
            .can_influence
            .actions
            .unwrap()
            .contains("non-default branches")
    );
    assert_eq!(answer.conflicts.len(), 1);
    assert_eq!(answer.conflicts[0].relation, "disputes");
    assert_eq!(answer.stale.stale_after, Some(now().plus(90 * DAY)));
    assert!(answer.stale.fresh_now);
}

#[test]
fn metrics_fold_the_events() {
    use praxis_memory::contract::{JudgeKind, JudgeVerdict};
    let approved = push(&[], &["origin", "feature/login"]);
    let a = proposed_lesson("a", &approved);
    let b = proposed_lesson("b", &approved);
    let a2 = apply(&a, &confirm(), &alice(), now().plus(100)).unwrap();
    let b2 = apply(&b, &ReviewAction::EvidenceOnly, &alice(), now().plus(300)).unwrap();
    let decided = |d: JudgeVerdict| Event {
        at: now(),
        kind: EventKind::Decided {
            decision_id: "d".into(),
            decision: d,
            judge: JudgeKind::Rule,
            memory_used: vec![],
        },
    };
    let overridden = |from, to| Event {
        at: now(),
        kind: EventKind::Overridden {
            decision_id: "d".into(),
            from,
            to,
            by: "alice".into(),
        },
    };
    let events = vec![
        Event::proposed(&a, now()),
        Event::proposed(&b, now()),
        Event::reviewed(&a, &a2, "confirm", &alice(), now().plus(100)),
        Event::reviewed(&b, &b2, "evidence-only", &alice(), now().plus(300)),
        decided(JudgeVerdict::Allow),
        decided(JudgeVerdict::Escalate),
        decided(JudgeVerdict::Escalate),
        decided(JudgeVerdict::Block),
        overridden(JudgeVerdict::Escalate, JudgeVerdict::Allow),
        overridden(JudgeVerdict::Allow, JudgeVerdict::Block),
        Event {
            at: now(),
            kind: EventKind::Recalled {
                request_id: "r".into(),
                workflow: None,
                memory_ids: vec!["a".into(), "b".into()],
                stale: 1,
                disputed: 0,
            },
        },
    ];
    let m = metrics(&events);
    assert_eq!((m.decisions, m.escalations, m.overrides), (4, 2, 2));
    assert_eq!((m.false_allows, m.false_blocks), (1, 1));
    assert_eq!(m.escalation_rate, Some(0.5));
    assert_eq!(m.override_rate, Some(0.5));
    assert_eq!(
        (
            m.proposed,
            m.confirmed,
            m.downgraded_to_evidence,
            m.rejected
        ),
        (2, 1, 1, 0)
    );
    assert_eq!(m.prevented_from_instruction, 1);
    assert_eq!(m.average_review_seconds, Some(200.0));
    assert_eq!(m.stale_retrieval_rate, Some(0.5));
    assert_eq!(metrics(&[]).escalation_rate, None);
}

#[test]
fn review_actions_are_read_as_the_cli_names_them() {
    for name in praxis_memory::review::ACTION_NAMES {
        let body = match name {
            "confirm" => {
                serde_json::json!({"action": name, "as_instruction": true, "fresh_for": null})
            }
            "edit" => {
                serde_json::json!({"action": name, "summary": "s", "content": null, "lesson": null})
            }
            "restrict" => {
                serde_json::json!({"action": name, "project_id": "p", "visibility": null, "role": null})
            }
            "merge" => serde_json::json!({"action": name, "into": "m2"}),
            _ => serde_json::json!({"action": name}),
        };
        let action: ReviewAction = serde_json::from_value(body).unwrap();
        assert_eq!(action.name(), name);
    }
    let unknown = serde_json::json!({"action": "merge", "into": "m2", "also": 1});
    assert!(serde_json::from_value::<ReviewAction>(unknown).is_err());
    assert!(
        serde_json::from_value::<ReviewAction>(serde_json::json!({"action": "approve"})).is_err()
    );
}

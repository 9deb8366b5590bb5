//! The detector's rules one at a time: hysteresis, the re-arm floor, loops,
//! budgets, telemetry, postures, call pairing and learned backstops.

use praxis_policy::verdict::{Tier, Verdict};
use praxis_session::{
    Baseline, Detector, EventKind, HookEvent, Judgment, Ledger, Lineage, Median, Outcome,
    SessionPolicy, SessionState, Signal, Status, Telemetry, Transition, WorkKind,
};

const T0: u64 = 1_763_980_000_000;

/// A session fed event by event, with a clock that moves `step_s` per event.
struct Session {
    detector: Detector,
    state: SessionState,
    clock_ms: u64,
    step_s: u64,
    role: Option<&'static str>,
}

impl Session {
    fn new(overrides: &str) -> Self {
        let detector = Detector::new(SessionPolicy::with_overrides(overrides).unwrap()).unwrap();
        Session {
            detector,
            state: SessionState::default(),
            clock_ms: T0,
            step_s: 10,
            role: None,
        }
    }

    fn event(&mut self, kind: EventKind, tool: &str, target: &str) -> HookEvent {
        self.clock_ms += self.step_s * 1000;
        HookEvent {
            runtime: "claude-code".into(),
            session: "s".into(),
            kind,
            tool: (!tool.is_empty()).then(|| tool.to_owned()),
            target: (!target.is_empty()).then(|| target.to_owned()),
            cwd: Some("/w".into()),
            call_id: None,
            status: Status::Unknown,
            at_ms: self.clock_ms,
            judgment: None,
        }
    }

    fn feed(&mut self, event: HookEvent) -> Outcome {
        self.detector.observe(&mut self.state, &event)
    }

    /// A judged tool call of `tier` (PreToolUse only).
    fn act(&mut self, tool: &str, target: &str, tier: Tier) -> Outcome {
        let mut e = self.event(EventKind::PreToolUse, tool, target);
        e.judgment = Some(Judgment {
            tier,
            verdict: Verdict::Allow,
            protected: false,
            role: self.role.map(str::to_owned),
        });
        self.feed(e)
    }

    fn finish(&mut self, tool: &str, target: &str, status: Status) -> Outcome {
        let mut e = self.event(EventKind::PostToolUse, tool, target);
        e.status = status;
        self.feed(e)
    }
}

fn boundaries(o: &Outcome) -> Vec<Signal> {
    o.transitions
        .iter()
        .filter_map(|t| match t {
            Transition::Boundary { signal, .. } => Some(*signal),
            _ => None,
        })
        .collect()
}

fn skips(o: &Outcome) -> Vec<Signal> {
    o.transitions
        .iter()
        .filter_map(|t| match t {
            Transition::Skip { signal, .. } => Some(*signal),
            _ => None,
        })
        .collect()
}

/// The action (1-based) at which reads followed by writes become a write phase.
fn shift_at(persist: u32) -> usize {
    let mut s = Session::new(&format!("[hysteresis]\npersist_actions = {persist}\n"));
    let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
    for i in 1..=10 {
        // A read between writes does not break the rise.
        if i % 2 == 0 {
            let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
        }
        let o = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
        if boundaries(&o) == [Signal::WorkKindShift] {
            return i;
        }
    }
    panic!("no shift with persist_actions = {persist}");
}

#[test]
fn a_work_kind_shift_counts_after_it_held_for_n_actions() {
    assert_eq!(shift_at(1), 1);
    assert_eq!(shift_at(3), 3);
    assert_eq!(shift_at(5), 5);
}

#[test]
fn reads_for_n_actions_end_a_pending_rise() {
    let mut s = Session::new("");
    let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
    let _ = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    let _ = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    for _ in 0..3 {
        let _ = s.act("Read", "src/b.rs", Tier::ReadOnly);
    }
    // The rise started over: two more writes are not yet three.
    let _ = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    let o = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    assert!(boundaries(&o).is_empty(), "{o:?}");
    let o = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    assert_eq!(boundaries(&o), [Signal::WorkKindShift]);
}

#[test]
fn the_rearm_floor_holds_a_second_boundary_and_says_so() {
    // Boundary 1: read -> write on the third write; then writes move to a new
    // module two actions later, inside the floor of 4 actions.
    let mut s = Session::new("[hysteresis]\npersist_actions = 2\n");
    let _ = s.act("Read", "src/a/x.rs", Tier::ReadOnly);
    let _ = s.act("Edit", "src/a/x.rs", Tier::ReversibleWrite);
    let o = s.act("Edit", "src/a/x.rs", Tier::ReversibleWrite);
    assert_eq!(boundaries(&o), [Signal::WorkKindShift]);
    let _ = s.act("Edit", "src/b/y.rs", Tier::ReversibleWrite);
    let o = s.act("Edit", "src/b/y.rs", Tier::ReversibleWrite);
    assert!(boundaries(&o).is_empty());
    assert_eq!(skips(&o), [Signal::ScopeChange]);

    // The same moves with the floor at one action arm a boundary.
    let mut s =
        Session::new("[hysteresis]\npersist_actions = 2\nrearm_actions = 1\nrearm_seconds = 1\n");
    let _ = s.act("Read", "src/a/x.rs", Tier::ReadOnly);
    let _ = s.act("Edit", "src/a/x.rs", Tier::ReversibleWrite);
    let _ = s.act("Edit", "src/a/x.rs", Tier::ReversibleWrite);
    let _ = s.act("Edit", "src/b/y.rs", Tier::ReversibleWrite);
    let o = s.act("Edit", "src/b/y.rs", Tier::ReversibleWrite);
    assert_eq!(boundaries(&o), [Signal::ScopeChange]);
}

/// The failure (1-based) of the same test, edits between, that is a loop.
fn failure_loop_at(persist: u32) -> usize {
    let mut s = Session::new(&format!("[hysteresis]\npersist_actions = {persist}\n"));
    for i in 1..=8 {
        let _ = s.act("Edit", "src/lib.rs", Tier::ReversibleWrite);
        let _ = s.act("Bash", "cargo test", Tier::ReversibleWrite);
        let o = s.finish("Bash", "cargo test", Status::Failed);
        if boundaries(&o) == [Signal::FailureLoop] {
            return i;
        }
    }
    panic!("no failure loop with persist_actions = {persist}");
}

#[test]
fn the_same_failing_test_is_a_loop_at_the_configured_n() {
    assert_eq!(failure_loop_at(2), 2);
    assert_eq!(failure_loop_at(3), 3);
    assert_eq!(failure_loop_at(4), 4);
}

#[test]
fn a_success_of_the_call_ends_the_failure_streak() {
    let mut s = Session::new("");
    for status in [
        Status::Failed,
        Status::Failed,
        Status::Ok,
        Status::Failed,
        Status::Failed,
    ] {
        let _ = s.act("Bash", "cargo test", Tier::ReversibleWrite);
        let o = s.finish("Bash", "cargo test", status);
        assert!(!boundaries(&o).contains(&Signal::FailureLoop), "{o:?}");
    }
}

#[test]
fn missing_post_tool_use_disables_only_the_failure_signal() {
    let mut s = Session::new("");
    let start = s.event(EventKind::SessionStart, "", "");
    let _ = s.feed(start);
    let mut disabled = Vec::new();
    for _ in 0..6 {
        let o = s.act("Edit", "src/lib.rs", Tier::ReversibleWrite);
        disabled.extend(o.transitions.iter().filter_map(|t| match t {
            Transition::SignalDisabled { signal, missing } => Some((*signal, *missing)),
            _ => None,
        }));
    }
    assert_eq!(disabled, [(Signal::FailureLoop, Telemetry::Outcomes)]);
    // Outcomes appear: the signal comes back.
    let o = s.finish("Edit", "src/lib.rs", Status::Ok);
    assert!(o.transitions.contains(&Transition::SignalEnabled {
        signal: Signal::FailureLoop
    }));
}

#[test]
fn a_window_expires_at_its_tool_backstop_and_the_next_opens() {
    let mut s = Session::new(
        "[backstops.low]\nactions = 6\n[backstops.medium]\nactions = 6\n[backstops.high]\nactions = 6\n",
    );
    let mut expired_at = None;
    for i in 1..=8 {
        let o = s.act("Read", &format!("src/f{i}.rs"), Tier::ReadOnly);
        if o.transitions
            .iter()
            .any(|t| matches!(t, Transition::WindowExpired { .. }))
        {
            assert_eq!(boundaries(&o), [Signal::ToolBudget]);
            assert!(
                o.transitions
                    .iter()
                    .any(|t| matches!(t, Transition::WindowOpened { window: 2, .. }))
            );
            expired_at = Some(i);
            break;
        }
    }
    // Six actions filled the window; the seventh opens the next one.
    assert_eq!(expired_at, Some(7));
}

#[test]
fn a_window_expires_at_its_time_backstop() {
    let mut s = Session::new(
        "[backstops.low]\nseconds = 100\n[backstops.medium]\nseconds = 100\n[backstops.high]\nseconds = 100\n",
    );
    s.step_s = 40;
    let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
    let _ = s.act("Read", "src/b.rs", Tier::ReadOnly);
    let o = s.act("Read", "src/c.rs", Tier::ReadOnly);
    assert!(boundaries(&o).is_empty());
    let o = s.act("Read", "src/d.rs", Tier::ReadOnly);
    assert_eq!(boundaries(&o), [Signal::ElapsedBudget]);
}

#[test]
fn higher_risk_shortens_the_window() {
    let mut s = Session::new("");
    let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
    let o = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    let raised = o.transitions.iter().find_map(|t| match t {
        Transition::WindowRiskRaised { backstop, .. } => Some(*backstop),
        _ => None,
    });
    let p = SessionPolicy::shipped().unwrap();
    assert_eq!(raised, Some(p.backstops.medium));
    assert!(p.backstops.medium.actions < p.backstops.low.actions);
}

#[test]
fn a_push_after_a_long_edit_phase_is_a_boundary_even_inside_the_floor() {
    let mut s = Session::new("");
    let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
    for _ in 0..20 {
        let _ = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    }
    let o = s.act("Bash", "git push origin main", Tier::ExternalSideEffect);
    assert_eq!(boundaries(&o), [Signal::FirstRisk]);
    let text = o.steer().unwrap();
    assert!(text.contains("a.rs") && !text.contains('{'), "{text}");
    // Once per window: the next push is not another boundary.
    let o = s.act(
        "Bash",
        "git push origin main --tags",
        Tier::ExternalSideEffect,
    );
    assert!(boundaries(&o).is_empty());
}

#[test]
fn the_first_risk_steer_on_a_refused_call_says_it_did_not_run() {
    for verdict in [Verdict::Hold, Verdict::Stop] {
        let mut s = Session::new("");
        let _ = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
        let mut push = s.event(EventKind::PreToolUse, "Bash", "git push origin main");
        push.judgment = Some(Judgment {
            tier: Tier::ExternalSideEffect,
            verdict,
            protected: false,
            role: None,
        });
        let o = s.feed(push);
        assert_eq!(boundaries(&o), [Signal::FirstRisk]);
        let text = o.steer().unwrap();
        assert!(text.contains("did not run"), "{text}");
        assert!(!text.to_lowercase().contains("before it runs"), "{text}");
    }
}

#[test]
fn a_steer_only_director_is_steered_where_a_worker_is_blocked() {
    let policy = "[roles.agent]\nmethod_blocks = [{ kind = \"skipped_verification\" }, { kind = \"wrong_tool\", tool = \"Bash\", target_prefix = \"sed -i\", instead = \"Edit\" }]\n";
    for (role, blocked) in [("agent", true), ("director", false)] {
        let mut s = Session::new(policy);
        s.role = Some(role);
        let _ = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
        let o = s.act("Bash", "git push", Tier::ExternalSideEffect);
        assert_eq!(o.block().is_some(), blocked, "{role}: {o:?}");
        assert!(o.steer().is_some() || blocked, "{role}: {o:?}");
        assert_eq!(
            boundaries(&o).is_empty(),
            blocked,
            "{role}: a blocked action is not counted"
        );
        let o = s.act("Bash", "cargo test", Tier::ReversibleWrite);
        assert!(o.block().is_none());
        let o = s.act("Bash", "git push", Tier::ExternalSideEffect);
        assert!(o.block().is_none(), "{role}: tests ran since the change");
    }
    let mut s = Session::new(policy);
    s.role = Some("agent");
    let o = s.act("Bash", "sed -i s/a/b/ src/a.rs", Tier::ReversibleWrite);
    assert!(o.block().unwrap().contains("Use Edit"), "{o:?}");
}

#[test]
fn a_hook_and_the_praxis_run_it_became_count_as_one_action() {
    let mut s = Session::new("[loops]\nrepeat_calls = 2\n");
    for kind in [EventKind::PreToolUse, EventKind::RunRequest] {
        let mut e = s.event(kind, "Bash", "make");
        e.call_id = Some("toolu_01".into());
        let o = s.feed(e);
        assert!(boundaries(&o).is_empty(), "{o:?}");
    }
    assert_eq!(s.state.actions, 1);
    let mut e = s.event(EventKind::PreToolUse, "Bash", "make");
    e.call_id = Some("toolu_02".into());
    let o = s.feed(e);
    assert_eq!(boundaries(&o), [Signal::RepeatLoop]);
}

#[test]
fn checkpoints_are_satisfied_by_evidence_after_the_boundary_or_skipped() {
    let mut s = Session::new("[checkpoint]\nmechanisms = [\"reread\"]\n");
    let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
    for _ in 0..5 {
        let _ = s.act("Edit", "src/a.rs", Tier::ReversibleWrite);
    }
    let o = s.act("Bash", "git push", Tier::ExternalSideEffect);
    let reread = o.transitions.iter().find_map(|t| match t {
        Transition::CheckpointRequired { reread, .. } => Some(reread.clone()),
        _ => None,
    });
    assert_eq!(reread, Some(vec![String::from("/w/src/a.rs")]));
    // Tests are not a configured mechanism here; re-reading the change is.
    let o = s.act("Bash", "cargo test", Tier::ReversibleWrite);
    assert!(
        !o.transitions
            .iter()
            .any(|t| matches!(t, Transition::CheckpointSatisfied { .. }))
    );
    let o = s.act("Read", "src/a.rs", Tier::ReadOnly);
    assert!(
        o.transitions
            .iter()
            .any(|t| matches!(t, Transition::CheckpointSatisfied { checkpoint: 2, .. })),
        "{o:?}"
    );
}

#[test]
fn a_learned_baseline_shortens_the_backstop_of_its_work_kind() {
    let mut s = Session::new("");
    let mut learned = Baseline::default();
    learned.by_kind.insert(
        WorkKind::Read,
        Median {
            actions: 5,
            elapsed_ms: 120_000,
            windows: 9,
        },
    );
    s.state.learned = Some(learned);
    let _ = s.act("Read", "src/a.rs", Tier::ReadOnly);
    let w = s.state.window.as_ref().unwrap();
    assert_eq!(
        (w.kind, w.backstop.actions, w.backstop.seconds),
        (Some(WorkKind::Read), 10, 240)
    );
    // Without a baseline the same window has the static low-risk backstop.
    let mut fresh = Session::new("");
    let _ = fresh.act("Read", "src/a.rs", Tier::ReadOnly);
    assert_eq!(fresh.state.window.as_ref().unwrap().backstop.actions, 60);
}

#[test]
fn a_held_write_changed_nothing_so_it_needs_no_verification() {
    let mut s =
        Session::new("[roles.agent]\nmethod_blocks = [{ kind = \"skipped_verification\" }]\n");
    s.role = Some("agent");
    let mut held = s.event(EventKind::PreToolUse, "Edit", ".git/config");
    held.judgment = Some(Judgment {
        tier: Tier::ReversibleWrite,
        verdict: Verdict::Hold,
        protected: true,
        role: Some("agent".into()),
    });
    let o = s.feed(held);
    assert_eq!(
        boundaries(&o),
        [Signal::FirstRisk],
        "a protected path is a boundary"
    );
    let o = s.act("Bash", "git push", Tier::ExternalSideEffect);
    assert!(o.block().is_none(), "{o:?}");
    assert!(s.state.window.as_ref().unwrap().changed.is_empty());
}

/// The read windows of a session that reads six files per prompt, taught to
/// `ledger` as they close, as the daemon does.
fn teach_read_turns(ledger: &mut Ledger, lineage: &Lineage, turns: usize) {
    let mut s = Session::new("");
    let _ = s
        .detector
        .seed(&mut s.state, lineage.clone(), Baseline::default());
    for turn in 0..turns {
        let prompt = s.event(EventKind::UserPromptSubmit, "", "");
        let mut outcomes = vec![s.feed(prompt)];
        for i in 0..6 {
            outcomes.push(s.act("Read", &format!("src/f{turn}_{i}.rs"), Tier::ReadOnly));
        }
        for t in outcomes.iter().flat_map(|o| &o.transitions) {
            if let Transition::WindowClosed { record } | Transition::WindowExpired { record } = t {
                let _ = ledger.teach(lineage, record, &s.detector.policy().baseline);
            }
        }
    }
}

/// The action (1-based) of a run of reads at which a tool budget boundary came.
fn tool_budget_at(s: &mut Session) -> Option<usize> {
    (1..=70).find(|i| {
        let o = s.act("Read", &format!("docs/r{i}.md"), Tier::ReadOnly);
        boundaries(&o).contains(&Signal::ToolBudget)
    })
}

#[test]
fn a_finished_session_teaches_the_next_one_of_its_lineage() {
    let lineage = Lineage {
        workspace: "/w".into(),
        role: "agent".into(),
    };
    let mut ledger = Ledger::default();
    teach_read_turns(&mut ledger, &lineage, 7);
    // The first turn's window opened before any work kind was known: it teaches nothing.
    assert_eq!(ledger.samples.len(), 5, "{:?}", ledger.samples);
    assert!(ledger.samples.iter().all(|s| s.record.actions == 6));

    let mut next = Session::new("");
    let learned = ledger.baseline(&lineage, &next.detector.policy().baseline);
    let seeded = next
        .detector
        .seed(&mut next.state, lineage.clone(), learned.clone());
    assert_eq!(
        seeded.transitions,
        [Transition::BaselineSeeded {
            lineage: lineage.clone(),
            learned: learned.clone()
        }]
    );
    assert_eq!(learned.by_kind[&WorkKind::Read].actions, 6);
    // Seeding again (another event of the same session) changes nothing.
    let again = next
        .detector
        .seed(&mut next.state, lineage.clone(), Baseline::default());
    assert!(again.transitions.is_empty());
    assert_eq!(next.state.learned.as_ref(), Some(&learned));
    // Twice the median: the twelfth read fills the window, the thirteenth is a boundary.
    assert_eq!(tool_budget_at(&mut next), Some(13));

    // Another role learned nothing: the static low-risk backstop (60) holds.
    let mut other = Session::new("");
    let director = Lineage {
        role: "director".into(),
        ..lineage.clone()
    };
    let nothing = ledger.baseline(&director, &other.detector.policy().baseline);
    let _ = other.detector.seed(&mut other.state, director, nothing);
    assert_eq!(other.state.learned, None);
    assert_eq!(tool_budget_at(&mut other), Some(61));

    // The ledger survives a round trip through its stored form and teaches the same.
    let stored: Ledger = serde_json::from_str(&serde_json::to_string(&ledger).unwrap()).unwrap();
    assert_eq!(
        stored.baseline(&lineage, &next.detector.policy().baseline),
        learned
    );
}

#[test]
fn windows_a_budget_cut_short_do_not_teach() {
    let lineage = Lineage {
        workspace: "/w".into(),
        role: "agent".into(),
    };
    let mut s = Session::new(
        "[backstops.low]\nactions = 5\n[backstops.medium]\nactions = 5\n[backstops.high]\nactions = 5\n",
    );
    let _ = s
        .detector
        .seed(&mut s.state, lineage.clone(), Baseline::default());
    let mut ledger = Ledger::default();
    let mut expired = 0;
    for i in 0..40 {
        let o = s.act("Read", &format!("src/f{i}.rs"), Tier::ReadOnly);
        for t in &o.transitions {
            match t {
                Transition::WindowExpired { record } => {
                    expired += 1;
                    assert!(!ledger.teach(&lineage, record, &s.detector.policy().baseline));
                }
                Transition::WindowClosed { record } => {
                    let _ = ledger.teach(&lineage, record, &s.detector.policy().baseline);
                }
                _ => {}
            }
        }
    }
    assert!(expired >= 5, "{expired}");
    assert!(ledger.samples.is_empty());
}

fn steers(o: &Outcome) -> Vec<String> {
    o.transitions
        .iter()
        .filter_map(|t| match t {
            Transition::Steer { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn after_the_turn_ended_the_steer_reports_the_last_stretch_that_did_work() {
    let mut s = Session::new("");
    let _ = s.act("Read", "src/http/header.rs", Tier::ReadOnly);
    // The third edit is a shift boundary; five more clear the re-arm floor.
    for _ in 0..8 {
        let _ = s.act("Edit", "src/http/header.rs", Tier::ReversibleWrite);
    }
    let stop = s.event(EventKind::Stop, "", "");
    let _ = s.feed(stop);
    s.step_s = 60;
    let prompt = s.event(EventKind::UserPromptSubmit, "", "");
    let o = s.feed(prompt);
    assert_eq!(boundaries(&o), [Signal::Lifecycle]);
    let text = steers(&o).join("\n");
    // The window the Stop closed, not the empty one the prompt closed.
    assert!(
        text.contains("1 file(s) changed (header.rs)") && !text.contains("was 0 actions"),
        "{text}"
    );
    let o = s.act("Bash", "git push origin fix", Tier::ExternalSideEffect);
    assert_eq!(boundaries(&o), [Signal::FirstRisk]);
    let text = steers(&o).join("\n");
    assert!(text.contains("1 file(s) changed"), "{text}");
    // Re-reading that file is still evidence of a reassessment.
    let o = s.act("Read", "src/http/header.rs", Tier::ReadOnly);
    assert!(
        o.transitions
            .iter()
            .any(|t| matches!(t, Transition::CheckpointSatisfied { .. })),
        "{o:?}"
    );
}

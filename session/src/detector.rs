//! The detector: one event and the session's state in, transitions out.
//! Pure and deterministic: no clock, no I/O, no hash-ordered iteration.

use praxis_policy::verdict::{Tier, Verdict};

use crate::baseline::{Baseline, Lineage};
use crate::event::{EventKind, HookEvent, Judgment, Status, WorkKind};
use crate::policy::{
    Backstop, Mechanism, MethodBlock, PolicyError, Risk, SessionPolicy, Templates,
};
use crate::signal::{SIGNALS, Signal, Telemetry};
use crate::state::{
    CHANGED_FILES_KEPT, Mark, OpenCheckpoint, SessionState, Streak, Stretch, Window,
};
use crate::steer::Slot;
use crate::transition::{Evidence, Outcome, SkipReason, Transition};
use crate::window::{WindowEnd, WindowRecord};

/// How many changed files a checkpoint offers for re-reading, and a steer names.
const REREAD_OFFERED: usize = 8;
const STEER_FILES_NAMED: usize = 3;

/// The boundary detector, configured once from a session policy.
#[derive(Clone, Debug)]
pub struct Detector {
    policy: SessionPolicy,
    templates: Templates,
}

/// A signal that fired on this event, with the facts its steer may name.
#[derive(Clone, Debug, Default)]
struct Fired {
    signal: Option<Signal>,
    reason: String,
    from: Option<WorkKind>,
    to: Option<WorkKind>,
    count: u32,
    module: Option<String>,
}

impl Fired {
    fn new(signal: Signal, reason: String) -> Self {
        Fired {
            signal: Some(signal),
            reason,
            ..Fired::default()
        }
    }

    fn signal(&self) -> Signal {
        self.signal.expect("a fired signal names its signal")
    }
}

/// What an action is, as far as the detector needs to know.
struct Action<'e> {
    tool: &'e str,
    target: Option<&'e str>,
    judgment: Option<&'e Judgment>,
    kind: Option<WorkKind>,
    /// The file the action reads or writes, made absolute with the runtime's cwd.
    path: Option<String>,
    /// The module of that file, relative to the runtime's cwd.
    module: Option<String>,
    plan: bool,
    tests: bool,
}

impl Detector {
    pub fn new(policy: SessionPolicy) -> Result<Self, PolicyError> {
        let templates = policy.templates()?;
        Ok(Detector { policy, templates })
    }

    pub fn policy(&self) -> &SessionPolicy {
        &self.policy
    }

    /// Seeds a session not seeded yet with what its lineage learned (R8):
    /// windows opened from now on take the learned backstops, and its
    /// finished windows teach `lineage`. A seeded session keeps its
    /// baseline (seeding again changes nothing and says nothing).
    pub fn seed(&self, state: &mut SessionState, lineage: Lineage, learned: Baseline) -> Outcome {
        if state.lineage.is_some() {
            return Outcome::default();
        }
        state.lineage = Some(lineage.clone());
        state.learned = (!learned.by_kind.is_empty()).then(|| learned.clone());
        Outcome {
            transitions: vec![Transition::BaselineSeeded { lineage, learned }],
        }
    }

    /// Feeds one event of the session whose state is `state`. The daemon
    /// audits every transition, delivers the steer through the runtime's
    /// channel, refuses the action on a block, and persists `state`.
    pub fn observe(&self, state: &mut SessionState, event: &HookEvent) -> Outcome {
        let now = if event.at_ms == 0 {
            state.last_ms
        } else {
            state.seen.insert(Telemetry::Timestamps);
            event.at_ms.max(state.last_ms)
        };
        state.last_ms = now;
        let mut step = Step {
            det: self,
            st: state,
            now,
            out: Vec::new(),
        };
        match event.kind {
            EventKind::SessionStart => {
                step.st.seen.insert(Telemetry::Lifecycle);
                step.ensure_window(Risk::Low);
            }
            EventKind::UserPromptSubmit => {
                step.st.seen.insert(Telemetry::Lifecycle);
                step.st.turn_ended = false;
                if step.st.actions > 0 {
                    let fired =
                        Fired::new(Signal::Lifecycle, String::from("A new user prompt began."));
                    step.arm(vec![fired], Risk::Low);
                }
                step.ensure_window(Risk::Low);
            }
            EventKind::Stop => {
                step.st.seen.insert(Telemetry::Lifecycle);
                step.close_window(WindowEnd::TurnEnded);
                step.st.turn_ended = true;
            }
            EventKind::PreToolUse | EventKind::RunRequest => step.action(event),
            EventKind::PostToolUse | EventKind::RunFinished => step.outcome(event),
        }
        step.check_telemetry();
        Outcome {
            transitions: step.out,
        }
    }
}

/// One event being processed.
struct Step<'d, 's> {
    det: &'d Detector,
    st: &'s mut SessionState,
    now: u64,
    out: Vec<Transition>,
}

impl Step<'_, '_> {
    fn policy(&self) -> &SessionPolicy {
        &self.det.policy
    }

    fn action(&mut self, event: &HookEvent) {
        if let Some(id) = &event.call_id
            && !self.st.first_sight(id, false)
        {
            // The praxis-run of a call its hook already reported: one action.
            return;
        }
        let action = self.read_action(event);
        self.st.seen.insert(Telemetry::Actions);
        if action.judgment.is_some() {
            self.st.seen.insert(Telemetry::Judgment);
        }
        if action.path.is_some() {
            self.st.seen.insert(Telemetry::FileTargets);
        }
        if self.method_rule(&action) {
            return;
        }
        self.st.actions += 1;
        self.collect_evidence(&action);
        let risk = action_risk(&action);
        let mut fired = Vec::new();
        if std::mem::take(&mut self.st.turn_ended) {
            fired.push(Fired::new(
                Signal::Lifecycle,
                String::from("A new turn began after the agent stopped."),
            ));
        }
        fired.extend(self.first_risk(&action));
        fired.extend(self.kind_shift(action.kind));
        if action.kind == Some(WorkKind::Write)
            && let Some(module) = &action.module
        {
            fired.extend(self.scope_move(module));
        }
        fired.extend(self.repeat(&action));
        fired.extend(self.budgets());
        fired.sort_by_key(Fired::signal);
        let armed = self.arm(fired, risk);
        if armed.contains(&Signal::RepeatLoop)
            && let Some(r) = &mut self.st.repeating
        {
            r.reported = true;
        }
        self.ensure_window(risk);
        self.apply(&action, risk);
    }

    fn outcome(&mut self, event: &HookEvent) {
        if let Some(id) = &event.call_id
            && !self.st.first_sight(id, true)
        {
            return;
        }
        if event.status == Status::Unknown {
            return;
        }
        self.st.seen.insert(Telemetry::Outcomes);
        let key = call_key(event.tool.as_deref().unwrap_or(""), event.target.as_deref());
        if event.status == Status::Ok {
            if self.st.failing.as_ref().is_some_and(|f| f.value == key) {
                self.st.failing = None;
            }
            return;
        }
        let n = self.policy().hysteresis.persist_actions;
        let streak = Streak::bump(&mut self.st.failing, key);
        if streak.count < n || streak.reported {
            return;
        }
        let count = streak.count;
        let fired = Fired {
            count,
            ..Fired::new(
                Signal::FailureLoop,
                format!(
                    "The same {} call failed {count} times in a row.",
                    event.tool.as_deref().unwrap_or("tool")
                ),
            )
        };
        if !self.arm(vec![fired], Risk::Low).is_empty()
            && let Some(f) = &mut self.st.failing
        {
            f.reported = true;
        }
        self.ensure_window(Risk::Low);
    }

    fn read_action<'e>(&self, event: &'e HookEvent) -> Action<'e> {
        let tools = &self.policy().tools;
        let tool = event.tool.as_deref().unwrap_or("");
        let named = |list: &[String]| list.iter().any(|t| t == tool);
        let plan = named(&tools.plan);
        let shell = named(&tools.shell);
        let file = named(&tools.read) || named(&tools.write);
        let judgment = event.judgment.as_ref();
        let kind = if plan {
            None
        } else if let Some(j) = judgment {
            Some(WorkKind::from_tier(j.tier))
        } else if named(&tools.read) || named(&tools.web) {
            Some(WorkKind::Read)
        } else if named(&tools.write) {
            Some(WorkKind::Write)
        } else {
            None
        };
        let target = event.target.as_deref();
        let file_target = target.filter(|_| file);
        let cwd = event.cwd.as_deref();
        Action {
            tool,
            target,
            judgment,
            kind,
            path: file_target.map(|t| absolute(t, cwd)),
            module: file_target.map(|t| module_of(t, cwd, self.policy().scope.depth)),
            plan,
            tests: shell
                && target
                    .is_some_and(|t| is_test_command(t, &self.policy().checkpoint.test_commands)),
        }
    }

    /// Applies the caller's method rules. A steer-only role is steered
    /// instead of blocked. True when the action is blocked (and not counted).
    fn method_rule(&mut self, action: &Action) -> bool {
        let role = action.judgment.and_then(|j| j.role.as_deref());
        let posture = self.det.policy.posture(role);
        let Some((rule, reason)) = posture
            .method_blocks
            .iter()
            .find_map(|rule| self.method_reason(rule, action).map(|r| (rule, r)))
        else {
            return false;
        };
        let fired = Fired {
            reason,
            ..Fired::default()
        };
        let text = self.render(&self.det.templates.method, &fired, rule.name(), &[], None);
        if posture.steer_only {
            self.out.push(Transition::Steer { signal: None, text });
            return false;
        }
        self.out.push(Transition::Block {
            method: rule.name().to_owned(),
            reason: text,
        });
        true
    }

    fn method_reason(&self, rule: &MethodBlock, action: &Action) -> Option<String> {
        match rule {
            MethodBlock::SkippedVerification => (action.kind == Some(WorkKind::External)
                && self.st.untested_writes)
                .then(|| {
                    String::from(
                        "This reaches outside after files were changed, and no test has run since the last change. Run the tests first.",
                    )
                }),
            MethodBlock::BuildBeforePlan => (action.kind == Some(WorkKind::Write)
                && !self.st.plan_seen)
                .then(|| {
                    String::from(
                        "This is the first change of the session and no plan was written yet. Write the plan first.",
                    )
                }),
            MethodBlock::WrongTool {
                tool,
                target_prefix,
                instead,
            } => (action.tool == tool
                && action
                    .target
                    .is_some_and(|t| t.trim_start().starts_with(target_prefix.as_str())))
            .then(|| format!("Use {instead} for this, not {tool} with `{target_prefix}`.")),
        }
    }

    /// Evidence for the open checkpoint, from an action after its boundary.
    fn collect_evidence(&mut self, action: &Action) {
        if action.plan {
            self.st.plan_seen = true;
        }
        let Some(open) = &self.st.checkpoint else {
            return;
        };
        let reread = action.kind == Some(WorkKind::Read)
            && action
                .path
                .as_ref()
                .is_some_and(|p| open.reread.contains(p));
        let mechanism = [
            (Mechanism::Reread, reread),
            (Mechanism::PlanUpdate, action.plan),
            (Mechanism::TestsRun, action.tests),
        ]
        .into_iter()
        .find(|(m, shown)| *shown && self.policy().checkpoint.mechanisms.contains(m))
        .map(|(m, _)| m);
        if let Some(mechanism) = mechanism {
            let id = open.id;
            self.st.checkpoint = None;
            self.out.push(Transition::CheckpointSatisfied {
                checkpoint: id,
                evidence: Evidence {
                    mechanism,
                    tool: action.tool.to_owned(),
                    target: action.target.map(str::to_owned),
                },
            });
        }
    }

    fn first_risk(&mut self, action: &Action) -> Option<Fired> {
        let j = action.judgment?;
        let tier_reached = j.tier >= self.policy().risk.first_risk_tier;
        if !(tier_reached || j.protected) || self.st.window.as_ref().is_some_and(|w| w.risk_seen) {
            return None;
        }
        if let Some(w) = &mut self.st.window {
            w.risk_seen = true;
        }
        let what = if j.protected {
            String::from("This is the first action on a protected path in this stretch of work")
        } else {
            format!(
                "This is the first {} ({}) action in this stretch of work",
                tier_words(j.tier),
                j.tier.label()
            )
        };
        // The steer goes with the decision: a refused call will not run.
        let reason = match j.verdict {
            Verdict::Allow => format!("{what}."),
            _ => format!("{what}; it was refused and did not run."),
        };
        Some(Fired::new(Signal::FirstRisk, reason))
    }

    /// R5a hysteresis on the work kind: a rise counts once actions at or
    /// above the new kind were seen `persist_actions` times before the old
    /// kind held that long again; a fall back is a silent phase change.
    fn kind_shift(&mut self, kind: Option<WorkKind>) -> Option<Fired> {
        let kind = kind?;
        let n = self.policy().hysteresis.persist_actions;
        let Some(phase) = self.st.phase else {
            self.st.phase = Some(kind);
            return None;
        };
        if kind <= phase {
            self.st.calm += 1;
            self.st.fall = if kind < phase { self.st.fall + 1 } else { 0 };
            if self.st.calm >= n {
                self.st.rise = None;
            }
            if self.st.fall >= n {
                self.st.phase = Some(kind);
                self.st.fall = 0;
                self.st.calm = 0;
            }
            return None;
        }
        self.st.calm = 0;
        self.st.fall = 0;
        let rise = match &mut self.st.rise {
            Some(r) if kind >= r.value => {
                r.count += 1;
                r
            }
            Some(r) => r,
            None => self.st.rise.insert(Streak::new(kind)),
        };
        if rise.count < n {
            return None;
        }
        let to = rise.value;
        self.st.rise = None;
        self.st.phase = Some(to);
        Some(Fired {
            from: Some(phase),
            to: Some(to),
            ..Fired::new(Signal::WorkKindShift, format!("It held for {n} actions."))
        })
    }

    /// R5a hysteresis on scope: writes count as moved to a module never
    /// written before once `persist_actions` writes in a row went there.
    fn scope_move(&mut self, module: &str) -> Option<Fired> {
        let module = module.to_owned();
        let n = self.policy().hysteresis.persist_actions;
        if self.st.module.is_none() || self.st.modules.contains(&module) {
            self.st.module = Some(module.clone());
            self.st.modules.insert(module);
            self.st.module_move = None;
            return None;
        }
        let streak = Streak::bump(&mut self.st.module_move, module);
        if streak.count < n {
            return None;
        }
        let module = streak.value.clone();
        self.st.module_move = None;
        self.st.module = Some(module.clone());
        self.st.modules.insert(module.clone());
        Some(Fired {
            module: Some(module.clone()),
            ..Fired::new(
                Signal::ScopeChange,
                format!(
                    "Changes moved into {module}, a module not changed before in this session."
                ),
            )
        })
    }

    /// The same call back to back. File writes are left out: their target
    /// (the path) is not the whole call, and edits to one file in a row are
    /// ordinary work.
    fn repeat(&mut self, action: &Action) -> Option<Fired> {
        if self.policy().tools.write.iter().any(|t| t == action.tool) {
            self.st.repeating = None;
            return None;
        }
        let limit = self.policy().loops.repeat_calls;
        let streak = Streak::bump(&mut self.st.repeating, call_key(action.tool, action.target));
        if streak.count < limit || streak.reported {
            return None;
        }
        let count = streak.count;
        Some(Fired {
            count,
            ..Fired::new(
                Signal::RepeatLoop,
                format!(
                    "The same {} call was made {count} times in a row.",
                    action.tool
                ),
            )
        })
    }

    /// The window's backstops, checked before this action joins it.
    fn budgets(&self) -> Vec<Fired> {
        let Some(w) = &self.st.window else {
            return Vec::new();
        };
        let mut fired = Vec::new();
        if w.actions >= w.backstop.actions {
            fired.push(Fired::new(
                Signal::ToolBudget,
                format!(
                    "This stretch of work reached its budget of {} actions.",
                    w.backstop.actions
                ),
            ));
        }
        let elapsed_s = self.now.saturating_sub(w.opened.at_ms) / 1000;
        if self.st.seen.contains(&Telemetry::Timestamps) && elapsed_s >= w.backstop.seconds {
            fired.push(Fired::new(
                Signal::ElapsedBudget,
                format!(
                    "This stretch of work reached its budget of {} minutes.",
                    w.backstop.seconds.div_ceil(60)
                ),
            ));
        }
        fired
    }

    /// Arms a boundary on the first enabled signal that fired, unless the
    /// re-arm floor holds it (see `Signal::held_by_floor`). Returns
    /// the signals that took part in an armed boundary.
    fn arm(&mut self, fired: Vec<Fired>, risk: Risk) -> Vec<Signal> {
        let mut fired: Vec<Fired> = fired
            .into_iter()
            .filter(|f| !self.st.disabled.contains(&f.signal()))
            .collect();
        if fired.is_empty() {
            return Vec::new();
        }
        let primary = fired.remove(0);
        let signal = primary.signal();
        if signal.held_by_floor()
            && let Some(reason) = self.floor()
        {
            for s in std::iter::once(signal).chain(fired.iter().map(Fired::signal)) {
                self.out.push(Transition::Skip { signal: s, reason });
            }
            return Vec::new();
        }
        self.close_window(WindowEnd::Boundary(signal));
        if let Some(open) = self.st.checkpoint.take() {
            self.out.push(Transition::CheckpointSkipped {
                checkpoint: open.id,
            });
        }
        let also: Vec<Signal> = fired.iter().map(Fired::signal).collect();
        self.out.push(Transition::Boundary {
            signal,
            also: also.clone(),
            reason: primary.reason.clone(),
            action: self.st.actions,
        });
        // The steer and the re-read evidence are about the last stretch
        // that did work: the window just closed, or, when it was empty (a
        // prompt or a push right after the turn ended), the one before.
        let (record, changed) = self
            .st
            .last_stretch
            .clone()
            .map(|s| (s.record, s.changed))
            .unzip();
        let changed = changed.unwrap_or_default();
        let text = self.render(
            self.det.templates.for_signal(signal),
            &primary,
            "",
            &changed,
            record.as_ref(),
        );
        self.out.push(Transition::Steer {
            signal: Some(signal),
            text,
        });
        self.st.checkpoints += 1;
        let open = OpenCheckpoint {
            id: self.st.checkpoints,
            reread: changed.into_iter().take(REREAD_OFFERED).collect(),
        };
        self.out.push(Transition::CheckpointRequired {
            checkpoint: open.id,
            mechanisms: self.policy().checkpoint.mechanisms.clone(),
            reread: open.reread.clone(),
        });
        self.st.checkpoint = Some(open);
        self.st.last_boundary = Some(Mark {
            action: self.st.actions,
            at_ms: self.now,
        });
        self.ensure_window(risk);
        std::iter::once(signal).chain(also).collect()
    }

    /// The re-arm floor: held while fewer than K actions and (with
    /// timestamps) fewer than T seconds have passed since the last boundary.
    fn floor(&self) -> Option<SkipReason> {
        let mark = self.st.last_boundary?;
        let h = &self.policy().hysteresis;
        let actions_since = self.st.actions - mark.action;
        let seconds_since = self.now.saturating_sub(mark.at_ms) / 1000;
        let timed = self.st.seen.contains(&Telemetry::Timestamps);
        let held = actions_since < h.rearm_actions || (timed && seconds_since < h.rearm_seconds);
        held.then_some(SkipReason::RearmFloor {
            actions_since,
            seconds_since,
        })
    }

    fn ensure_window(&mut self, risk: Risk) {
        if self.st.window.is_some() {
            return;
        }
        self.st.windows += 1;
        let kind = self.st.phase;
        let backstop = self.backstop(kind, risk);
        self.st.window = Some(Window {
            id: self.st.windows,
            opened: Mark {
                action: self.st.actions,
                at_ms: self.now,
            },
            actions: 0,
            kind,
            risk,
            backstop,
            changed: Default::default(),
            risk_seen: false,
        });
        self.out.push(Transition::WindowOpened {
            window: self.st.windows,
            kind,
            risk,
            backstop,
        });
    }

    /// Closes the open window; one that did work becomes the last stretch.
    fn close_window(&mut self, end: WindowEnd) {
        let Some(w) = self.st.window.take() else {
            return;
        };
        let record = WindowRecord {
            window: w.id,
            kind: w.kind,
            risk: w.risk,
            actions: w.actions,
            elapsed_ms: self.now.saturating_sub(w.opened.at_ms),
            end,
        };
        let expired = matches!(end, WindowEnd::Boundary(s) if s.is_budget());
        self.out.push(if expired {
            Transition::WindowExpired {
                record: record.clone(),
            }
        } else {
            Transition::WindowClosed {
                record: record.clone(),
            }
        });
        if record.actions > 0 {
            self.st.last_stretch = Some(Stretch {
                record,
                changed: w.changed.into_iter().collect(),
            });
        }
    }

    /// The backstop of a window of this kind and risk: static, or learned (R8).
    fn backstop(&self, kind: Option<WorkKind>, risk: Risk) -> Backstop {
        let p = self.policy();
        let fixed = p.backstops.for_risk(risk);
        let floor = Backstop {
            actions: p.hysteresis.rearm_actions,
            seconds: p.hysteresis.rearm_seconds,
        };
        match &self.st.learned {
            Some(learned) => learned.backstop(kind, fixed, floor, &p.baseline),
            None => fixed,
        }
    }

    /// Adds the action to the open window. An action Praxis held or
    /// stopped is part of the trajectory but changed nothing (yet).
    fn apply(&mut self, action: &Action, risk: Risk) {
        let ran = action.judgment.is_none_or(|j| j.verdict == Verdict::Allow);
        let wrote = ran && action.kind == Some(WorkKind::Write);
        // A test run is a write itself (it builds); it still verifies what came before.
        if action.tests && ran {
            self.st.untested_writes = false;
        } else if wrote {
            self.st.untested_writes = true;
        }
        let raised = self
            .st
            .window
            .as_ref()
            .is_some_and(|w| risk > w.risk)
            .then(|| self.backstop(self.st.window.as_ref().and_then(|w| w.kind), risk));
        let Some(w) = &mut self.st.window else {
            return;
        };
        w.actions += 1;
        if let Some(j) = action.judgment
            && (j.tier >= self.det.policy.risk.first_risk_tier || j.protected)
        {
            w.risk_seen = true;
        }
        if wrote
            && let Some(path) = &action.path
            && w.changed.len() < CHANGED_FILES_KEPT
        {
            w.changed.insert(path.clone());
        }
        if let Some(backstop) = raised {
            w.risk = risk;
            w.backstop = backstop;
            self.out.push(Transition::WindowRiskRaised {
                window: w.id,
                risk,
                backstop,
            });
        }
    }

    /// R12: after the grace period, a signal whose telemetry never came is
    /// disabled; it is enabled again when the telemetry appears.
    fn check_telemetry(&mut self) {
        if self.st.actions < self.policy().telemetry.grace_actions {
            return;
        }
        for signal in SIGNALS {
            let missing = signal.needs();
            if !self.st.seen.contains(&missing) {
                if self.st.disabled.insert(signal) {
                    self.out
                        .push(Transition::SignalDisabled { signal, missing });
                }
            } else if self.st.disabled.remove(&signal) {
                self.out.push(Transition::SignalEnabled { signal });
            }
        }
    }

    fn render(
        &self,
        template: &crate::steer::Template,
        fired: &Fired,
        method: &str,
        changed: &[String],
        closed: Option<&WindowRecord>,
    ) -> String {
        template.render(|slot| match slot {
            Slot::Signal => fired.signal.map_or("", Signal::as_str).to_owned(),
            Slot::Reason => fired.reason.clone(),
            Slot::From => fired.from.map_or("-", WorkKind::as_str).to_owned(),
            Slot::To => fired.to.map_or("-", WorkKind::as_str).to_owned(),
            Slot::WindowActions => closed.map_or(0, |r| r.actions).to_string(),
            Slot::WindowMinutes => closed.map_or(0, |r| r.elapsed_ms / 60_000).to_string(),
            Slot::Count => fired.count.to_string(),
            Slot::Module => fired.module.clone().unwrap_or_else(|| String::from("-")),
            Slot::ChangedCount => changed.len().to_string(),
            Slot::ChangedFiles => name_files(changed),
            Slot::Method => method.to_owned(),
        })
    }
}

fn action_risk(action: &Action) -> Risk {
    match (action.judgment, action.kind) {
        (Some(j), _) => Risk::of(j.tier, j.protected),
        (None, Some(WorkKind::External)) => Risk::High,
        (None, Some(WorkKind::Write)) => Risk::Medium,
        (None, _) => Risk::Low,
    }
}

fn tier_words(tier: Tier) -> &'static str {
    match tier {
        Tier::ReadOnly => "read-only",
        Tier::ReversibleWrite => "reversible-write",
        Tier::ExternalSideEffect => "external-side-effect",
        Tier::HighRisk => "high-risk",
    }
}

/// What makes two calls "the same call": tool and target.
fn call_key(tool: &str, target: Option<&str>) -> String {
    format!("{tool}\u{1f}{}", target.unwrap_or(""))
}

/// `path` made absolute against `cwd` when it is relative and cwd is known.
fn absolute(path: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(cwd) if !path.starts_with('/') => {
            format!(
                "{}/{}",
                cwd.trim_end_matches('/'),
                path.trim_start_matches("./")
            )
        }
        _ => path.to_owned(),
    }
}

/// The module of a file: the first `depth` directories of its parent,
/// relative to `cwd` when the file is under it (`.` for files at its top).
/// Files outside keep their absolute directories, so trees never share a module.
fn module_of(path: &str, cwd: Option<&str>, depth: usize) -> String {
    let relative = cwd
        .and_then(|c| path.strip_prefix(c.trim_end_matches('/')))
        .and_then(|rest| rest.strip_prefix('/'));
    let (path, root) = match relative {
        Some(rest) => (rest, ""),
        None if path.starts_with('/') => (path, "/"),
        None => (path, ""),
    };
    let dirs: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    if dirs.is_empty() {
        return String::from(".");
    }
    let module: Vec<&str> = dirs.iter().take(depth).copied().collect();
    format!("{root}{}", module.join("/"))
}

/// Whether a shell command runs tests: one of its simple commands (split on
/// `&&`, `||`, `;`, `|`, newlines; leading `VAR=value` words dropped)
/// starts with a configured test command.
fn is_test_command(command: &str, tests: &[String]) -> bool {
    command
        .split(['\n', ';', '|', '&'])
        .map(|part| {
            let mut words = part
                .split_whitespace()
                .skip_while(|w| w.contains('=') && !w.starts_with('-'));
            let mut line = String::new();
            for w in words.by_ref() {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(w);
            }
            line
        })
        .any(|line| {
            tests.iter().any(|t| {
                line.strip_prefix(t.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
            })
        })
}

/// Up to three file names, then how many more.
fn name_files(changed: &[String]) -> String {
    if changed.is_empty() {
        return String::from("none");
    }
    let mut names: Vec<&str> = changed
        .iter()
        .take(STEER_FILES_NAMED)
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect();
    let more = changed.len().saturating_sub(STEER_FILES_NAMED);
    let more_text = format!("{more} more");
    if more > 0 {
        names.push(&more_text);
    }
    names.join(", ")
}

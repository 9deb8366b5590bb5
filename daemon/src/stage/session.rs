//! The session stage: an exec request that names a session joins its
//! trajectory before its intent is recorded (a steer rides the decision
//! frame, a method block refuses it), and its end joins after the outcome
//! (a steer rides the exit frame). The detector and the per-session state are below the stages
//! (`crate::store::sessions`); this is what one request does with them.

use std::sync::Arc;

use praxis_proto::{Command, ExitStatus, Verdict};
use praxis_session::{EventKind as Doorway, Status};

use crate::gate::{Executed, Gate, Refusal, Trail};
use crate::store::audit::AuditStore;
use crate::store::sessions::{
    Appends, METHOD_RULE_PREFIX, Observed, Redact, Sessions, command_text, event, judgment,
    scope_of,
};

/// An exec request with a session, before its intent is recorded: the
/// action joins the trajectory; a steer goes to the agent with an ALLOW's
/// decision, before the output; a method block refuses it (STOP). The
/// step's audit events are queued, to be awaited once the intent, queued
/// after them, is.
pub fn admit(
    sessions: &Arc<Sessions>,
    audit: &AuditStore,
    redact: &Redact<'_>,
    gate: Gate,
    trail: &Trail,
    command: &Command,
    call_id: Option<&str>,
) -> (Gate, Option<Appends>) {
    let Some(scope) = scope_of(trail.runtime.as_deref(), trail.session.as_deref()) else {
        return (gate, None);
    };
    let (verdict, refusal) = match &gate {
        Gate::Allow(permit) => (Verdict::Allow, Refusal::of(&permit.decision)),
        Gate::Held(held) => (Verdict::Hold, held.refusal.clone()),
        Gate::Hold(r) => (Verdict::Hold, r.clone()),
        Gate::Stop(r) => (Verdict::Stop, r.clone()),
    };
    let mut hook = event(
        scope,
        Doorway::RunRequest,
        Some(String::from("praxis-run")),
        Some(command_text(command)),
    );
    hook.cwd = Some(trail.cwd.clone());
    hook.call_id = call_id.map(str::to_owned);
    hook.judgment = Some(judgment(
        refusal.tier,
        verdict,
        &refusal.rule_ids,
        &trail.role,
    ));
    let (observed, appends) =
        sessions.observe_queued(audit, redact, hook, Some(&trail.request_id), None);
    let gate = match (gate, observed) {
        (
            Gate::Allow(_),
            Observed {
                block: Some((method, reason)),
                ..
            },
        ) => Gate::Stop(Refusal {
            reason,
            rule_ids: vec![format!("{METHOD_RULE_PREFIX}{method}")],
            approvable: false,
            ..refusal
        }),
        (
            Gate::Allow(mut permit),
            Observed {
                steer: Some(steer), ..
            },
        ) => {
            permit.steer = Some(steer);
            Gate::Allow(permit)
        }
        (gate, _) => gate,
    };
    (gate, Some(appends))
}

/// An exec request with a session has ended: its status joins the
/// trajectory; the steer it reached (a failure loop) is returned, to go to
/// the agent with the exit frame, with the step's audit events, queued.
pub fn finished(
    sessions: &Arc<Sessions>,
    audit: &AuditStore,
    redact: &Redact<'_>,
    trail: &Trail,
    command: &Command,
    call_id: Option<&str>,
    executed: &Executed,
) -> (Option<String>, Option<Appends>) {
    let Some(scope) = scope_of(trail.runtime.as_deref(), trail.session.as_deref()) else {
        return (None, None);
    };
    let Executed::Ran(ran) = executed else {
        return (None, None);
    };
    let mut hook = event(
        scope,
        Doorway::RunFinished,
        Some(String::from("praxis-run")),
        Some(command_text(command)),
    );
    hook.cwd = Some(trail.cwd.clone());
    hook.call_id = call_id.map(str::to_owned);
    hook.status = match ran.status {
        ExitStatus::Code(0) => Status::Ok,
        _ => Status::Failed,
    };
    let (observed, appends) =
        sessions.observe_queued(audit, redact, hook, Some(&trail.request_id), None);
    (observed.steer, Some(appends))
}

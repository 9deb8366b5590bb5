//! The audit stages: the intent record, committed before anything runs (a
//! failed write turns an ALLOW into a HOLD), the start of an allowed command,
//! and its outcome. Raw arguments and output are never written: the trail
//! carries redacted commands and digests only.

use praxis_policy::Tier;

use crate::audit::{Durability, Event, EventKind};
use crate::execute::Executed;
use crate::pipeline::{Gate, Refusal, Trail};
use crate::state::Daemon;

/// T2 and above are fsynced before the command may run; T0/T1 ride the group commit.
fn durability(tier: Tier) -> Durability {
    if tier >= Tier::ExternalSideEffect {
        Durability::Full
    } else {
        Durability::Normal
    }
}

/// An event about the request of `trail`, its common fields filled.
pub fn base(kind: EventKind, trail: &Trail) -> Event {
    Event {
        request_id: Some(trail.request_id.clone()),
        session: trail.session.clone(),
        role: Some(trail.role.clone()),
        uid: Some(trail.peer.uid),
        pid: trail.peer.pid.and_then(|p| u32::try_from(p).ok()),
        runtime: trail.runtime.clone(),
        cwd: Some(trail.cwd.clone()),
        argv_redacted: trail.argv_redacted.clone(),
        arguments_digest: Some(trail.arguments_digest.clone()),
        policy_revision: trail.policy_revision.clone(),
        ..Event::new(kind)
    }
}

fn decided(trail: &Trail, verdict: &str, r: &Refusal) -> Event {
    Event {
        tier: Some(r.tier.as_str().to_owned()),
        decision: Some(verdict.to_owned()),
        reason: Some(r.reason.clone()),
        rule_ids: Some(r.rule_ids.clone()),
        profile: Some(r.profile.as_str().to_owned()),
        ..base(EventKind::Decided, trail)
    }
}

/// Records the decision. Every decision is recorded; an ALLOW whose record
/// cannot be committed becomes a HOLD.
pub async fn intent(daemon: &Daemon, gate: Gate, trail: &Trail) -> Gate {
    let event = match &gate {
        Gate::Allow(permit) => {
            let d = &permit.decision;
            Event {
                tier: Some(d.tier.as_str().to_owned()),
                decision: Some(String::from("ALLOW")),
                reason: Some(d.reason.clone()),
                rule_ids: Some(d.rule_ids.clone()),
                profile: Some(d.profile.as_str().to_owned()),
                ..base(EventKind::Decided, trail)
            }
        }
        Gate::Hold(r) => decided(trail, "HOLD", r),
        Gate::Stop(r) => decided(trail, "STOP", r),
    };
    let tier = match &gate {
        Gate::Allow(permit) => permit.decision.tier,
        Gate::Hold(r) | Gate::Stop(r) => r.tier,
    };
    match (daemon.record(event, durability(tier)).await, gate) {
        (Ok(_), gate) => gate,
        (Err(e), Gate::Allow(permit)) => Gate::hold(
            format!("audit write failed: {e}"),
            permit.decision.tier,
            permit.decision.profile,
        ),
        (Err(e), refused) => {
            tracing::error!("audit of a refusal failed: {e}");
            refused
        }
    }
}

/// Records that an allowed command is running (best effort: the intent is
/// already committed, and the outcome follows).
pub async fn started(daemon: &Daemon, trail: &Trail, child_pid: i32) {
    let mut detail = serde_json::Map::new();
    detail.insert("child_pid".into(), child_pid.into());
    let event = Event {
        detail: Some(detail),
        ..base(EventKind::Started, trail)
    };
    if let Err(e) = daemon.record(event, Durability::Normal).await {
        tracing::error!("audit of a start failed: {e}");
    }
}

/// Records how an allowed command ended, or why it never started.
pub async fn outcome(daemon: &Daemon, trail: &Trail, executed: &Executed) {
    let event = match executed {
        Executed::NotStarted {
            reason,
            tier,
            profile,
        } => Event {
            decision: Some(String::from("HOLD")),
            reason: Some(reason.clone()),
            tier: Some(tier.as_str().to_owned()),
            profile: Some(profile.as_str().to_owned()),
            ..base(EventKind::Finished, trail)
        },
        Executed::Ran(ran) => {
            let mut detail = serde_json::Map::new();
            if let Some(why) = &ran.ended_because {
                detail.insert("ended_because".into(), why.clone().into());
            }
            if ran.timed_out {
                detail.insert("timed_out".into(), true.into());
            }
            Event {
                exit_code: ran.exit_code,
                signal: ran.signal,
                duration_ms: Some(ran.duration_ms),
                stdout_bytes: Some(ran.stdout_bytes),
                stderr_bytes: Some(ran.stderr_bytes),
                output_digest: Some(ran.output_digest.clone()),
                truncated: Some(ran.truncated),
                profile: Some(ran.profile.as_str().to_owned()),
                detail: (!detail.is_empty()).then_some(detail),
                ..base(EventKind::Finished, trail)
            }
        }
    };
    if let Err(e) = daemon.record(event, Durability::Normal).await {
        tracing::error!("audit of an outcome failed: {e}");
    }
}

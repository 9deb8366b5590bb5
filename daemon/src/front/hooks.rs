//! The hook adapters' API: a tool call judged before the runtime acts on it
//! (the judging itself is [`judged::judge_tool_call`]), answered with a
//! decision frame, and the adapters' notes (a tool call's outcome, a
//! session's end, a contract verdict), which are audited and decide
//! nothing. Both feed the session's trajectory.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use praxis_proto::{
    DecisionFrame, JudgeRequest, NoteRequest, OperatorReply, ServerMsg, Subject, Verdict,
};
use praxis_session::{EventKind as SessionDoorway, Status};

use crate::conn::{Peer, Writer};
use crate::errors;
use crate::gate::{Refusal, Trail, decision_frame};
use crate::pipeline::judged::{self, Judged};
use crate::state::Daemon;
use crate::store::audit::{Durability, Event, EventKind};
use crate::store::sessions;

/// Note kinds an adapter may record.
pub const NOTE_KINDS: &[&str] = &[
    "tool_finished",
    "session_ended",
    "contract_checked",
    "hook_stopped",
    "session_started",
    "prompt_submitted",
];

/// Judges one tool call, records the decision, answers with a decision frame.
pub async fn tool_call(
    daemon: &Arc<Daemon>,
    peer: Peer,
    request: JudgeRequest,
    cwd_dir: OwnedFd,
    writer: &mut Writer,
) {
    daemon.counters.requests.fetch_add(1, Ordering::Relaxed);
    let Judged {
        trail,
        verdict,
        details,
        token,
        unrecorded,
        approves_itself,
    } = judged::judge_tool_call(daemon, peer, &request, cwd_dir).await;
    let (observed, appends) = observe(daemon, &request, &trail, verdict, &details, unrecorded);
    // An allowed command the adapter runs through praxis-run is judged and
    // audited again before it runs: its records may commit after the answer.
    let answer_first = request.runs_through_praxis_run
        && !approves_itself
        && verdict == Verdict::Allow
        && observed.block.is_none()
        && matches!(request.subject, Subject::Command { .. });
    let (recorded, after_answer) = if answer_first {
        (None, Some(appends))
    } else {
        (appends.committed().await, None)
    };
    // An ALLOW whose record did not commit is HOLD.
    let verdict = match recorded {
        Some(Err(e)) => {
            tracing::error!(
                "audit of a judged ALLOW failed, answering HOLD: {}",
                errors::one_line(&e)
            );
            Verdict::Hold
        }
        _ => verdict,
    };
    // A role's method rule refuses what the policy allowed; the block is
    // audited as the session's transition, after the decision record.
    let (verdict, details) = match observed.block {
        Some((method, reason)) if verdict == Verdict::Allow => (
            Verdict::Stop,
            Refusal {
                reason,
                rule_ids: vec![format!("{}{method}", sessions::METHOD_RULE_PREFIX)],
                approvable: false,
                ..details
            },
        ),
        _ => (verdict, details),
    };
    let counter = match verdict {
        Verdict::Allow => &daemon.counters.allowed,
        Verdict::Hold => &daemon.counters.held,
        Verdict::Stop => &daemon.counters.stopped,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let frame = DecisionFrame {
        approval_token: token,
        steer: observed.steer,
        ..decision_frame(&trail, verdict, &details)
    };
    let frame = if approves_itself {
        judged::stop_self_approval(&daemon.audit, peer, &request, frame).await
    } else {
        frame
    };
    let _ = writer.send(&ServerMsg::Decision(frame)).await;
    if let Some(appends) = after_answer
        && let Some(Err(e)) = appends.committed().await
    {
        tracing::error!(
            "the record of an answered ALLOW did not commit; its run through praxis-run is judged and audited anew: {}",
            errors::one_line(&e)
        );
    }
}

/// The judged tool call joins its session's trajectory (a PreToolUse), and
/// the decision record still `unrecorded` is queued first, with the
/// session's events; the caller waits for their commits. The session sees
/// the verdict as judged: an ALLOW whose record fails is then answered HOLD.
fn observe(
    daemon: &Arc<Daemon>,
    request: &JudgeRequest,
    trail: &Trail,
    verdict: Verdict,
    details: &Refusal,
    unrecorded: Option<Event>,
) -> (sessions::Observed, sessions::Appends) {
    let first = unrecorded.map(|e| (e, Durability::Normal));
    let Some(scope) = sessions::scope_of(request.runtime.as_deref(), request.session.as_deref())
    else {
        let appends = sessions::Appends::queue(&daemon.audit, first, Vec::new());
        return (sessions::Observed::default(), appends);
    };
    let (tool, target) = sessions::tool_and_target(&request.subject, request.tool.as_deref());
    let mut event = sessions::event(scope, SessionDoorway::PreToolUse, Some(tool), target);
    event.cwd = Some(request.cwd.clone());
    event.call_id.clone_from(&request.tool_call_id);
    event.judgment = Some(sessions::judgment(
        details.tier,
        verdict,
        &details.rule_ids,
        &trail.role,
    ));
    daemon.sessions.observe_queued(
        &daemon.audit,
        &|t| daemon.redact(t),
        event,
        Some(&trail.request_id),
        first,
    )
}

/// Records an adapter's note and acknowledges it.
pub async fn note(daemon: &Daemon, peer: Peer, mut request: NoteRequest, writer: &mut Writer) {
    if !NOTE_KINDS.contains(&request.kind.as_str()) {
        let reason = format!(
            "unknown note kind `{}` (one of: {})",
            request.kind,
            NOTE_KINDS.join(", ")
        );
        let _ = writer
            .send(&ServerMsg::Operator {
                reply: OperatorReply::Refused { reason },
            })
            .await;
        return;
    }
    let mut detail = std::mem::take(&mut request.detail);
    // The call's target is for the session's trajectory only, never audited raw.
    let target = detail
        .remove("target")
        .and_then(|t| t.as_str().map(str::to_owned));
    let hook = note_event(&request, &detail, target);
    if let Some(id) = &request.tool_call_id {
        detail.insert("tool_call_id".into(), id.clone().into());
    }
    let event = Event {
        session: request.session,
        runtime: request.runtime,
        uid: Some(peer.uid),
        pid: peer.pid.and_then(|p| u32::try_from(p).ok()),
        decision: request.decision.map(|v| v.as_str().to_owned()),
        reason: request.reason,
        detail: Some(detail),
        ..Event::new(EventKind::Other(request.kind))
    };
    let reply = match daemon.record(event, Durability::Normal).await {
        Ok(_) => {
            let steer = match hook {
                Some(hook) => {
                    let redact = |t: &str| daemon.redact(t);
                    let observed = daemon
                        .sessions
                        .observe(&daemon.audit, &redact, hook, None)
                        .await;
                    observed.steer
                }
                None => None,
            };
            match steer {
                Some(steer) => OperatorReply::Noted { steer },
                None => OperatorReply::Done {
                    message: String::from("recorded"),
                },
            }
        }
        Err(reason) => OperatorReply::Refused { reason },
    };
    let _ = writer.send(&ServerMsg::Operator { reply }).await;
}

/// The session event of a note, if it is one: a tool call's outcome
/// (PostToolUse), a session's start, a prompt, or the agent stopping.
fn note_event(
    request: &NoteRequest,
    detail: &serde_json::Map<String, serde_json::Value>,
    target: Option<String>,
) -> Option<praxis_session::HookEvent> {
    let scope = sessions::scope_of(request.runtime.as_deref(), request.session.as_deref())?;
    let doorway = match request.kind.as_str() {
        "tool_finished" => SessionDoorway::PostToolUse,
        "session_started" => SessionDoorway::SessionStart,
        "prompt_submitted" => SessionDoorway::UserPromptSubmit,
        "session_ended" => SessionDoorway::Stop,
        _ => return None,
    };
    let tool = detail
        .get("tool_name")
        .and_then(|t| t.as_str())
        .map(str::to_owned);
    let mut event = sessions::event(scope, doorway, tool, target);
    event.call_id.clone_from(&request.tool_call_id);
    event.status = outcome_status(detail);
    Some(event)
}

/// How a tool call went, from the facts a PostToolUse note keeps.
fn outcome_status(detail: &serde_json::Map<String, serde_json::Value>) -> Status {
    let failed = detail.get("is_error").and_then(|v| v.as_bool()) == Some(true)
        || detail.get("interrupted").and_then(|v| v.as_bool()) == Some(true)
        || detail.get("success").and_then(|v| v.as_bool()) == Some(false)
        || detail
            .get("exit_code")
            .and_then(|v| v.as_i64())
            .is_some_and(|c| c != 0);
    if failed {
        Status::Failed
    } else if detail.contains_key("response_bytes") {
        Status::Ok
    } else {
        Status::Unknown
    }
}

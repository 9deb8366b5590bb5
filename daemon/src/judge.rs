//! Judge-only requests: the pipeline's judging stages and its audit record,
//! without the execute stage. The hook adapters and guardrails ask this
//! before their runtime acts; what they then run still goes through the
//! exec pipeline. Also the adapters' notes (a tool call's outcome, a
//! session's end, a contract verdict), which are audited and decide nothing.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use praxis_proto::{
    Command, ExecRequest, FileAccess, JudgeRequest, NoteRequest, OperatorReply, ServerMsg, Subject,
    Verdict,
};

use crate::audit::{Durability, Event, EventKind};
use crate::audit_stage;
use crate::conn::{Peer, Writer};
use crate::ids;
use crate::kill_switch;
use crate::pipeline::{self, DEFAULT_ROLE, Refusal, Refused, Trail};
use crate::state::Daemon;

/// Note kinds an adapter may record.
pub const NOTE_KINDS: &[&str] = &[
    "tool_finished",
    "session_ended",
    "contract_checked",
    "hook_stopped",
];

/// The command that does to the host what `subject` does, so the policy
/// judges a runtime's own tool exactly as it judges the shell doing the same:
/// a file write as `tee -- PATH`, a file read as `cat -- PATH`, a fetch as
/// `curl -- URL`. A tool with no such equivalent has none, and is HOLD.
pub fn equivalent(subject: &Subject) -> Option<Command> {
    let argv = |words: [&str; 3]| Some(Command::Argv(words.map(str::to_owned).to_vec()));
    match subject {
        Subject::Command { command } => Some(command.clone()),
        Subject::File {
            path,
            access: FileAccess::Write,
        } => argv(["tee", "--", path]),
        Subject::File {
            path,
            access: FileAccess::Read,
        } => argv(["cat", "--", path]),
        Subject::Fetch { url } => argv(["curl", "--", url]),
        Subject::Tool { .. } => None,
    }
}

fn subject_kind(subject: &Subject) -> &'static str {
    match subject {
        Subject::Command { .. } => "command",
        Subject::File {
            access: FileAccess::Write,
            ..
        } => "file_write",
        Subject::File {
            access: FileAccess::Read,
            ..
        } => "file_read",
        Subject::Fetch { .. } => "fetch",
        Subject::Tool { .. } => "tool",
    }
}

/// Judges one request, records the decision, answers with a decision frame.
pub async fn run(
    daemon: &Arc<Daemon>,
    peer: Peer,
    request: JudgeRequest,
    cwd_dir: OwnedFd,
    writer: &mut Writer,
) {
    daemon.counters.requests.fetch_add(1, Ordering::Relaxed);
    let role = request
        .role
        .clone()
        .unwrap_or_else(|| String::from(DEFAULT_ROLE));
    let command = equivalent(&request.subject);
    let exec = ExecRequest {
        command: command.clone().unwrap_or_else(|| {
            Command::Argv(vec![match &request.subject {
                Subject::Tool { name } => name.clone(),
                _ => String::new(),
            }])
        }),
        cwd: request.cwd.clone(),
        role: request.role.clone(),
        session: request.session.clone(),
        runtime: request.runtime.clone(),
        tool_call_id: request.tool_call_id.clone(),
        env: request.env.clone(),
        timeout_secs: None,
    };
    let mut trail = Trail {
        request_id: ids::request_id(),
        peer,
        arguments_digest: ids::arguments_digest(&exec, &exec.cwd, &role),
        role,
        session: request.session.clone(),
        runtime: request.runtime.clone(),
        cwd: request.cwd.clone(),
        argv_redacted: None,
        policy_revision: None,
    };

    let judged = match (&command, &request.subject) {
        (Some(_), _) => {
            pipeline::judge(daemon, peer.uid, &exec, &cwd_dir, &mut trail).map(|decided| {
                (
                    wire(decided.decision.decision),
                    Refusal::of(&decided.decision),
                )
            })
        }
        (None, subject) => Err(unjudgeable(daemon, subject)),
    };
    let (verdict, details) = match judged {
        Ok(decided) => decided,
        Err(Refused::Stop(r)) => (Verdict::Stop, r),
        Err(Refused::Hold(r)) => (Verdict::Hold, r),
    };
    if trail.argv_redacted.is_none() {
        trail.argv_redacted = Some(match &exec.command {
            Command::Argv(argv) => argv.iter().take(1).cloned().collect(),
            Command::Shell(_) => Vec::new(),
        });
    }

    let verdict = record(daemon, &trail, &request, verdict, &details).await;
    let counter = match verdict {
        Verdict::Allow => &daemon.counters.allowed,
        Verdict::Hold => &daemon.counters.held,
        Verdict::Stop => &daemon.counters.stopped,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let frame = pipeline::decision_frame(&trail, verdict, &details);
    let _ = writer.send(&ServerMsg::Decision(frame)).await;
}

/// A tool with no command equivalent: the kill switch still stops it, and
/// otherwise no rule covers it, so it is HOLD.
fn unjudgeable(daemon: &Arc<Daemon>, subject: &Subject) -> Refused {
    if let Err(engaged) = kill_switch::check(daemon) {
        return Refused::Stop(Refusal::unclassified(engaged.message()));
    }
    let name = match subject {
        Subject::Tool { name } => name.as_str(),
        _ => "?",
    };
    Refused::Hold(Refusal::unclassified(format!(
        "no rule covers the runtime's tool `{name}`; unknown is HOLD"
    )))
}

/// Writes the decision record; an ALLOW that cannot be recorded becomes HOLD.
async fn record(
    daemon: &Daemon,
    trail: &Trail,
    request: &JudgeRequest,
    verdict: Verdict,
    details: &Refusal,
) -> Verdict {
    let mut detail = serde_json::Map::new();
    detail.insert("judge_only".into(), true.into());
    detail.insert("subject".into(), subject_kind(&request.subject).into());
    if let Some(id) = &request.tool_call_id {
        detail.insert("tool_call_id".into(), id.clone().into());
    }
    let event = Event {
        tier: Some(details.tier.as_str().to_owned()),
        decision: Some(verdict.as_str().to_owned()),
        reason: Some(details.reason.clone()),
        rule_ids: Some(details.rule_ids.clone()),
        profile: Some(details.profile.as_str().to_owned()),
        detail: Some(detail),
        ..audit_stage::base(EventKind::Decided, trail)
    };
    match daemon.record(event, Durability::Normal).await {
        Ok(_) => verdict,
        Err(e) if verdict == Verdict::Allow => {
            tracing::error!("audit of a judged ALLOW failed, answering HOLD: {e}");
            Verdict::Hold
        }
        Err(e) => {
            tracing::error!("audit of a judged refusal failed: {e}");
            verdict
        }
    }
}

/// Records an adapter's note and acknowledges it.
pub async fn note(daemon: &Daemon, peer: Peer, request: NoteRequest, writer: &mut Writer) {
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
    let mut detail = request.detail;
    if let Some(id) = request.tool_call_id {
        detail.insert("tool_call_id".into(), id.into());
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
        Ok(_) => OperatorReply::Done {
            message: String::from("recorded"),
        },
        Err(reason) => OperatorReply::Refused { reason },
    };
    let _ = writer.send(&ServerMsg::Operator { reply }).await;
}

/// The policy's verdict as it travels on the wire.
fn wire(verdict: praxis_policy::Verdict) -> Verdict {
    match verdict {
        praxis_policy::Verdict::Allow => Verdict::Allow,
        praxis_policy::Verdict::Hold => Verdict::Hold,
        praxis_policy::Verdict::Stop => Verdict::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_tools_are_judged_as_the_command_doing_the_same() {
        let write = Subject::File {
            path: "/h/.ssh/authorized_keys".into(),
            access: FileAccess::Write,
        };
        assert_eq!(
            equivalent(&write),
            Some(Command::Argv(vec![
                "tee".into(),
                "--".into(),
                "/h/.ssh/authorized_keys".into()
            ]))
        );
        let read = Subject::File {
            path: "a".into(),
            access: FileAccess::Read,
        };
        assert!(matches!(equivalent(&read), Some(Command::Argv(a)) if a[0] == "cat"));
        assert!(
            matches!(equivalent(&Subject::Fetch { url: "https://x".into() }), Some(Command::Argv(a)) if a[0] == "curl")
        );
        assert_eq!(
            equivalent(&Subject::Tool {
                name: "mcp__x__y".into()
            }),
            None
        );
    }
}

//! The spine of a judge-only request (a hook adapter's tool call): the
//! judging stages and the audit record of the decision, without the execute
//! stage. What the runtime then runs through praxis-run goes through the
//! exec spine in [`super`].

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use praxis_proto::{
    Command, DecisionFrame, ExecRequest, FileAccess, JudgeRequest, Subject, Verdict,
};

use super::{DEFAULT_ROLE, Inbound};
use crate::conn::Peer;
use crate::errors;
use crate::gate::{Gate, Refusal, Ticket, Trail};
use crate::ids;
use crate::stage::approval::{apply, digest, token};
use crate::stage::{intent, kill_switch, redact, self_approval};
use crate::state::Daemon;
use crate::store::RequestEvent;
use crate::store::approvals as store;
use crate::store::audit::{AuditError, AuditStore, Durability, Event, EventKind, TxOp};

/// A judged request. An ALLOW's decision record may still be `unrecorded`:
/// it is queued in one batch with the session's events, and committed
/// before the reply unless the command runs through praxis-run.
pub struct Judged {
    pub trail: Trail,
    pub verdict: Verdict,
    pub details: Refusal,
    /// The one-time approval token of an attended HOLD.
    pub token: Option<String>,
    pub unrecorded: Option<Event>,
    /// The agent's own text approves its own actions: the answer is STOP
    /// ([`stop_self_approval`]), whatever was judged.
    pub approves_itself: bool,
}

/// Judges a tool call: its command equivalent through the judging stages,
/// or, for a tool with none, the kill switch and `[runtime_tools]`. A call
/// whose agent text approves its own actions is judged and recorded as
/// usual, minted no token, and marked for STOP.
pub async fn judge_tool_call(
    daemon: &Arc<Daemon>,
    peer: Peer,
    request: &JudgeRequest,
    cwd_dir: OwnedFd,
) -> Judged {
    let approves_itself = request
        .agent_text
        .as_deref()
        .is_some_and(|text| self_approval::approves_itself(text, token::PREFIX));
    if approves_itself {
        let unattended = JudgeRequest {
            attended: false,
            ..request.clone()
        };
        let judged = judge_equivalent(daemon, peer, &unattended, cwd_dir).await;
        return Judged {
            approves_itself,
            ..judged
        };
    }
    judge_equivalent(daemon, peer, request, cwd_dir).await
}

/// The STOP of a call that approves its own actions: recorded as
/// `hook_stopped`, answered with no approval and no token. The refusal
/// stands whether or not its record committed (the failure is logged).
pub async fn stop_self_approval(
    audit: &AuditStore,
    peer: Peer,
    request: &JudgeRequest,
    frame: DecisionFrame,
) -> DecisionFrame {
    let mut detail = serde_json::Map::new();
    detail.insert("request_id".into(), frame.request_id.clone().into());
    if let Some(id) = &request.tool_call_id {
        detail.insert("tool_call_id".into(), id.clone().into());
    }
    let event = Event {
        session: request.session.clone(),
        runtime: request.runtime.clone(),
        uid: Some(peer.uid),
        pid: peer.pid.and_then(|p| u32::try_from(p).ok()),
        decision: Some(Verdict::Stop.as_str().to_owned()),
        reason: Some(String::from(self_approval::REASON)),
        detail: Some(detail),
        ..Event::new(EventKind::Other(String::from(self_approval::STOPPED)))
    };
    if let Err(e) = crate::store::record(audit, event, Durability::Normal).await {
        tracing::error!("audit of a self-approval STOP failed: {e}");
    }
    DecisionFrame {
        decision: Verdict::Stop,
        reason: String::from(self_approval::REASON),
        approve_with: None,
        approval_token: None,
        ..frame
    }
}

/// A tool call judged as its command equivalent, or as a tool with none.
async fn judge_equivalent(
    daemon: &Arc<Daemon>,
    peer: Peer,
    request: &JudgeRequest,
    cwd_dir: OwnedFd,
) -> Judged {
    match equivalent(&request.subject) {
        Some(command) => judged(daemon, peer, request, command, cwd_dir).await,
        None => {
            let (trail, verdict, details) = unjudgeable(daemon, peer, request).await;
            Judged {
                trail,
                verdict,
                details,
                token: None,
                unrecorded: None,
                approves_itself: false,
            }
        }
    }
}

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

/// The exec pipeline up to its audit intent: role, judging, approval and
/// retry budget. A refusal is recorded as an exec's is (a policy HOLD becomes
/// pending, so `praxis approve` works on it). An ALLOW is recorded as judged
/// only: an approval that lifted it is consumed when the command runs
/// through praxis-run, not here. A policy HOLD of a command judged for an
/// attended runtime also gets a one-time approval token, returned last.
async fn judged(
    daemon: &Arc<Daemon>,
    peer: Peer,
    request: &JudgeRequest,
    command: Command,
    cwd_dir: OwnedFd,
) -> Judged {
    let settled = |trail, verdict, details, token| Judged {
        trail,
        verdict,
        details,
        token,
        unrecorded: None,
        approves_itself: false,
    };
    // Only a command has a rewrite that can carry the token to a run.
    let attended = request.attended && matches!(request.subject, Subject::Command { .. });
    let exec = ExecRequest {
        command,
        cwd: request.cwd.clone(),
        role: request.role.clone(),
        session: request.session.clone(),
        runtime: request.runtime.clone(),
        tool_call_id: request.tool_call_id.clone(),
        env: request.env.clone(),
        timeout_secs: None,
        approval_token: None,
    };
    // The permit of a judged request never runs; it gets no stdin of the client's.
    let stdin: OwnedFd = match std::fs::File::open("/dev/null") {
        Ok(null) => null.into(),
        Err(e) => {
            let trail = trail_of(peer, request, &exec);
            let r = Refusal::unclassified(format!("cannot open /dev/null: {e}"));
            return settled(trail, Verdict::Hold, r, None);
        }
    };
    let inbound = Inbound {
        peer,
        request: exec,
        stdin,
        cwd_dir,
    };
    let (trail, ticket, gate) = super::admit(daemon, inbound).await;
    let refused = match gate {
        Gate::Allow(permit) => {
            let mut details = Refusal::of(&permit.decision);
            let Some(approval) = &ticket.approval else {
                let unrecorded = decided_event(&trail, request, Verdict::Allow, &details, None);
                return Judged {
                    trail,
                    verdict: Verdict::Allow,
                    details,
                    token: None,
                    unrecorded: Some(unrecorded),
                    approves_itself: false,
                };
            };
            // A command runs through praxis-run, whose intent consumes the
            // approval; a file or fetch the runtime does itself on this ALLOW.
            let when = match request.subject {
                Subject::Command { .. } => "used when it runs",
                _ => "used now",
            };
            details.reason = format!(
                "{} (approved by the {}: approval {}, {when})",
                details.reason,
                approval.by.label(),
                approval.id
            );
            let verdict = match request.subject {
                Subject::Command { .. } => record_allow(daemon, &trail, request, &details).await,
                _ => {
                    let cwd = permit.cwd.display().to_string();
                    let (verdict, settled) =
                        record_consuming(daemon, &trail, &ticket, request, details, &cwd).await;
                    details = settled;
                    verdict
                }
            };
            return settled(trail, verdict, details, None);
        }
        refused => super::record_intent(daemon, refused, &trail, &ticket).await,
    };
    let (verdict, details) = match refused {
        Gate::Held(held) if attended => {
            let mut details = held.into_refusal();
            match token::mint(&daemon.audit, &trail, &ticket).await {
                Ok(token) => return settled(trail, Verdict::Hold, details, Some(token)),
                // Still HOLD, the operator's approval still open: only the prompt is lost.
                Err(why) => {
                    details.reason = format!("{} (no approval token: {why})", details.reason)
                }
            }
            (Verdict::Hold, details)
        }
        Gate::Held(held) => (Verdict::Hold, held.into_refusal()),
        Gate::Hold(r) => (Verdict::Hold, r),
        Gate::Stop(r) => (Verdict::Stop, r),
        // The intent stage answers a refusal with a refusal; anything else is HOLD.
        Gate::Allow(_) => (
            Verdict::Hold,
            Refusal::unclassified(String::from(
                "the audit stage turned a refusal into an ALLOW",
            )),
        ),
    };
    settled(trail, verdict, details, None)
}

fn trail_of(peer: Peer, request: &JudgeRequest, exec: &ExecRequest) -> Trail {
    let role = request
        .role
        .clone()
        .unwrap_or_else(|| String::from(DEFAULT_ROLE));
    Trail {
        request_id: ids::request_id(),
        peer,
        arguments_digest: ids::arguments_digest(exec, &exec.cwd, &role),
        role,
        session: request.session.clone(),
        runtime: request.runtime.clone(),
        cwd: request.cwd.clone(),
        argv_redacted: None,
        policy_revision: None,
        memory_used: Vec::new(),
    }
}

/// A tool with no command equivalent: the kill switch still stops it, a
/// tool `[runtime_tools]` lists is ALLOW, and any other is a HOLD no rule
/// covers. That HOLD is pending like a command's: `praxis approve ID` lets
/// the same call (name and arguments, cwd, role) through once, consumed by
/// the ALLOW's record, since the runtime acts on it at once.
async fn unjudgeable(
    daemon: &Arc<Daemon>,
    peer: Peer,
    request: &JudgeRequest,
) -> (Trail, Verdict, Refusal) {
    let (name, arguments) = match &request.subject {
        Subject::Tool { name, arguments } => (name.clone(), arguments.clone()),
        _ => (String::from("?"), None),
    };
    let exec = ExecRequest {
        command: Command::Argv([name.clone()].into_iter().chain(arguments).collect()),
        cwd: request.cwd.clone(),
        role: request.role.clone(),
        session: request.session.clone(),
        runtime: request.runtime.clone(),
        tool_call_id: request.tool_call_id.clone(),
        env: Vec::new(),
        timeout_secs: None,
        approval_token: None,
    };
    let mut trail = trail_of(peer, request, &exec);
    let sent = redact::as_sent(&|t| daemon.redact(t), &exec.command);
    trail.argv_redacted = Some(sent.iter().map(|text| shown(text)).collect());
    let allowed = daemon
        .policy()
        .is_ok_and(|policy| policy.runtime_tool_allowed(&name));
    if let Err(engaged) = kill_switch::check(&daemon.kill_switch, &daemon.audit) {
        let details = Refusal::unclassified(engaged.message());
        // A refusal stands whether or not its record committed (the failure is logged).
        let _ = record(daemon, &trail, request, Verdict::Stop, &details, None).await;
        return (trail, Verdict::Stop, details);
    }
    if allowed {
        let details = Refusal {
            rule_ids: vec![String::from("runtime_tools")],
            tier: praxis_policy::Tier::ReadOnly,
            ..Refusal::unclassified(format!(
                "the runtime's tool `{name}` runs no host command and touches no file (patterns.toml [runtime_tools])"
            ))
        };
        let verdict = record_allow(daemon, &trail, request, &details).await;
        return (trail, verdict, details);
    }
    let ticket = Ticket {
        session: digest::session_key(request.session.as_deref(), &trail.peer),
        digest: Some(digest::tool_digest(&trail.arguments_digest)),
        ..Ticket::default()
    };
    let hold = Refusal {
        approvable: true,
        ..Refusal::unclassified(format!(
            "no rule covers the runtime's tool `{name}`; unknown is HOLD"
        ))
    };
    let digest = ticket.digest.clone().unwrap_or_default();
    match apply::operator_approval(&daemon.audit, &trail.role, &hold.reason, &digest).await {
        Ok(approval) => {
            let approved = Refusal {
                reason: format!(
                    "the runtime's tool `{name}`, approved by the {} for this call: approval {}, used now",
                    approval.by.label(),
                    approval.id
                ),
                ..hold
            };
            let ticket = Ticket {
                approval: Some(approval),
                ..ticket
            };
            let (verdict, details) =
                record_consuming(daemon, &trail, &ticket, request, approved, &request.cwd).await;
            (trail, verdict, details)
        }
        Err(note) => {
            let hold = match note {
                Some(note) => Refusal {
                    reason: format!("{} ({note})", hold.reason),
                    ..hold
                },
                None => hold,
            };
            held(daemon, &trail, &ticket, request, &hold, &request.cwd).await;
            (trail, Verdict::Hold, hold)
        }
    }
}

/// How much of a tool call the records and `praxis pending` show: its
/// arguments may be a whole document. The digest binds all of them.
const SHOWN_CHARS: usize = 400;

/// `text` cut to [`SHOWN_CHARS`] characters, marked when cut.
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_owned(),
    }
}

/// Records a judged HOLD an operator may approve, stored as pending in the
/// same transaction.
async fn held(
    daemon: &Daemon,
    trail: &Trail,
    ticket: &Ticket,
    request: &JudgeRequest,
    hold: &Refusal,
    cwd: &str,
) {
    let pending = store::pending_op(trail, ticket, hold, Path::new(cwd));
    // A refusal stands whether or not its record committed (the failure is logged).
    let _ = record(
        daemon,
        trail,
        request,
        Verdict::Hold,
        hold,
        pending.map(|op| (ticket, op)),
    )
    .await;
}

/// Records the ALLOW of an approved call the runtime acts on itself, its
/// approval consumed in the same transaction. When the approval is gone
/// (another call used it first) or the record fails, the call is held anew
/// and pending again.
async fn record_consuming(
    daemon: &Daemon,
    trail: &Trail,
    ticket: &Ticket,
    request: &JudgeRequest,
    details: Refusal,
    cwd: &str,
) -> (Verdict, Refusal) {
    let rejected = Arc::new(OnceLock::new());
    let Some(op) = store::consume_op(ticket, &trail.request_id, rejected) else {
        let verdict = record_allow(daemon, trail, request, &details).await;
        return (verdict, details);
    };
    match record(
        daemon,
        trail,
        request,
        Verdict::Allow,
        &details,
        Some((ticket, op)),
    )
    .await
    {
        Ok(()) => {
            if let Some(approval) = &ticket.approval {
                intent::consumed(&daemon.audit, trail, approval).await;
            }
            (Verdict::Allow, details)
        }
        Err(why) => {
            let hold = Refusal {
                reason: format!("{} ({why}; a new approval is needed)", details.reason),
                approvable: true,
                ..details
            };
            let ticket = Ticket {
                approval: None,
                ..ticket.clone()
            };
            held(daemon, trail, &ticket, request, &hold, cwd).await;
            (Verdict::Hold, hold)
        }
    }
}

/// Records a judged ALLOW; one that cannot be recorded becomes HOLD.
async fn record_allow(
    daemon: &Daemon,
    trail: &Trail,
    request: &JudgeRequest,
    details: &Refusal,
) -> Verdict {
    match record(daemon, trail, request, Verdict::Allow, details, None).await {
        Ok(()) => Verdict::Allow,
        Err(e) => {
            tracing::error!("audit of a judged ALLOW failed, answering HOLD: {e}");
            Verdict::Hold
        }
    }
}

/// Writes a judge-only decision record; with `bound`, the approval state
/// it binds (digest, approval) and the SQL that commits with it (an
/// approval consumed, a HOLD stored as pending), fsynced.
async fn record(
    daemon: &Daemon,
    trail: &Trail,
    request: &JudgeRequest,
    verdict: Verdict,
    details: &Refusal,
    bound: Option<(&Ticket, TxOp)>,
) -> Result<(), String> {
    let ticket = bound.as_ref().map(|(ticket, _)| *ticket);
    let event = decided_event(trail, request, verdict, details, ticket);
    let recorded = match bound {
        Some((_, op)) => daemon
            .audit
            .append_with_async(event, Durability::Full, op)
            .await
            .map(drop)
            .map_err(|e| match e {
                AuditError::Rejected(why) => why,
                e => errors::one_line(&e),
            }),
        None => daemon.record(event, Durability::Normal).await.map(drop),
    };
    if let Err(e) = &recorded {
        tracing::error!("audit of a judged request failed: {e}");
    }
    recorded
}

/// The decision record of a judge-only request, with the approval state
/// of its `ticket` when one binds it.
fn decided_event(
    trail: &Trail,
    request: &JudgeRequest,
    verdict: Verdict,
    details: &Refusal,
    ticket: Option<&Ticket>,
) -> Event {
    let mut detail = serde_json::Map::new();
    detail.insert("judge_only".into(), true.into());
    detail.insert("subject".into(), subject_kind(&request.subject).into());
    if let Some(id) = &request.tool_call_id {
        detail.insert("tool_call_id".into(), id.clone().into());
    }
    if let Some(digest) = ticket.and_then(|t| t.digest.as_ref()) {
        detail.insert("request_digest".into(), digest.clone().into());
    }
    let approval = ticket.and_then(|t| t.approval.as_ref());
    if let Some(approval) = approval {
        detail.insert("approved_by".into(), approval.by.label().into());
    }
    Event {
        tier: Some(details.tier.as_str().to_owned()),
        decision: Some(verdict.as_str().to_owned()),
        reason: Some(details.reason.clone()),
        rule_ids: Some(details.rule_ids.clone()),
        profile: Some(details.profile.as_str().to_owned()),
        approval_id: approval.map(|a| a.id.clone()),
        detail: Some(detail),
        ..trail.event(EventKind::Decided)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tool_arguments_are_shown_cut() {
        assert_eq!(shown("mcp__x {\"a\":1}"), "mcp__x {\"a\":1}");
        let long = format!("t {}", "é".repeat(SHOWN_CHARS));
        let cut = shown(&long);
        assert_eq!(cut.chars().count(), SHOWN_CHARS + " (802 bytes)".len() + 1);
        assert!(cut.ends_with("… (802 bytes)"), "{cut}");
    }

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
                name: "mcp__x__y".into(),
                arguments: None
            }),
            None
        );
    }
}

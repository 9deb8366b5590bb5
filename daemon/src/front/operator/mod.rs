//! Operator requests. Operators are not agents: every operator request needs
//! a trusted uid (user mode: the daemon's own; system mode: root or the
//! operator group), and a request that changes state (or lists approvals,
//! credentials or memory) needs a live process outside every command the
//! daemon runs, checked on the peer process pinned by a pidfd as it is when
//! the request is handled. A refusal is audited as its maker's attempt.

pub mod approvals;
pub mod credentials;
pub mod memory;
pub mod sessions;

use std::sync::Arc;

use praxis_proto::{
    OperatorReply, OperatorRequest, ServerMsg, SnapshotInfo, StatusReport, VerifySummary,
};

use praxis_snapshot::SnapshotError;

use crate::conn::{Peer, Writer};
use crate::pinned::{PinError, PinnedPeer};
use crate::stage::kill_switch;
use crate::stage::{policy, reversibility};
use crate::state::{Counters, Daemon};
use crate::store::audit::{Durability, Event, EventKind, Maker, StoredEvent};
use crate::store::credentials as credential_store;
use crate::{errors, reload};

/// Events per reply frame.
const BATCH: usize = 500;

fn uid_trusted(daemon: &Daemon, peer: &Peer) -> bool {
    let own = nix::unistd::geteuid().as_raw();
    match daemon.config.mode() {
        praxis_proto::Mode::User => peer.uid == own,
        praxis_proto::Mode::System => {
            peer.uid == 0 || {
                let group = nix::unistd::Group::from_name(&daemon.config.operator_group)
                    .ok()
                    .flatten();
                let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(peer.uid))
                    .ok()
                    .flatten();
                match (group, user) {
                    (Some(g), Some(u)) => {
                        g.gid.as_raw() == peer.gid || g.gid == u.gid || g.mem.contains(&u.name)
                    }
                    _ => false,
                }
            }
        }
    }
}

/// Who a refused request came from, as the audit names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// A uid that is not an operator of this praxisd.
    ForeignUid,
    /// A process inside a command praxisd runs: the agent.
    Agent,
    /// A process that cannot be verified (exited since it connected, or
    /// unknown to the kernel): refused, never taken for an operator.
    Unverified,
    /// A bearer of the API token on TCP, whose process is unknown.
    Bearer,
}

impl Actor {
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::ForeignUid => "foreign uid",
            Actor::Agent => "agent",
            Actor::Unverified => "unverified process",
            Actor::Bearer => "bearer token holder",
        }
    }
}

/// Why an operator request was refused, and whose it was.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub actor: Actor,
    pub reason: String,
}

/// Whether `request` is refused unless its maker is a process outside every
/// command: every state change, and the listings of approvals, credentials
/// and memory an agent has no business reading.
pub fn outside_only(request: &OperatorRequest) -> bool {
    matches!(
        request,
        OperatorRequest::Kill { .. }
            | OperatorRequest::Release { .. }
            | OperatorRequest::Reload
            | OperatorRequest::Pending
            | OperatorRequest::Approve { .. }
            | OperatorRequest::Deny { .. }
            | OperatorRequest::CredAdd(_)
            | OperatorRequest::CredList
            | OperatorRequest::CredRevoke { .. }
            | OperatorRequest::Undo { .. }
            | OperatorRequest::UndoList
            | OperatorRequest::Stop
            | OperatorRequest::Review
            | OperatorRequest::ReviewAct { .. }
            | OperatorRequest::Inspect { .. }
            | OperatorRequest::MemoryStats
            | OperatorRequest::ConsoleLogin
    )
}

/// The operator `peer` (as admitted: its pid that of its process at the
/// request) as the maker of an audited change.
fn maker(peer: &Peer) -> Maker {
    Maker {
        uid: peer.uid,
        pid: peer.pid.and_then(|pid| u32::try_from(pid).ok()),
    }
}

/// Admits `request` from `peer`, whose process `process` pinned at connect,
/// checked as the process is now: a trusted uid, and for
/// [`outside_only`] requests a live process outside every command.
/// Returns the operator, its pid that of the process now.
pub fn admit(
    daemon: &Daemon,
    peer: &Peer,
    process: &Result<PinnedPeer, PinError>,
    request: &OperatorRequest,
) -> Result<Peer, Refused> {
    if !uid_trusted(daemon, peer) {
        return Err(Refused {
            actor: Actor::ForeignUid,
            reason: format!("uid {} is not an operator of this praxisd", peer.uid),
        });
    }
    if !outside_only(request) {
        return Ok(*peer);
    }
    let unverified = |why: &PinError| Refused {
        actor: Actor::Unverified,
        reason: format!(
            "not an operator: {why}; operator requests need a live process outside every command"
        ),
    };
    let process = process.as_ref().map_err(unverified)?;
    let (pid, inside) = process
        .examine(|now| (now.pid, daemon.children.contains(now)))
        .map_err(|why| unverified(&why))?;
    if inside {
        return Err(Refused {
            actor: Actor::Agent,
            reason: format!(
                "not an operator: process {pid} runs inside a command praxis runs; operator requests are refused from inside"
            ),
        });
    }
    Ok(Peer {
        pid: Some(pid),
        ..*peer
    })
}

/// Records a refused operator request as its maker's attempt: the uid and
/// the pid the kernel named, who they are taken for, and what was asked
/// (the request's kind and target, never a credential's value).
pub async fn record_refused(
    daemon: &Daemon,
    peer: &Peer,
    request: &OperatorRequest,
    refused: &Refused,
) {
    let mut detail = serde_json::Map::new();
    detail.insert("actor".into(), refused.actor.as_str().into());
    let asked = serde_json::to_value(request).unwrap_or_default();
    for key in ["op", "item_id", "request_id", "memory_id", "name"] {
        if let Some(value) = asked.get(key) {
            detail.insert(key.into(), value.clone());
        }
    }
    if let Some(action) = asked.pointer("/action/action") {
        detail.insert("action".into(), action.clone());
    }
    let event = Event {
        uid: Some(peer.uid),
        pid: peer.pid.and_then(|p| u32::try_from(p).ok()),
        reason: Some(refused.reason.clone()),
        detail: Some(detail),
        ..Event::new(EventKind::OperatorRefused)
    };
    if let Err(e) = daemon.record(event, Durability::Full).await {
        tracing::error!("audit of a refused operator request failed: {e}");
    }
}

fn events(list: Vec<StoredEvent>) -> Vec<serde_json::Value> {
    list.into_iter()
        .filter_map(|e| serde_json::to_value(e).ok())
        .collect()
}

fn status(daemon: &Daemon) -> StatusReport {
    let (revision, hold_all) = match policy::in_force(&daemon.self_test, daemon.policy()) {
        Ok(policy) => (policy.revision().to_owned(), None),
        Err(why) => (
            daemon
                .policy()
                .map(|p| p.revision().to_owned())
                .unwrap_or_default(),
            Some(why),
        ),
    };
    let layout = &daemon.config.layout;
    StatusReport {
        mode: layout.mode.as_str().to_owned(),
        socket: layout.socket.display().to_string(),
        state_dir: layout.state_dir.display().to_string(),
        pid: std::process::id(),
        policy_revision: revision,
        hold_all,
        self_test: match &daemon.self_test {
            Ok(summary) => format!("passed: {summary}"),
            Err(why) => format!("FAILED: {why}"),
        },
        process_tracking: praxis_sandbox::process_control(),
        egress: match (&daemon.egress, praxis_sandbox::support().net_namespace) {
            (Ok(_), true) => {
                String::from("a network namespace per command, out only through the egress proxy")
            }
            (Ok(_), false) => String::from(
                "UNAVAILABLE: no network namespace can be made here; commands with network grants are HOLD",
            ),
            (Err(why), _) => format!("UNAVAILABLE: {why}; commands with network grants are HOLD"),
        },
        kill_switch: daemon.kill_switch.current().map(|e| e.reason),
        kill_file: daemon.kill_switch.file().display().to_string(),
        audit_problem: daemon.audit.lost(),
        credential_problems: credential_store::problems(&daemon.credentials()),
        in_flight: daemon.children.len() as u64,
        requests: Counters::get(&daemon.counters.requests),
        allowed: Counters::get(&daemon.counters.allowed),
        held: Counters::get(&daemon.counters.held),
        stopped: Counters::get(&daemon.counters.stopped),
        audit_events: daemon
            .audit
            .count_by_kind()
            .map(|m| m.values().sum())
            .unwrap_or(0),
    }
}

/// Runs a blocking operator action off the async runtime.
async fn blocking<T: Send + 'static>(
    daemon: &Arc<Daemon>,
    f: impl FnOnce(&Daemon) -> T + Send + 'static,
) -> T {
    let daemon = Arc::clone(daemon);
    match tokio::task::spawn_blocking(move || f(&daemon)).await {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

fn audit_reply(
    result: Result<Vec<StoredEvent>, crate::store::audit::AuditError>,
) -> Vec<OperatorReply> {
    match result {
        Ok(list) => {
            let mut replies: Vec<OperatorReply> = events(list)
                .chunks(BATCH)
                .map(|c| OperatorReply::Events { events: c.to_vec() })
                .collect();
            replies.push(OperatorReply::End);
            replies
        }
        Err(e) => vec![OperatorReply::Refused {
            reason: errors::one_line(&e),
        }],
    }
}

/// Answers one operator request from `peer`, whose process was pinned at
/// connect.
pub async fn handle(
    daemon: &Arc<Daemon>,
    peer: Peer,
    process: &Result<PinnedPeer, PinError>,
    request: OperatorRequest,
    writer: &mut Writer,
) {
    let replies = match admit(daemon, &peer, process, &request) {
        Err(refused) => {
            record_refused(daemon, &peer, &request, &refused).await;
            vec![OperatorReply::Refused {
                reason: refused.reason,
            }]
        }
        Ok(peer) => answer(daemon, peer, request).await,
    };
    for reply in replies {
        if writer.send(&ServerMsg::Operator { reply }).await.is_err() {
            return;
        }
    }
}

/// Answers `request` from `peer`, an operator already admitted for it: by
/// [`admit`] on the socket, or by the console for a logged-in session.
pub async fn answer(
    daemon: &Arc<Daemon>,
    peer: Peer,
    request: OperatorRequest,
) -> Vec<OperatorReply> {
    // A read sees every record queued before it, such as that of an ALLOW
    // answered a moment ago whose commit followed the answer.
    if matches!(
        request,
        OperatorRequest::AuditVerify
            | OperatorRequest::AuditVerifyAnchor { .. }
            | OperatorRequest::AuditAnchor
            | OperatorRequest::AuditTail { .. }
            | OperatorRequest::AuditAfter { .. }
            | OperatorRequest::AuditShow { .. }
            | OperatorRequest::AuditExport { .. }
            | OperatorRequest::SessionList
            | OperatorRequest::SessionShow { .. }
    ) {
        daemon.audit.settled().await;
    }
    match request {
        OperatorRequest::Status => vec![OperatorReply::Status(Box::new(status(daemon)))],
        OperatorRequest::Kill { reason } => {
            let reason = reason.unwrap_or_else(|| format!("engaged by uid {}", peer.uid));
            blocking(daemon, move |d| {
                match d.kill_switch.engage(&reason, maker(&peer), None) {
                    Ok(()) => {
                        kill_switch::on_engaged(
                            &d.kill_switch,
                            &d.audit,
                            &kill_switch::Engaged { reason },
                        );
                        OperatorReply::Done {
                            message: String::from("kill switch engaged"),
                        }
                    }
                    Err(e) => OperatorReply::Refused {
                        reason: errors::one_line(&e),
                    },
                }
            })
            .await
            .pipe_one()
        }
        OperatorRequest::Release { reason } => blocking(daemon, move |d| {
            match d.kill_switch.release(maker(&peer), reason) {
                Ok(()) => {
                    kill_switch::on_released(&d.kill_switch, &d.audit);
                    OperatorReply::Done {
                        message: String::from("kill switch released"),
                    }
                }
                Err(e) => OperatorReply::Refused {
                    reason: errors::one_line(&e),
                },
            }
        })
        .await
        .pipe_one(),
        OperatorRequest::Reload => blocking(daemon, move |d| {
            match reload::reload(d, "operator", Some(maker(&peer))) {
                Ok(revision) => OperatorReply::Done {
                    message: format!("policy reloaded, revision {revision}"),
                },
                Err(why) => OperatorReply::Refused {
                    reason: format!("reload refused, last good policy kept: {why}"),
                },
            }
        })
        .await
        .pipe_one(),
        OperatorRequest::AuditVerify => blocking(daemon, |d| verified(d.audit.verify()))
            .await
            .pipe_one(),
        OperatorRequest::AuditVerifyAnchor { seq, hash } => blocking(daemon, move |d| {
            verified(
                d.audit
                    .verify_against(i64::try_from(seq).unwrap_or(i64::MAX), &hash),
            )
        })
        .await
        .pipe_one(),
        OperatorRequest::AuditAnchor => {
            let (seq, hash) = daemon.audit.head();
            vec![OperatorReply::Done {
                message: format!("{seq} {hash}"),
            }]
        }
        OperatorRequest::AuditTail { count } => {
            blocking(daemon, move |d| audit_reply(d.audit.tail(count as usize))).await
        }
        OperatorRequest::AuditAfter { seq, limit } => {
            let seq = i64::try_from(seq).unwrap_or(i64::MAX);
            blocking(daemon, move |d| {
                audit_reply(d.audit.after(seq, limit as usize))
            })
            .await
        }
        OperatorRequest::AuditShow { request_id } => {
            blocking(daemon, move |d| show(d, &request_id)).await
        }
        OperatorRequest::Pending => blocking(daemon, approvals::pending).await.pipe_one(),
        OperatorRequest::Approve {
            request_id,
            ttl_secs,
            note,
            remember,
        } => blocking(daemon, move |d| {
            let approved = approvals::approve(
                d,
                &approvals::Approver::local(&peer),
                &request_id,
                ttl_secs,
                note.as_deref(),
            );
            if matches!(approved, OperatorReply::Done { .. }) {
                memory::approved(d, &peer, &request_id);
            }
            match approved {
                OperatorReply::Done { message } if remember => {
                    let learned = memory::remember(d, &peer, &request_id)
                        .unwrap_or_else(|why| format!("not remembered: {why}"));
                    OperatorReply::Done {
                        message: format!("{message}\n{learned}"),
                    }
                }
                other => other,
            }
        })
        .await
        .pipe_one(),
        OperatorRequest::Deny { request_id, note } => blocking(daemon, move |d| {
            approvals::deny(
                d,
                &approvals::Approver::local(&peer),
                &request_id,
                note.as_deref(),
            )
        })
        .await
        .pipe_one(),
        OperatorRequest::CredAdd(spec) => {
            blocking(daemon, move |d| credentials::add(d, &peer, spec))
                .await
                .pipe_one()
        }
        OperatorRequest::CredList => blocking(daemon, credentials::list).await.pipe_one(),
        OperatorRequest::CredRevoke { name } => {
            blocking(daemon, move |d| credentials::revoke(d, &peer, &name))
                .await
                .pipe_one()
        }
        OperatorRequest::Undo { request_id, force } => {
            blocking(daemon, move |d| undo(d, &peer, &request_id, force))
                .await
                .pipe_one()
        }
        OperatorRequest::UndoList => blocking(daemon, undo_list).await.pipe_one(),
        OperatorRequest::Stop => vec![stop(daemon)],
        OperatorRequest::SessionList => blocking(daemon, sessions::list).await.pipe_one(),
        OperatorRequest::SessionShow { session } => {
            blocking(daemon, move |d| {
                let mut replies = vec![sessions::private_tmp(d, &session)];
                replies.extend(audit_reply(d.audit.by_session(&session)));
                replies
            })
            .await
        }
        OperatorRequest::Review => blocking(daemon, memory::queue).await.pipe_one(),
        OperatorRequest::ReviewAct { item_id, action } => {
            blocking(daemon, move |d| memory::act(d, &peer, &item_id, action))
                .await
                .pipe_one()
        }
        OperatorRequest::Inspect { memory_id } => {
            blocking(daemon, move |d| memory::inspect(d, &memory_id))
                .await
                .pipe_one()
        }
        OperatorRequest::MemoryStats => blocking(daemon, memory::stats).await.pipe_one(),
        OperatorRequest::AuditExport { since } => {
            blocking(daemon, move |d| match since {
                Some(ts) => audit_reply(d.audit.since(&ts)),
                None => audit_reply(d.audit.after(0, usize::MAX)),
            })
            .await
        }
        OperatorRequest::ConsoleLogin => vec![match daemon.console.mint(peer) {
            Ok(url) => OperatorReply::Console { url },
            Err(e) => OperatorReply::Refused {
                reason: errors::one_line(&e),
            },
        }],
    }
}

/// `praxis stop`: a user-mode daemon drains and exits, as on SIGTERM; a
/// system-mode one is its service manager's to stop.
fn stop(daemon: &Daemon) -> OperatorReply {
    if daemon.config.mode() == praxis_proto::Mode::System {
        return OperatorReply::Refused {
            reason: String::from("praxisd runs as a system service here: systemctl stop praxisd"),
        };
    }
    match nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM) {
        Ok(()) => OperatorReply::Done {
            message: format!(
                "praxisd (pid {}) is stopping: running commands end, then it exits",
                std::process::id()
            ),
        },
        Err(e) => OperatorReply::Refused {
            reason: format!("cannot signal praxisd: {e}"),
        },
    }
}

/// `praxis audit show ID`: the one request a unique prefix names, then the
/// requests an approval ties to it (the run a held request's approval
/// allowed), each event once, in order.
fn show(daemon: &Daemon, prefix: &str) -> Vec<OperatorReply> {
    let refused = |reason: String| vec![OperatorReply::Refused { reason }];
    let id = match daemon.audit.request_with_prefix(prefix) {
        Ok(Ok(Some(id))) => id,
        Ok(Ok(None)) => return refused(format!("no request id starts with `{prefix}`")),
        Ok(Err(two)) => {
            return refused(format!(
                "`{prefix}` is ambiguous ({} and more): give more of the id",
                two.join(", ")
            ));
        }
        Err(e) => return refused(errors::one_line(&e)),
    };
    let linked = daemon.audit.linked_requests(&id).unwrap_or_default();
    let mut all = Vec::new();
    for request in std::iter::once(&id).chain(&linked) {
        match daemon.audit.by_request(request) {
            Ok(events) => all.extend(events),
            Err(e) => return refused(errors::one_line(&e)),
        }
    }
    all.sort_by_key(|e| e.seq);
    all.dedup_by_key(|e| e.seq);
    audit_reply(Ok(all))
}

/// A verification as the operator sees it.
fn verified(
    report: Result<crate::store::audit::VerifyReport, crate::store::audit::AuditError>,
) -> OperatorReply {
    match report {
        Ok(r) => OperatorReply::Verify(VerifySummary {
            ok: r.ok,
            events_checked: r.events_checked,
            first_broken: r.first_broken.and_then(|s| u64::try_from(s).ok()),
            problem: r.problem,
        }),
        Err(e) => OperatorReply::Refused {
            reason: errors::one_line(&e),
        },
    }
}

/// `praxis undo ID`: puts back what the command removed or overwrote, and
/// records who did it and what came of it.
fn undo(daemon: &Daemon, peer: &Peer, request_id: &str, force: bool) -> OperatorReply {
    // The refusal, and whether it is that the files changed since.
    let result = match &daemon.snapshots {
        Ok(store) => store
            .restore(request_id, force, reversibility::now())
            .map_err(|e| (e.to_string(), matches!(e, SnapshotError::Changed(_)))),
        Err(why) => Err((why.clone(), false)),
    };
    let detail = match &result {
        Ok(done) => serde_json::json!({
            "force": force, "restored": done.restored, "removed": done.removed, "bytes": done.bytes,
        }),
        Err((why, _)) => serde_json::json!({ "force": force, "refused": why }),
    };
    let reason = match &result {
        Ok(done) => format!(
            "undone by uid {}: {} restored, {} removed",
            peer.uid, done.restored, done.removed
        ),
        Err((why, _)) => format!("undo refused: {why}"),
    };
    let event = Event {
        request_id: Some(request_id.to_owned()),
        uid: Some(peer.uid),
        pid: peer.pid.and_then(|p| u32::try_from(p).ok()),
        reason: Some(reason),
        detail: detail.as_object().cloned(),
        ..Event::new(EventKind::Undo)
    };
    if let Err(e) = daemon.record_blocking(event, Durability::Full) {
        tracing::error!("audit of an undo failed: {e}");
    }
    match result {
        Ok(done) => OperatorReply::Done {
            message: format!(
                "undone: {} restored ({} bytes), {} made by the command removed",
                done.restored, done.bytes, done.removed
            ),
        },
        Err((why, true)) => OperatorReply::Refused {
            reason: format!("{why}; `praxis undo {request_id} --force` restores anyway"),
        },
        Err((reason, false)) => OperatorReply::Refused { reason },
    }
}

/// `praxis undo --list`.
fn undo_list(daemon: &Daemon) -> OperatorReply {
    let store = match &daemon.snapshots {
        Ok(store) => store,
        Err(reason) => {
            return OperatorReply::Refused {
                reason: reason.clone(),
            };
        }
    };
    match store.list() {
        Ok(list) => OperatorReply::Snapshots {
            items: list
                .into_iter()
                .map(|s| SnapshotInfo {
                    request_id: s.request_id,
                    workspace: s.workspace,
                    created_at: s.created_at,
                    expires_at: s.expires_at,
                    files: s.files,
                    bytes: s.bytes,
                    sealed: s.sealed,
                    restored_at: s.restored_at,
                })
                .collect(),
        },
        Err(e) => OperatorReply::Refused {
            reason: e.to_string(),
        },
    }
}

/// A single reply as the list of replies to send.
trait One {
    fn pipe_one(self) -> Vec<OperatorReply>;
}

impl One for OperatorReply {
    fn pipe_one(self) -> Vec<OperatorReply> {
        vec![self]
    }
}

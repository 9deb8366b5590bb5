//! The pipeline: the one path from a request to an executed command, and the
//! only module that names every stage. It reads as its stages, in order; each
//! is a call into `crate::stage::<name>` that takes values and returns a typed
//! outcome, and the pipeline passes those values on. Any failure is HOLD with
//! a one-line reason.
//!
//! kill switch → role → parse → preconditions (host snapshot) → policy (tier
//! classification and deny-first rules, one pure call over that snapshot) →
//! redact → permit (what would run) → reversibility (the undo plan) →
//! recall (memory may relax a policy HOLD) → approval / retry budget → session (a run naming a session
//! joins its trajectory: a steer rides the advisory line, a role's method
//! rule refuses) → audit intent (committed) → credentials → execute →
//! errors → output → audit outcome (queued before the exit is reported,
//! committed as it goes out) → session (the exit; a steer it reached is the
//! last stderr line).
//!
//! Only this module can make a [`Permit`] (with [`seal`], which no other
//! module names), and [`execute::run`] takes it by value. [`Gate::Allow`]
//! carries one; a policy HOLD carries one sealed in a
//! [`Held`](crate::gate::Held), which only
//! [`Held::lift`](crate::gate::Held::lift) opens,
//! and only the approval stage lifts (a one-shot approval, or a steer-only
//! role). The exec stage is reachable only by destructuring an ALLOW.
//!
//! A hook's tool call takes the same spine up to its audit intent
//! ([`judged`]), with the self-approval stage before it answers.

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use praxis_policy::{Decision, Policy, Verdict};
use praxis_proto::{CredentialSpec, ExecRequest, ServerMsg};
use tokio::net::unix::OwnedReadHalf;

use crate::conn::{Peer, Writer};
use crate::stage::approval;
use crate::stage::preconditions::{self, Gathered};
use crate::stage::recall::{self, Relaxation};
use crate::stage::reversibility::{self, Reversibility};
use crate::stage::{credentials, execute, intent, outcome, parse, permit, policy, redact, session};
use crate::stage::{kill_switch, roles};
use crate::state::Daemon;
use crate::store::approvals;
use crate::{errors, ids};

pub mod judged;

use crate::gate::seal;
use crate::gate::{Executed, Gate, Permit, Refusal, Rejection, Ticket, Trail, decision_frame};

/// The rule id of a refusal by the kill switch, so clients can word it.
pub const KILL_SWITCH_RULE: &str = "kill_switch";

/// Role of a request that claims none.
pub const DEFAULT_ROLE: &str = "agent";

/// How long a running command's session step waits before it is saved.
const SAVE_BESIDE_A_COMMAND: Duration = Duration::from_millis(100);

/// A request as it arrived: the message and the descriptors passed with it.
pub struct Inbound {
    pub peer: Peer,
    pub request: ExecRequest,
    pub stdin: OwnedFd,
    pub cwd_dir: OwnedFd,
}

/// Runs one exec request to its end and answers the client.
pub async fn run(
    daemon: &Arc<Daemon>,
    inbound: Inbound,
    reader: OwnedReadHalf,
    writer: &mut Writer,
) {
    daemon.counters.requests.fetch_add(1, Ordering::Relaxed);
    let action = (
        inbound.request.command.clone(),
        inbound.request.tool_call_id.clone(),
    );
    let (trail, ticket, gate) = admit(daemon, inbound).await;
    let (command, call_id) = (&action.0, action.1.as_deref());
    let (gate, joined) = session::admit(
        &daemon.sessions,
        &daemon.audit,
        &|t| daemon.redact(t),
        gate,
        &trail,
        command,
        call_id,
    );
    let gate = record_intent(daemon, gate, &trail, &ticket).await;
    // Queued before the intent, the session's events were committed with it.
    if let Some(joined) = joined {
        let _ = joined.committed().await;
    }

    match gate {
        Gate::Allow(mut permit) => {
            daemon.counters.allowed.fetch_add(1, Ordering::Relaxed);
            let saved = match &permit.undo {
                Some(plan) => reversibility::capture(
                    &daemon.snapshots,
                    &daemon.audit,
                    &trail.request_id,
                    &permit.workspace,
                    plan,
                )
                .await
                .map(|()| true),
                None => Ok(false),
            };
            let taken = saved == Ok(true);
            let executed = match saved {
                Err(reason) => execute::not_started(writer, &trail, &permit.decision, reason).await,
                Ok(_) => {
                    credentials::inject(&daemon.config, &daemon.audit, &mut permit, &ticket.grants)
                        .await;
                    let started = {
                        let daemon = Arc::clone(daemon);
                        let trail = trail.clone();
                        move |pid: i32| {
                            // The ALLOW is out: the session's step is saved
                            // while the command runs, however long, but not
                            // beside a short command and its client (saving
                            // wakes a thread that rewrites and syncs a file):
                            // the front hands it over once the client is
                            // gone, and this only for a command still running.
                            let sessions = Arc::clone(&daemon.sessions);
                            tokio::spawn(async move {
                                tokio::time::sleep(SAVE_BESIDE_A_COMMAND).await;
                                sessions.hand_over();
                            });
                            let audit = Arc::clone(&daemon.audit);
                            tokio::spawn(
                                async move { outcome::started(&audit, &trail, pid).await },
                            );
                        }
                    };
                    let on_egress = {
                        let audit = Arc::clone(&daemon.audit);
                        let trail = trail.clone();
                        move |event| {
                            let (audit, trail) = (Arc::clone(&audit), trail.clone());
                            tokio::spawn(
                                async move { outcome::egress(&audit, &trail, event).await },
                            );
                        }
                    };
                    let resources = execute::Resources {
                        config: &daemon.config,
                        egress: daemon.egress.as_ref().map_err(String::as_str),
                        children: &daemon.children,
                    };
                    execute::run(
                        resources, *permit, &trail, reader, writer, started, on_egress,
                    )
                    .await
                }
            };
            // The outcome is queued before the client hears the exit, so any
            // read through praxisd and the client's next request come after
            // it; it commits while the exit goes out. A command with an undo
            // snapshot waits for it, and for what the undo needs.
            let recorded = outcome::queue(&daemon.audit, &trail, &executed);
            let recorded = if taken {
                outcome::committed(recorded).await;
                let ran = matches!(executed, Executed::Ran(_));
                reversibility::settle(&daemon.snapshots, &trail.request_id, ran).await;
                None
            } else {
                Some(recorded)
            };
            let (steer, ended) = session::finished(
                &daemon.sessions,
                &daemon.audit,
                &|t| daemon.redact(t),
                &trail,
                command,
                call_id,
                &executed,
            );
            if let Executed::Ran(ran) = &executed {
                execute::report_exit(writer, ran, steer).await;
            }
            if let Some(record) = recorded {
                outcome::committed(record).await;
            }
            if let Some(ended) = ended {
                let _ = ended.committed().await;
            }
        }
        Gate::Held(held) => {
            let refusal = held.into_refusal();
            refuse(daemon, writer, &trail, Verdict::Hold, refusal).await
        }
        Gate::Hold(refusal) => refuse(daemon, writer, &trail, Verdict::Hold, refusal).await,
        Gate::Stop(refusal) => refuse(daemon, writer, &trail, Verdict::Stop, refusal).await,
    }
}

/// The stages before the audit intent, shared by exec and judge-only
/// requests: role, the judging stages, then approval / retry budget, with
/// the credential grants the pipeline looked up for the decided command.
pub async fn admit(daemon: &Arc<Daemon>, inbound: Inbound) -> (Trail, Ticket, Gate) {
    let assigned = roles::assign(
        &daemon.config.roles,
        daemon.config.mode(),
        &inbound.peer,
        inbound.request.role.as_deref(),
    );
    let (role, role_why) = match &assigned {
        Ok(a) => (a.role.clone(), a.why.clone()),
        Err(e) => (String::from(DEFAULT_ROLE), errors::one_line(e)),
    };
    let mut ticket = Ticket {
        role_why,
        session: approval::digest::session_key(inbound.request.session.as_deref(), &inbound.peer),
        presented_token: inbound.request.approval_token.clone(),
        ..Ticket::default()
    };
    let mut trail = Trail {
        request_id: ids::request_id(),
        peer: inbound.peer,
        arguments_digest: ids::arguments_digest(&inbound.request, &inbound.request.cwd, &role),
        role,
        session: inbound.request.session.clone(),
        runtime: inbound.request.runtime.clone(),
        cwd: inbound.request.cwd.clone(),
        argv_redacted: Some(redact::as_sent(
            &|t| daemon.redact(t),
            &inbound.request.command,
        )),
        policy_revision: None,
        memory_used: Vec::new(),
    };

    let gate = match assigned {
        Ok(_) => decide(daemon, inbound, &mut trail),
        Err(e) => Gate::Hold(Refusal::unclassified(format!(
            "role refused: {}",
            errors::one_line(&e)
        ))),
    };
    let grants = grants(daemon, &gate, &trail.role);
    let gate = approval::apply::apply(
        &daemon.config,
        &daemon.audit,
        gate,
        &trail,
        &mut ticket,
        grants,
    )
    .await;
    (trail, ticket, gate)
}

/// The credentials the decided command would get, for the approval stage
/// (they are part of what an approval binds to). None for a refusal.
fn grants(daemon: &Daemon, gate: &Gate, role: &str) -> Option<Result<Vec<CredentialSpec>, String>> {
    let decision = match gate {
        Gate::Allow(permit) => &permit.decision,
        Gate::Held(held) => &held.permit().decision,
        Gate::Hold(_) | Gate::Stop(_) => return None,
    };
    Some(crate::store::credentials::grants(
        &daemon.credentials(),
        role,
        decision,
    ))
}

/// The audit intent stage, handed the SQL that must commit with it: for an
/// ALLOW, consuming its approval and counting its execution; for a policy
/// HOLD, storing it as pending. Shared by exec and judge-only requests.
pub async fn record_intent(daemon: &Daemon, gate: Gate, trail: &Trail, ticket: &Ticket) -> Gate {
    // Which of its checks the consuming SQL failed, if it fails.
    let rejected = Arc::new(OnceLock::new());
    let with = match &gate {
        Gate::Allow(_) => approvals::consume_op(ticket, &trail.request_id, Arc::clone(&rejected)),
        Gate::Held(held) => approvals::pending_op(trail, ticket, &held.refusal, &held.permit().cwd),
        Gate::Hold(_) | Gate::Stop(_) => None,
    };
    match intent::intent(&daemon.audit, gate, trail, ticket, with).await {
        intent::Intent::Recorded(gate) => gate,
        intent::Intent::Rejected { permit, why } => {
            let decision = &permit.decision;
            let (refusal, with) = match rejected.get() {
                Some(Rejection::BudgetSpent) => {
                    let limit = ticket.budget.unwrap_or(0);
                    let reason = approval::budget::spent_reason(
                        limit,
                        limit,
                        decision.tier,
                        &ticket.session,
                    );
                    approval::budget::exhausted(&daemon.audit, trail, &reason).await;
                    let stop = Refusal {
                        reason,
                        ..Refusal::of(decision)
                    };
                    (Gate::Stop(stop), None)
                }
                // Another run used the approval first: this one is held anew.
                Some(Rejection::ApprovalGone) | None => {
                    let hold = Refusal {
                        reason: format!("{} ({why}; a new approval is needed)", decision.reason),
                        approvable: true,
                        ..Refusal::of(decision)
                    };
                    let op = approvals::pending_op(trail, ticket, &hold, &permit.cwd);
                    (Gate::Hold(hold), op)
                }
            };
            match intent::intent(&daemon.audit, refusal, trail, ticket, with).await {
                intent::Intent::Recorded(gate) => gate,
                // A refusal's record is never rejected into anything else.
                intent::Intent::Rejected { .. } => Gate::Hold(Refusal::unclassified(String::from(
                    "the audit intent of a refusal was rejected",
                ))),
            }
        }
    }
}

/// What the judging stages concluded for a request the policy decided.
#[derive(Debug)]
struct Decided {
    decision: Decision,
    /// The policy the decision was made under.
    policy: Arc<Policy>,
    gathered: Gathered,
}

/// A refusal by a judging stage, before the policy decided.
#[derive(Debug)]
enum Refused {
    Hold(Refusal),
    Stop(Refusal),
}

impl From<Refused> for Gate {
    fn from(refused: Refused) -> Gate {
        match refused {
            Refused::Hold(r) => Gate::Hold(r),
            Refused::Stop(r) => Gate::Stop(r),
        }
    }
}

/// The judging stages, kill switch to redact. `Err` is the refusal of a
/// stage that stopped the request before the policy could decide.
fn judge(
    daemon: &Arc<Daemon>,
    uid: u32,
    request: &ExecRequest,
    cwd_dir: &OwnedFd,
    trail: &mut Trail,
) -> Result<Decided, Refused> {
    if let Err(engaged) = kill_switch::check(&daemon.kill_switch, &daemon.audit) {
        let mut refusal = Refusal::unclassified(engaged.message());
        refusal.rule_ids.push(String::from(KILL_SWITCH_RULE));
        return Err(Refused::Stop(refusal));
    }
    if let Some(why) = daemon.audit.refusing() {
        return Err(Refused::Hold(Refusal::unclassified(why)));
    }
    if daemon.is_draining() {
        return Err(Refused::Hold(Refusal::unclassified(String::from(
            "praxisd is shutting down",
        ))));
    }
    let policy = match policy::in_force(&daemon.self_test, daemon.policy()) {
        Ok(policy) => policy,
        Err(why) => return Err(Refused::Hold(Refusal::unclassified(why))),
    };
    trail.policy_revision = Some(policy.revision().to_owned());

    let analysis = match parse::analyze(&policy, request, &trail.role) {
        Ok(analysis) => analysis,
        Err(e) => return Err(Refused::Hold(Refusal::unclassified(errors::one_line(&e)))),
    };
    let gathered = match preconditions::gather(
        &policy,
        &analysis,
        &daemon.config,
        &daemon.programs,
        cwd_dir,
        uid,
        request,
    ) {
        Ok(gathered) => gathered,
        Err(e) => return Err(Refused::Hold(Refusal::unclassified(errors::one_line(&e)))),
    };
    let decision = policy.decide(
        &parse::policy_request(request, &trail.role),
        &analysis,
        &gathered.context,
    );
    // What the agent sent, as sent (operators, redirections, quoting), then
    // the simple commands it was judged as when they differ.
    // As sent, redacted once in `admit` (the request is the same).
    let mut shown = trail
        .argv_redacted
        .take()
        .unwrap_or_else(|| redact::as_sent(&|t| daemon.redact(t), &request.command));
    let breakdown = redact::for_audit(&|t| daemon.redact(t), &decision);
    if breakdown != shown {
        shown.extend(breakdown);
    }
    trail.argv_redacted = Some(shown);
    Ok(Decided {
        decision,
        policy,
        gathered,
    })
}

/// The deciding stages: judging, then an ALLOW sealed into a [`Permit`].
fn decide(daemon: &Arc<Daemon>, inbound: Inbound, trail: &mut Trail) -> Gate {
    let Inbound {
        peer,
        request,
        stdin,
        cwd_dir,
    } = inbound;
    let Decided {
        decision,
        policy,
        gathered,
    } = match judge(daemon, peer.uid, &request, &cwd_dir, trail) {
        Ok(decided) => decided,
        Err(refused) => return refused.into(),
    };

    if decision.decision == Verdict::Stop {
        return Gate::Stop(Refusal::of(&decision));
    }
    // What memory sees of a policy HOLD, taken before the context goes
    // into the permit.
    let held_action = (decision.decision == Verdict::Hold)
        .then(|| recall::action(&decision, &gathered.context, &trail.role));
    // ALLOW, or a HOLD an approval may lift: either way, what would run.
    let parts = permit::assemble(
        &policy,
        &daemon.config.shell,
        request.command,
        request.env,
        request.timeout_secs,
        gathered.path_var,
    );
    let mut permit = Box::new(Permit {
        _seal: seal::seal(),
        request_id: trail.request_id.clone(),
        argv: parts.argv,
        cwd: gathered.context.cwd,
        workspace: gathered.context.workspace,
        home: gathered.context.home,
        env: parts.env,
        timeout: parts.timeout,
        output_cap: parts.output_cap,
        peer,
        stdin,
        decision,
        policy,
        brokered: Vec::new(),
        advisory: None,
        steer: None,
        undo: None,
    });
    let checkpoint = reversibility::wants_checkpoint(&daemon.config, &trail.role);
    let irreversible = match reversibility::plan(
        &daemon.snapshots,
        &permit.decision.undo,
        &permit.workspace,
        checkpoint,
    ) {
        Reversibility::NotNeeded => None,
        Reversibility::Planned(plan) => {
            let decision = &mut permit.decision;
            decision.reason = format!("{}; {}", decision.reason, reversibility::describe(&plan));
            permit.undo = Some(plan);
            None
        }
        Reversibility::Unavailable(why) => Some(why),
    };
    // Before a policy HOLD stands, memory is consulted.
    let mut evidence = None;
    if let (Some(action), None) = (&held_action, &irreversible) {
        match recall::relax(&daemon.memory, trail, action, &mut permit.decision) {
            Relaxation::Allowed => return Gate::Allow(permit),
            Relaxation::Stands(note) => evidence = note,
        }
    }
    match (permit.decision.decision, irreversible) {
        (Verdict::Allow, None) => Gate::Allow(permit),
        (verdict, irreversible) => {
            let mut refusal = Refusal {
                approvable: true,
                ..Refusal::of(&permit.decision)
            };
            // What an approval would let it do, in every prompt and listing.
            if !permit.decision.grants.is_empty() {
                refusal.reason = format!(
                    "{}; if approved it {}",
                    refusal.reason,
                    permit.decision.grants_summary()
                );
            }
            if let Some(why) = &irreversible {
                refusal.reason = if verdict == Verdict::Allow {
                    format!("not reversible: {why}; an approval runs it without a snapshot")
                } else {
                    format!("{}; not reversible: {why}", refusal.reason)
                };
                refusal
                    .rule_ids
                    .push(String::from("reversibility.unavailable"));
            }
            if let Some(evidence) = evidence {
                refusal.reason = format!("{}; {evidence}", refusal.reason);
            }
            Gate::Held(seal::hold(permit, refusal, irreversible.is_none()))
        }
    }
}

/// Answers a HOLD or STOP: the decision frame is the whole reply.
async fn refuse(daemon: &Daemon, writer: &mut Writer, trail: &Trail, verdict: Verdict, r: Refusal) {
    let counter = match verdict {
        Verdict::Stop => &daemon.counters.stopped,
        _ => &daemon.counters.held,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let frame = decision_frame(trail, verdict, &r);
    let _ = writer.send(&ServerMsg::Decision(frame)).await;
}

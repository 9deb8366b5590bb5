//! The pipeline: the one path from a request to an executed command. It reads
//! as its stages, in order; each is a call into the module named after it and
//! returns a typed outcome. Any failure is HOLD with a one-line reason.
//!
//! kill switch → role → parse → preconditions (host snapshot) → policy (tier
//! classification and deny-first rules, one pure call over that snapshot) →
//! redact → approval / retry budget → audit intent (committed) → credentials
//! → execute → errors → output → audit outcome.
//!
//! Only this module can make a [`Permit`], and [`execute::run`] takes it by
//! value. [`Gate::Allow`] carries one; a policy HOLD carries one sealed in a
//! [`Held`], which only [`Held::lift`] opens, and only the approval stage
//! lifts (a one-shot approval, or a steer-only role). The exec stage is
//! reachable only by destructuring an ALLOW.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use praxis_policy::{Decision, Policy, Profile, Tier, Verdict};
use praxis_proto::{Command, DecisionFrame, ExecRequest, ServerMsg};
use praxis_snapshot::Plan;
use tokio::net::unix::OwnedReadHalf;

use crate::conn::{Peer, Writer};
use crate::preconditions::Gathered;
use crate::reversibility::{self, Reversibility};
use crate::state::Daemon;
use crate::{
    approval, audit_stage, credentials, errors, execute, ids, kill_switch, parse, policy,
    preconditions, redact, roles,
};

/// The rule id of a refusal by the kill switch, so clients can word it.
pub const KILL_SWITCH_RULE: &str = "kill_switch";

/// Role of a request that claims none.
pub const DEFAULT_ROLE: &str = "agent";

/// A request as it arrived: the message and the descriptors passed with it.
pub struct Inbound {
    pub peer: Peer,
    pub request: ExecRequest,
    pub stdin: OwnedFd,
    pub cwd_dir: OwnedFd,
}

/// Why a request does not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    pub tier: Tier,
    pub rule_ids: Vec<String>,
    pub profile: Profile,
    /// A policy HOLD an operator may approve (`praxis approve`).
    pub approvable: bool,
}

impl Refusal {
    /// A refusal decided before the policy could classify the request: the
    /// tier is unknown, so it is taken as the highest.
    pub fn unclassified(reason: String) -> Refusal {
        Refusal {
            reason,
            tier: Tier::HighRisk,
            rule_ids: Vec::new(),
            profile: Profile::ReadOnly,
            approvable: false,
        }
    }

    /// The details of a policy decision, as a refusal or a decision frame carries them.
    pub fn of(decision: &Decision) -> Refusal {
        Refusal {
            reason: decision.reason.clone(),
            tier: decision.tier,
            rule_ids: decision.rule_ids.clone(),
            profile: decision.profile,
            approvable: false,
        }
    }
}

/// Private: only this module can seal a [`Permit`].
#[derive(Debug)]
struct Seal;

/// Leave to execute exactly one command, as decided.
#[derive(Debug)]
pub struct Permit {
    _seal: Seal,
    pub request_id: String,
    pub decision: Decision,
    /// The policy the decision was made under.
    pub policy: Arc<Policy>,
    /// What to exec: the argv, or the configured shell with `-c` and the string.
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    pub workspace: PathBuf,
    pub home: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    pub output_cap: u64,
    pub peer: Peer,
    pub stdin: OwnedFd,
    /// Brokered credentials, resolved after the intent is committed.
    pub brokered: Vec<credentials::Brokered>,
    /// Shown to the agent before the output (a steer-only role's lifted HOLD).
    pub advisory: Option<String>,
    /// The snapshot to take before the command runs, so it can be undone.
    pub undo: Option<Plan>,
}

/// A policy HOLD, with the command as it would run if the HOLD is lifted.
#[derive(Debug)]
pub struct Held {
    permit: Box<Permit>,
    pub refusal: Refusal,
    /// Whether a steer-only role may run it: not when the HOLD is that the
    /// command cannot be undone, which is what steering relies on.
    pub steerable: bool,
}

impl Held {
    pub fn permit(&self) -> &Permit {
        &self.permit
    }

    /// Opens the HOLD: for the approval stage alone, after it found a usable
    /// approval or a steer-only role (whose `advisory` the agent sees).
    pub fn lift(self, advisory: Option<String>) -> Box<Permit> {
        let mut permit = self.permit;
        permit.advisory = advisory;
        permit
    }

    /// The refusal, the command dropped.
    pub fn into_refusal(self) -> Refusal {
        self.refusal
    }
}

/// The outcome of the deciding stages.
#[must_use = "a gate must be acted on: only an ALLOW may execute"]
#[derive(Debug)]
pub enum Gate {
    Allow(Box<Permit>),
    /// A policy HOLD: approvable.
    Held(Held),
    /// A HOLD no approval lifts (kill switch, drain, bad policy, stage failure).
    Hold(Refusal),
    Stop(Refusal),
}

impl Gate {
    pub fn verdict(&self) -> Verdict {
        match self {
            Gate::Allow(_) => Verdict::Allow,
            Gate::Held(_) | Gate::Hold(_) => Verdict::Hold,
            Gate::Stop(_) => Verdict::Stop,
        }
    }
}

/// What the audit stages record about a request besides the decision.
#[derive(Clone, Debug)]
pub struct Trail {
    pub request_id: String,
    pub peer: Peer,
    pub role: String,
    pub session: Option<String>,
    pub runtime: Option<String>,
    pub cwd: String,
    pub arguments_digest: String,
    pub argv_redacted: Option<Vec<String>>,
    pub policy_revision: Option<String>,
}

/// Runs one exec request to its end and answers the client.
pub async fn run(
    daemon: &Arc<Daemon>,
    inbound: Inbound,
    reader: OwnedReadHalf,
    writer: &mut Writer,
) {
    daemon.counters.requests.fetch_add(1, Ordering::Relaxed);
    let (trail, ticket, gate) = admit(daemon, inbound).await;
    let gate = audit_stage::intent(daemon, gate, &trail, &ticket).await;

    match gate {
        Gate::Allow(mut permit) => {
            daemon.counters.allowed.fetch_add(1, Ordering::Relaxed);
            let saved = match &permit.undo {
                Some(plan) => {
                    reversibility::capture(daemon, &trail.request_id, &permit.workspace, plan)
                        .await
                        .map(|()| true)
                }
                None => Ok(false),
            };
            let taken = saved == Ok(true);
            let executed = match saved {
                Err(reason) => execute::not_started(writer, &trail, &permit.decision, reason).await,
                Ok(_) => match credentials::inject(daemon, &mut permit, &ticket.grants).await {
                    Ok(()) => execute::run(daemon, *permit, &trail, reader, writer).await,
                    Err(reason) => {
                        execute::not_started(writer, &trail, &permit.decision, reason).await
                    }
                },
            };
            if taken {
                let ran = matches!(executed, execute::Executed::Ran(_));
                reversibility::settle(daemon, &trail.request_id, ran).await;
            }
            audit_stage::outcome(daemon, &trail, &executed).await;
        }
        Gate::Held(held) => {
            let refusal = held.into_refusal();
            refuse(daemon, writer, &trail, praxis_proto::Verdict::Hold, refusal).await
        }
        Gate::Hold(refusal) => {
            refuse(daemon, writer, &trail, praxis_proto::Verdict::Hold, refusal).await
        }
        Gate::Stop(refusal) => {
            refuse(daemon, writer, &trail, praxis_proto::Verdict::Stop, refusal).await
        }
    }
}

/// The stages before the audit intent, shared by exec and judge-only
/// requests: role, the judging stages, then approval / retry budget.
pub async fn admit(daemon: &Arc<Daemon>, inbound: Inbound) -> (Trail, approval::Ticket, Gate) {
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
    let mut ticket = approval::Ticket {
        role_why,
        session: approval::session_key(inbound.request.session.as_deref(), &inbound.peer),
        presented_token: inbound.request.approval_token.clone(),
        ..approval::Ticket::default()
    };
    let mut trail = Trail {
        request_id: ids::request_id(),
        peer: inbound.peer,
        arguments_digest: ids::arguments_digest(&inbound.request, &inbound.request.cwd, &role),
        role,
        session: inbound.request.session.clone(),
        runtime: inbound.request.runtime.clone(),
        cwd: inbound.request.cwd.clone(),
        argv_redacted: Some(redact::as_sent(daemon, &inbound.request.command)),
        policy_revision: None,
    };

    let gate = match assigned {
        Ok(_) => decide(daemon, inbound, &mut trail),
        Err(e) => Gate::Hold(Refusal::unclassified(format!(
            "role refused: {}",
            errors::one_line(&e)
        ))),
    };
    let gate = approval::apply(daemon, gate, &trail, &mut ticket).await;
    (trail, ticket, gate)
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
    if let Err(engaged) = kill_switch::check(daemon) {
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
    let policy = match policy::in_force(daemon) {
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
        cwd_dir,
        uid,
        &request.env,
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
    let mut shown = redact::as_sent(daemon, &request.command);
    let breakdown = redact::for_audit(daemon, &decision);
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
    // ALLOW, or a HOLD an approval may lift: either way, what would run.
    let permit = {
        let limits = policy.limits();
        let requested = request
            .timeout_secs
            .unwrap_or(limits.timeout_secs)
            .min(limits.timeout_secs);
        let argv = match request.command {
            Command::Argv(argv) => argv.into_iter().map(OsString::from).collect(),
            Command::Shell(script) => {
                vec![
                    daemon.config.shell.clone().into_os_string(),
                    OsString::from("-c"),
                    OsString::from(script),
                ]
            }
        };
        let mut env: Vec<(OsString, OsString)> = request
            .env
            .into_iter()
            .filter(|(k, _)| praxis_proto::is_forwarded_env(k))
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        if !env.iter().any(|(k, _)| k == "PATH") {
            env.push((OsString::from("PATH"), gathered.path_var));
        }
        Box::new(Permit {
            _seal: Seal,
            request_id: trail.request_id.clone(),
            argv,
            cwd: gathered.context.cwd,
            workspace: gathered.context.workspace,
            home: gathered.context.home,
            env,
            timeout: Duration::from_secs(requested.max(1)),
            output_cap: limits.output_cap_bytes,
            peer,
            stdin,
            decision,
            policy,
            brokered: Vec::new(),
            advisory: None,
            undo: None,
        })
    };
    let mut permit = permit;
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
    match (permit.decision.decision, irreversible) {
        (Verdict::Allow, None) => Gate::Allow(permit),
        (verdict, irreversible) => {
            let mut refusal = Refusal {
                approvable: true,
                ..Refusal::of(&permit.decision)
            };
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
            Gate::Held(Held {
                permit,
                refusal,
                steerable: irreversible.is_none(),
            })
        }
    }
}

/// Answers a HOLD or STOP: the decision frame is the whole reply.
async fn refuse(
    daemon: &Daemon,
    writer: &mut Writer,
    trail: &Trail,
    verdict: praxis_proto::Verdict,
    r: Refusal,
) {
    let counter = match verdict {
        praxis_proto::Verdict::Stop => &daemon.counters.stopped,
        _ => &daemon.counters.held,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let frame = decision_frame(trail, verdict, &r);
    let _ = writer.send(&ServerMsg::Decision(frame)).await;
}

/// The decision frame for the client. HOLD names the operator command that
/// would approve it.
pub fn decision_frame(trail: &Trail, verdict: praxis_proto::Verdict, r: &Refusal) -> DecisionFrame {
    DecisionFrame {
        request_id: trail.request_id.clone(),
        decision: verdict,
        tier: r.tier.as_str().to_owned(),
        reason: r.reason.clone(),
        rule_ids: r.rule_ids.clone(),
        profile: r.profile.as_str().to_owned(),
        approve_with: (verdict == praxis_proto::Verdict::Hold && r.approvable)
            .then(|| format!("praxis approve {}", trail.request_id)),
        approval_token: None,
    }
}

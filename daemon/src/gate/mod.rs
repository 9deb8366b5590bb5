//! The values the pipeline passes between its stages. They live below the
//! stages, so a stage names them without naming the pipeline that calls it.
//!
//! Only the pipeline can make a [`Permit`] or a [`Held`]: a [`Seal`] and a
//! `Held` come only from the child module `seal`, which no module but the pipeline names
//! (the daemon's layers test checks this). [`Gate::Allow`] carries a permit;
//! a policy HOLD carries one sealed in a `Held`, which only [`Held::lift`]
//! opens.

pub mod seal;

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use praxis_memory::contract::MemoryUse;
use praxis_policy::{Decision, Policy, Profile, Tier, Verdict};
use praxis_proto::{CredentialBinding, CredentialSpec, DecisionFrame, ExitStatus};
use praxis_snapshot::Plan;
use zeroize::Zeroizing;

use crate::conn::Peer;

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

/// What only `seal::seal` makes, so only the pipeline can make a [`Permit`].
#[derive(Debug)]
pub struct Seal(());

/// Leave to execute exactly one command, as decided.
#[derive(Debug)]
pub struct Permit {
    pub(crate) _seal: Seal,
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
    pub brokered: Vec<Brokered>,
    /// Shown to the agent before the output (a steer-only role's lifted HOLD).
    pub advisory: Option<String>,
    /// The session control plane's steer, sent with the decision: each
    /// client shows it before the output in its runtime's own way.
    pub steer: Option<String>,
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

    /// Opens the HOLD: for the approval stage alone (memory relaxes a HOLD
    /// before it is sealed), after it found a usable
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
    /// The memories the decision used, and as what (instruction, evidence).
    pub memory_used: Vec<MemoryUse>,
}

/// The decision frame for the client. HOLD names the operator command that
/// would approve it.
pub fn decision_frame(trail: &Trail, verdict: Verdict, r: &Refusal) -> DecisionFrame {
    DecisionFrame {
        request_id: trail.request_id.clone(),
        decision: verdict,
        tier: r.tier.as_str().to_owned(),
        reason: r.reason.clone(),
        rule_ids: r.rule_ids.clone(),
        profile: r.profile,
        approve_with: (verdict == Verdict::Hold && r.approvable)
            .then(|| format!("praxis approve {}", trail.request_id)),
        approval_token: None,
        steer: None,
        policy_revision: trail.policy_revision.clone(),
        memory_used: trail
            .memory_used
            .iter()
            .map(|m| praxis_proto::MemoryUsed {
                memory_id: m.memory_id.clone(),
                used_as: m.used_as.as_str().to_owned(),
            })
            .collect(),
    }
}

/// Who gave the approval a run consumes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approver {
    /// An operator, with `praxis approve`.
    Operator,
    /// The user, in the permission prompt of the named runtime.
    Prompt(String),
}

impl Approver {
    /// How the audit record names the approver.
    pub fn label(&self) -> String {
        match self {
            Approver::Operator => String::from("operator"),
            Approver::Prompt(runtime) => format!("{runtime} prompt"),
        }
    }
}

/// An approval a run consumes: its id and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approval {
    pub id: String,
    pub by: Approver,
}

/// What the approval stage settled about a request, for the intent record.
#[derive(Clone, Debug, Default)]
pub struct Ticket {
    /// Why the role applies.
    pub role_why: String,
    /// The retry budget's session: the request's, else the peer's Unix session.
    pub session: String,
    /// The request digest, once the policy decided.
    pub digest: Option<String>,
    /// Credentials the request gets when it runs.
    pub grants: Vec<CredentialSpec>,
    /// The approval this run consumes.
    pub approval: Option<Approval>,
    /// The one-time token the request presented, if any.
    pub presented_token: Option<String>,
    /// The execution limit this run counts against.
    pub budget: Option<u32>,
    /// The advisory line of a steer-only role's lifted HOLD.
    pub advisory: Option<String>,
}

impl Ticket {
    pub fn names(&self) -> Vec<String> {
        self.grants.iter().map(|g| g.name.clone()).collect()
    }
}

/// Why the transaction of an ALLOW's intent record refused to commit: what
/// the approval stage found usable is no longer so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// Another run consumed the approval first, or it expired meanwhile.
    #[error("the approval was already used or has expired")]
    ApprovalGone,
    /// A concurrent run of the same request took the last execution.
    #[error("retry budget exhausted")]
    BudgetSpent,
}

/// A resolved credential, alive only until the command is spawned and its
/// output masked.
pub struct Brokered {
    pub name: String,
    pub env: String,
    pub value: Zeroizing<Vec<u8>>,
    /// Bound to destinations: the command's `env` holds `placeholder`, and
    /// the egress proxy puts `value` into requests to those destinations.
    pub bound: Option<(CredentialBinding, String)>,
}

impl Brokered {
    /// The environment entries for the brokered values: copies the sandbox
    /// spec holds until [`Brokered::wipe`] clears them.
    pub fn env_entries(brokered: &[Brokered]) -> Vec<(OsString, OsString)> {
        brokered
            .iter()
            .map(|b| {
                let value = match &b.bound {
                    Some((_, placeholder)) => OsString::from(placeholder),
                    None => OsString::from_vec(b.value.to_vec()),
                };
                (OsString::from(&b.env), value)
            })
            .collect()
    }

    /// Zeroes and drops the brokered values among `env` (names in `names`).
    pub fn wipe(env: &mut Vec<(OsString, OsString)>, names: &[String]) {
        env.retain_mut(|(k, v)| {
            if names.iter().any(|n| k == n.as_str()) {
                let mut bytes = Zeroizing::new(std::mem::take(v).into_vec());
                bytes.fill(0);
                false
            } else {
                true
            }
        });
    }
}

impl std::fmt::Debug for Brokered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Brokered({} as {}, value hidden)", self.name, self.env)
    }
}

/// What happened to an allowed command.
#[must_use = "an execution's outcome must be recorded"]
#[derive(Debug)]
pub enum Executed {
    /// It could not be started; the client was told HOLD with `reason`.
    NotStarted {
        reason: String,
        tier: Tier,
        profile: Profile,
    },
    Ran(Ran),
}

/// How a command that ran ended.
#[derive(Debug)]
pub struct Ran {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The exit as the client hears it.
    pub status: ExitStatus,
    pub timed_out: bool,
    pub ended_because: Option<String>,
    pub duration_ms: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub output_digest: String,
    pub truncated: bool,
    pub profile: Profile,
    /// Whether the client was still there when the command ended.
    pub connected: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wipe_removes_only_brokered_entries() {
        let brokered = vec![Brokered {
            name: "gh".into(),
            env: "GH_TOKEN".into(),
            value: Zeroizing::new(b"tok-123456".to_vec()),
            bound: None,
        }];
        let mut env = vec![(OsString::from("PATH"), OsString::from("/bin"))];
        env.extend(Brokered::env_entries(&brokered));
        assert_eq!(env.len(), 2);
        Brokered::wipe(&mut env, &["GH_TOKEN".to_owned()]);
        assert_eq!(env, vec![(OsString::from("PATH"), OsString::from("/bin"))]);
        assert!(!format!("{brokered:?}").contains("tok-123456"));
    }
}

//! The approval / retry-budget stage, and the operator's side of approvals.
//!
//! A policy HOLD is stored as a pending request (in the audit database, in
//! the same transaction as its HOLD record). `praxis approve ID` turns it into
//! a one-shot approval bound to the request digest: SHA-256 of the canonical
//! request (command, cwd, role, profile, credential grants). When the agent
//! runs the same request again, this stage finds the approval and lifts the
//! HOLD; the approval is consumed by the SQL that runs inside the transaction
//! committing the run's audit intent, guarded so that it succeeds once: a
//! second run, concurrent or later, finds it gone and stays HOLD.
//!
//! A runtime that asks its own user (Claude Code's `ask`) gets a one-time
//! approval token instead, minted when the daemon judges the held command
//! for it: a random 128-bit value, stored only as its SHA-256, bound to the
//! request digest and the session, valid for [`TOKEN_TTL_SECS`], and used
//! only when presented (`praxis-run --approval-token`). The user's yes runs
//! the rewrite carrying it; the run consumes it in its intent's transaction
//! like any approval. Neither minting nor presenting works from inside a
//! command praxis runs, so an agent's commands cannot obtain or replay one.
//!
//! The retry budget counts executions per session and request digest, in the
//! same transaction. A tier with a limit (T2/T3: 2 by default) is STOP once
//! the limit is reached, and a STOP is never approvable. A steer-only role
//! turns a policy HOLD into an ALLOW with an advisory line; it never touches
//! a STOP, the budget included.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use praxis_policy::{Profile, Tier};
use praxis_proto::{CredentialSpec, OperatorReply, PendingItem};
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::audit::{AuditError, Durability, Event, EventKind, TxOp};
use crate::conn::Peer;
use crate::pipeline::{Gate, Refusal, Trail};
use crate::state::Daemon;
use crate::{credentials, errors, ids, roles};

/// Tables of this module, in the audit database.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pending (
    request_id TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    command TEXT NOT NULL,
    role TEXT NOT NULL,
    tier TEXT NOT NULL,
    reason TEXT NOT NULL,
    cwd TEXT NOT NULL,
    session TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    resolution TEXT
);
CREATE INDEX IF NOT EXISTS pending_digest ON pending(digest);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    request_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    approved_by INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    consumed_ms INTEGER,
    consumed_by TEXT,
    withdrawn INTEGER NOT NULL DEFAULT 0,
    expiry_recorded INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS approvals_digest ON approvals(digest);
CREATE TABLE IF NOT EXISTS prompt_tokens (
    id TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL UNIQUE,
    request_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    session TEXT NOT NULL,
    runtime TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    consumed_ms INTEGER,
    consumed_by TEXT,
    withdrawn INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS prompt_tokens_digest ON prompt_tokens(digest);
CREATE TABLE IF NOT EXISTS retry_budget (
    session TEXT NOT NULL,
    digest TEXT NOT NULL,
    executions INTEGER NOT NULL,
    PRIMARY KEY (session, digest)
);
";

/// Why an intent's transaction refused to consume: the approval is gone.
pub const APPROVAL_GONE: &str = "the approval was already used or has expired";
/// Why an intent's transaction refused to count: the budget is spent.
pub const BUDGET_SPENT: &str = "retry budget exhausted";

/// Audit kind of a minted one-time token.
pub const MINTED: &str = "approval_minted";
/// Longest approval lifetime an operator may grant.
const MAX_TTL_SECS: u64 = 7 * 24 * 3600;
/// Lifetime of a one-time token: long enough for a user to read the prompt.
pub const TOKEN_TTL_SECS: i64 = 10 * 60;
/// Prefix of the one-time tokens.
pub const TOKEN_PREFIX: &str = "pxa-";

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

/// The budget session of a request: its `--session`/`PRAXIS_SESSION`, else
/// the peer's Unix session id, else its uid.
pub fn session_key(session: Option<&str>, peer: &Peer) -> String {
    if let Some(s) = session.filter(|s| !s.is_empty()) {
        return s.to_owned();
    }
    peer.pid
        .and_then(|pid| nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid))).ok())
        .map(|sid| format!("unix-sid-{sid}"))
        .unwrap_or_else(|| format!("uid-{}", peer.uid))
}

/// Hex SHA-256 of the canonical request an approval is bound to: the raw
/// request digest (command, client cwd, role), the resolved cwd, the sandbox
/// profile and the names of the credentials it would get, each
/// length-prefixed.
pub fn request_digest(
    arguments_digest: &str,
    cwd: &Path,
    profile: Profile,
    grants: &[CredentialSpec],
) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &[u8], bytes: &[u8]| {
        h.update(tag);
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"d", arguments_digest.as_bytes());
    field(b"c", cwd.as_os_str().as_encoded_bytes());
    field(b"p", profile.as_str().as_bytes());
    let mut names: Vec<&str> = grants.iter().map(|g| g.name.as_str()).collect();
    names.sort_unstable();
    for name in names {
        field(b"g", name.as_bytes());
    }
    hex::encode(h.finalize())
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn refusal(reason: String, tier: Tier, profile: Profile) -> Refusal {
    Refusal {
        reason,
        tier,
        rule_ids: Vec::new(),
        profile,
        approvable: false,
    }
}

/// An approval found for a digest.
enum Found {
    Usable(String),
    Expired(String),
}

/// SHA-256 of a token, as stored: the token itself is never written.
fn token_sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The unconsumed token row matching `token`, `digest` and `session`: its
/// id, the runtime it was minted for, and its expiry.
fn find_token(
    daemon: &Daemon,
    token: &str,
    digest: &str,
    session: &str,
) -> Result<Option<(String, String, i64)>, AuditError> {
    let hash = token_sha256(token);
    daemon.audit.read(|conn| {
        conn.query_row(
            "SELECT id, runtime, expires_ms FROM prompt_tokens
             WHERE token_sha256 = ?1 AND digest = ?2 AND session = ?3
               AND consumed_ms IS NULL AND withdrawn = 0",
            [&hash, digest, session],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
    })
}

/// Whether `peer` may be a command praxis runs (an unknown pid may be).
fn inside(daemon: &Daemon, peer: &Peer) -> bool {
    peer.pid
        .is_none_or(|pid| daemon.children.contains_process(pid))
}

/// Why a presented token lifts nothing, or the approval it gives.
fn presented(
    daemon: &Daemon,
    trail: &Trail,
    ticket: &Ticket,
    token: &str,
    digest: &str,
) -> Result<Approval, String> {
    if inside(daemon, &trail.peer) {
        return Err(String::from(
            "an approval token is not accepted from inside a command praxis runs",
        ));
    }
    match find_token(daemon, token, digest, &ticket.session) {
        Ok(Some((id, runtime, expires))) if expires > now_ms() => Ok(Approval {
            id,
            by: Approver::Prompt(runtime),
        }),
        Ok(Some((id, _, _))) => Err(format!("approval token {id} expired unused")),
        Ok(None) => Err(String::from(
            "the approval token does not apply: it was used already, or was minted for another command or session",
        )),
        Err(e) => Err(format!(
            "approval tokens unreadable: {}",
            errors::one_line(&e)
        )),
    }
}

fn find_approval(daemon: &Daemon, digest: &str) -> Result<Option<Found>, AuditError> {
    let now = now_ms();
    daemon.audit.read(|conn| {
        let row: Option<(String, i64)> = conn
            .query_row(
                "SELECT id, expires_ms FROM approvals
                 WHERE digest = ?1 AND consumed_ms IS NULL AND withdrawn = 0
                 ORDER BY expires_ms DESC LIMIT 1",
                [digest],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(row.map(|(id, expires)| {
            if expires > now {
                Found::Usable(id)
            } else {
                Found::Expired(id)
            }
        }))
    })
}

/// Mints a one-time token for a policy HOLD judged for a runtime that asks
/// its user, and records `approval_minted` in the transaction that stores it
/// (the hash only). Returns the token, for the runtime's prompt alone.
pub async fn mint(daemon: &Daemon, trail: &Trail, ticket: &Ticket) -> Result<String, String> {
    if inside(daemon, &trail.peer) {
        return Err(String::from(
            "no approval token is minted for a request from inside a command praxis runs",
        ));
    }
    let digest = ticket
        .digest
        .clone()
        .ok_or_else(|| String::from("the request has no digest"))?;
    let mut random = [0u8; 16];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut random))
        .map_err(|e| format!("no randomness for an approval token: {e}"))?;
    let token = format!("{TOKEN_PREFIX}{}", hex::encode(random));
    let id = ids::approval_id();
    let runtime = trail
        .runtime
        .clone()
        .unwrap_or_else(|| String::from("runtime"));
    let now = now_ms();
    let expires = now.saturating_add(TOKEN_TTL_SECS * 1000);
    let mut detail = serde_json::Map::new();
    detail.insert("digest".into(), digest.clone().into());
    detail.insert("token_session".into(), ticket.session.clone().into());
    detail.insert("ttl_secs".into(), TOKEN_TTL_SECS.into());
    detail.insert(
        "approved_by".into(),
        Approver::Prompt(runtime.clone()).label().into(),
    );
    let event = Event {
        approval_id: Some(id.clone()),
        reason: Some(format!(
            "one-time approval token for {runtime}'s permission prompt: this request, in session {}, once, within {TOKEN_TTL_SECS}s",
            ticket.session
        )),
        detail: Some(detail),
        ..crate::audit_stage::base(EventKind::Other(String::from(MINTED)), trail)
    };
    let row = (
        id,
        token_sha256(&token),
        trail.request_id.clone(),
        digest,
        ticket.session.clone(),
        runtime,
    );
    let op: TxOp = Box::new(move |tx| {
        tx.execute(
            "INSERT INTO prompt_tokens
               (id, token_sha256, request_id, digest, session, runtime, created_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![row.0, row.1, row.2, row.3, row.4, row.5, now, expires],
        )
        .map(drop)
        .map_err(|e| errors::one_line(&e))
    });
    daemon
        .audit
        .append_with_async(event, Durability::Full, op)
        .await
        .map_err(|e| errors::one_line(&e))
        .map(|_| token)
}

fn executions(daemon: &Daemon, session: &str, digest: &str) -> Result<u32, AuditError> {
    daemon.audit.read(|conn| {
        conn.query_row(
            "SELECT executions FROM retry_budget WHERE session = ?1 AND digest = ?2",
            [session, digest],
            |r| r.get(0),
        )
        .optional()
        .map(|n| n.unwrap_or(0))
    })
}

/// The stage: budget, then steer-only, then a one-shot approval.
pub async fn apply(daemon: &Arc<Daemon>, gate: Gate, trail: &Trail, ticket: &mut Ticket) -> Gate {
    let (permit, tier) = match &gate {
        Gate::Allow(p) => (&**p, p.decision.tier),
        Gate::Held(h) => (h.permit(), h.refusal.tier),
        Gate::Hold(_) | Gate::Stop(_) => return gate,
    };
    let profile = permit.decision.profile;
    ticket.grants = match credentials::grants(daemon, &trail.role, &permit.decision) {
        Ok(grants) => grants,
        Err(why) => return Gate::Hold(refusal(why, tier, profile)),
    };
    let digest = request_digest(
        &trail.arguments_digest,
        &permit.cwd,
        profile,
        &ticket.grants,
    );
    ticket.digest = Some(digest.clone());

    if let Some(limit) = daemon.config.retry_budget.limit(tier) {
        match executions(daemon, &ticket.session, &digest) {
            Ok(done) if done >= limit => {
                let reason = budget_reason(done, limit, tier, &ticket.session);
                exhausted(daemon, trail, &reason).await;
                return Gate::Stop(refusal(reason, tier, profile));
            }
            Ok(_) => ticket.budget = Some(limit),
            Err(e) => {
                return Gate::Hold(refusal(
                    format!("retry budget unreadable: {}", errors::one_line(&e)),
                    tier,
                    profile,
                ));
            }
        }
    }

    let Gate::Held(mut held) = gate else {
        return gate;
    };
    let role_defined = held.permit().policy.roles().any(|r| r == trail.role);
    if roles::steer_only(&daemon.config.roles, &trail.role) && role_defined && held.steerable {
        let advisory = format!(
            "praxis: advisory: role `{}` is steer-only, so this ran although the policy says HOLD: {}",
            trail.role, held.refusal.reason
        );
        ticket.advisory = Some(advisory.clone());
        return Gate::Allow(held.lift(Some(advisory)));
    }
    if let Some(token) = ticket.presented_token.clone() {
        match presented(daemon, trail, ticket, &token, &digest) {
            Ok(approval) => {
                ticket.approval = Some(approval);
                return Gate::Allow(held.lift(None));
            }
            Err(why) => {
                held.refusal.reason = format!("{} ({why})", held.refusal.reason);
                return Gate::Held(held);
            }
        }
    }
    match find_approval(daemon, &digest) {
        Ok(Some(Found::Usable(id))) => {
            ticket.approval = Some(Approval {
                id,
                by: Approver::Operator,
            });
            Gate::Allow(held.lift(None))
        }
        Ok(Some(Found::Expired(id))) => {
            let d = Arc::clone(daemon);
            let _ = tokio::task::spawn_blocking(move || record_expired(&d)).await;
            held.refusal.reason = format!(
                "{} (approval {id} expired unused; a new approval is needed)",
                held.refusal.reason
            );
            Gate::Held(held)
        }
        Ok(None) => Gate::Held(held),
        Err(e) => {
            tracing::error!("approvals unreadable: {e}");
            Gate::Held(held)
        }
    }
}

pub fn budget_reason(done: u32, limit: u32, tier: Tier, session: &str) -> String {
    format!(
        "{BUDGET_SPENT}: this request already ran {done} time(s) in session {session}, at most {limit} for {} ({}); it cannot be approved again in this session",
        tier.label(),
        tier.as_str()
    )
}

/// Records that a request hit its budget (besides its STOP decision record).
pub async fn exhausted(daemon: &Daemon, trail: &Trail, reason: &str) {
    let event = Event {
        reason: Some(reason.to_owned()),
        ..crate::audit_stage::base(EventKind::BudgetExhausted, trail)
    };
    if let Err(e) = daemon.record(event, Durability::Full).await {
        tracing::error!("audit of an exhausted budget failed: {e}");
    }
}

/// The SQL that runs inside the transaction of an ALLOW's intent record:
/// consumes the approval and counts the execution, or fails (and the intent
/// with it) when either is no longer possible.
pub fn allow_op(ticket: &Ticket, request_id: &str) -> Option<TxOp> {
    if ticket.approval.is_none() && ticket.budget.is_none() {
        return None;
    }
    let approval = ticket.approval.clone();
    let budget = ticket
        .budget
        .zip(ticket.digest.clone())
        .map(|(limit, digest)| (limit, digest, ticket.session.clone()));
    let request_id = request_id.to_owned();
    Some(Box::new(move |tx| {
        let now = now_ms();
        let sql = |e: rusqlite::Error| errors::one_line(&e);
        if let Some(Approval { id, by }) = approval {
            let table = match by {
                Approver::Operator => "approvals",
                Approver::Prompt(_) => "prompt_tokens",
            };
            let consumed = tx
                .execute(
                    &format!(
                        "UPDATE {table} SET consumed_ms = ?1, consumed_by = ?2
                         WHERE id = ?3 AND consumed_ms IS NULL AND withdrawn = 0 AND expires_ms > ?1"
                    ),
                    params![now, request_id, id],
                )
                .map_err(sql)?;
            if consumed != 1 {
                return Err(APPROVAL_GONE.to_owned());
            }
            if let Approver::Prompt(_) = by {
                // The user's yes answers the held judgment the token was minted for.
                tx.execute(
                    "UPDATE pending SET resolution = 'approved'
                     WHERE resolution IS NULL
                       AND request_id = (SELECT request_id FROM prompt_tokens WHERE id = ?1)",
                    [&id],
                )
                .map_err(sql)?;
            }
        }
        if let Some((limit, digest, session)) = budget {
            let counted = tx
                .execute(
                    "INSERT INTO retry_budget (session, digest, executions) VALUES (?1, ?2, 1)
                     ON CONFLICT (session, digest) DO UPDATE SET executions = executions + 1
                     WHERE executions < ?3",
                    params![session, digest, limit],
                )
                .map_err(sql)?;
            if counted != 1 {
                return Err(BUDGET_SPENT.to_owned());
            }
        }
        Ok(())
    }))
}

/// The SQL that stores a policy HOLD as pending, inside the transaction of
/// its HOLD record.
pub fn hold_op(trail: &Trail, ticket: &Ticket, refusal: &Refusal, cwd: &Path) -> Option<TxOp> {
    let digest = ticket.digest.clone()?;
    let command = serde_json::to_string(trail.argv_redacted.as_deref().unwrap_or(&[])).ok()?;
    let row = (
        trail.request_id.clone(),
        digest,
        command,
        trail.role.clone(),
        refusal.tier.as_str().to_owned(),
        refusal.reason.clone(),
        cwd.display().to_string(),
        ticket.session.clone(),
    );
    Some(Box::new(move |tx| {
        tx.execute(
            "INSERT INTO pending (request_id, digest, command, role, tier, reason, cwd, session, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, now_ms()],
        )
        .map(drop)
        .map_err(|e| errors::one_line(&e))
    }))
}

/// Records each approval that expired unused, once.
pub fn record_expired(daemon: &Daemon) {
    let now = now_ms();
    let expired: Result<Vec<(String, String)>, _> = daemon.audit.read(|conn| {
        conn.prepare(
            "SELECT id, request_id FROM approvals
             WHERE expires_ms <= ?1 AND consumed_ms IS NULL AND withdrawn = 0 AND expiry_recorded = 0",
        )?
        .query_map([now], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
    });
    for (id, request_id) in expired.unwrap_or_default() {
        let event = Event {
            approval_id: Some(id.clone()),
            request_id: Some(request_id),
            reason: Some(String::from("approval expired unused")),
            ..Event::new(EventKind::ApprovalExpired)
        };
        let op: TxOp = Box::new(move |tx| {
            match tx.execute(
                "UPDATE approvals SET expiry_recorded = 1 WHERE id = ?1 AND expiry_recorded = 0",
                [&id],
            ) {
                Ok(1) => Ok(()),
                Ok(_) => Err(String::from("already recorded")),
                Err(e) => Err(errors::one_line(&e)),
            }
        });
        match daemon.audit.append_with(event, Durability::Normal, op) {
            Ok(_) | Err(AuditError::Rejected(_)) => {}
            Err(e) => tracing::error!("audit of an approval expiry failed: {e}"),
        }
    }
}

/// `praxis pending`: held requests nobody has approved or denied yet.
pub fn pending(daemon: &Daemon) -> OperatorReply {
    record_expired(daemon);
    let now = now_ms();
    let rows = daemon.audit.read(|conn| {
        conn.prepare(
            "SELECT request_id, command, role, tier, reason, cwd, session, created_ms, digest
             FROM pending WHERE resolution IS NULL ORDER BY created_ms, request_id",
        )?
        .query_map([], |r| {
            let command: String = r.get(1)?;
            let created: i64 = r.get(7)?;
            Ok(PendingItem {
                request_id: r.get(0)?,
                command: serde_json::from_str(&command).unwrap_or_default(),
                role: r.get(2)?,
                tier: r.get(3)?,
                reason: r.get(4)?,
                cwd: r.get(5)?,
                session: r.get(6)?,
                age_secs: u64::try_from((now - created).max(0) / 1000).unwrap_or(0),
                digest: r.get(8)?,
            })
        })?
        .collect()
    });
    match rows {
        Ok(items) => OperatorReply::Pending { items },
        Err(e) => OperatorReply::Refused {
            reason: errors::one_line(&e),
        },
    }
}

/// A pending request as the operator commands need it.
struct Held {
    digest: String,
    command: Vec<String>,
    role: String,
    tier: String,
    resolution: Option<String>,
}

fn held_request(daemon: &Daemon, request_id: &str) -> Result<Option<Held>, AuditError> {
    daemon.audit.read(|conn| {
        conn.query_row(
            "SELECT digest, command, role, tier, resolution FROM pending WHERE request_id = ?1",
            [request_id],
            |r| {
                let command: String = r.get(1)?;
                Ok(Held {
                    digest: r.get(0)?,
                    command: serde_json::from_str(&command).unwrap_or_default(),
                    role: r.get(2)?,
                    tier: r.get(3)?,
                    resolution: r.get(4)?,
                })
            },
        )
        .optional()
    })
}

/// Why `request_id` has no pending row: a STOP, a HOLD no approval can lift, or unknown.
fn not_pending(daemon: &Daemon, request_id: &str) -> String {
    let decided = daemon.audit.by_request(request_id).ok().and_then(|events| {
        events
            .into_iter()
            .find(|e| e.event.kind == EventKind::Decided)
            .and_then(|e| e.event.decision)
    });
    match decided.as_deref() {
        Some("STOP") => format!("{request_id} was STOP, and a STOP cannot be approved"),
        Some("ALLOW") => format!("{request_id} was allowed; there is nothing to approve"),
        Some(_) => format!(
            "{request_id} was held before the policy could judge it (kill switch, bad policy, refused role, …); only a policy HOLD can be approved"
        ),
        None => format!("no held request {request_id}"),
    }
}

fn operator_event(kind: EventKind, peer: &Peer, request_id: &str, held: &Held) -> Event {
    Event {
        request_id: Some(request_id.to_owned()),
        uid: Some(peer.uid),
        pid: peer.pid.and_then(|p| u32::try_from(p).ok()),
        role: Some(held.role.clone()),
        tier: Some(held.tier.clone()),
        argv_redacted: Some(held.command.clone()),
        ..Event::new(kind)
    }
}

fn refused(reason: String) -> OperatorReply {
    OperatorReply::Refused { reason }
}

fn audit_refusal(e: AuditError) -> OperatorReply {
    match e {
        AuditError::Rejected(why) => refused(why),
        e => refused(errors::one_line(&e)),
    }
}

/// `praxis approve ID`: a one-shot approval of the request's digest.
pub fn approve(
    daemon: &Daemon,
    peer: &Peer,
    request_id: &str,
    ttl_secs: Option<u64>,
    note: Option<&str>,
) -> OperatorReply {
    let held = match held_request(daemon, request_id) {
        Ok(Some(held)) => held,
        Ok(None) => return refused(not_pending(daemon, request_id)),
        Err(e) => return refused(errors::one_line(&e)),
    };
    if let Some(resolution) = &held.resolution {
        return refused(format!("{request_id} is already {resolution}"));
    }
    let ttl = ttl_secs.unwrap_or(daemon.config.approval_ttl.as_secs());
    if ttl == 0 || ttl > MAX_TTL_SECS {
        return refused(format!(
            "ttl must be between 1 second and {} days",
            MAX_TTL_SECS / 86400
        ));
    }
    let id = ids::approval_id();
    let now = now_ms();
    let expires = now.saturating_add(i64::try_from(ttl).unwrap_or(i64::MAX).saturating_mul(1000));
    let mut detail = serde_json::Map::new();
    detail.insert("ttl_secs".into(), ttl.into());
    detail.insert("digest".into(), held.digest.clone().into());
    if let Some(note) = note {
        detail.insert("note".into(), daemon.redact(note).into());
    }
    let event = Event {
        approval_id: Some(id.clone()),
        decision: Some(String::from("ALLOW")),
        reason: Some(format!(
            "approved by uid {} for one run within {ttl}s",
            peer.uid
        )),
        detail: Some(detail),
        ..operator_event(EventKind::Approved, peer, request_id, &held)
    };
    let (approval, request, digest, uid) =
        (id.clone(), request_id.to_owned(), held.digest, peer.uid);
    let op: TxOp = Box::new(move |tx| {
        let sql = |e: rusqlite::Error| errors::one_line(&e);
        let claimed = tx
            .execute(
                "UPDATE pending SET resolution = 'approved'
                 WHERE request_id = ?1 AND resolution IS NULL",
                [&request],
            )
            .map_err(sql)?;
        if claimed != 1 {
            return Err(format!("{request} was resolved meanwhile"));
        }
        // Other holds of the same request are answered by the same approval.
        tx.execute(
            "UPDATE pending SET resolution = 'approved' WHERE digest = ?1 AND resolution IS NULL",
            [&digest],
        )
        .map_err(sql)?;
        tx.execute(
            "INSERT INTO approvals (id, request_id, digest, approved_by, created_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![approval, request, digest, uid, now, expires],
        )
        .map(drop)
        .map_err(sql)
    });
    match daemon.audit.append_with(event, Durability::Full, op) {
        Ok(_) => OperatorReply::Done {
            message: format!(
                "approved {request_id} as {id}: the same command may now run once, within {ttl}s"
            ),
        },
        Err(e) => audit_refusal(e),
    }
}

/// `praxis deny ID`: closes a held request, or withdraws its unused approval.
pub fn deny(daemon: &Daemon, peer: &Peer, request_id: &str, note: Option<&str>) -> OperatorReply {
    let held = match held_request(daemon, request_id) {
        Ok(Some(held)) => held,
        Ok(None) => return refused(not_pending(daemon, request_id)),
        Err(e) => return refused(errors::one_line(&e)),
    };
    if held.resolution.as_deref() == Some("denied") {
        return refused(format!("{request_id} is already denied"));
    }
    let mut detail = serde_json::Map::new();
    if let Some(note) = note {
        detail.insert("note".into(), daemon.redact(note).into());
    }
    let event = Event {
        decision: Some(String::from("STOP")),
        reason: Some(format!("denied by uid {}", peer.uid)),
        detail: (!detail.is_empty()).then_some(detail),
        ..operator_event(EventKind::Denied, peer, request_id, &held)
    };
    let (request, digest) = (request_id.to_owned(), held.digest);
    let op: TxOp = Box::new(move |tx| {
        let sql = |e: rusqlite::Error| errors::one_line(&e);
        tx.execute(
            "UPDATE pending SET resolution = 'denied'
             WHERE (request_id = ?1 OR digest = ?2) AND (resolution IS NULL OR resolution = 'approved')",
            [&request, &digest],
        )
        .map_err(sql)?;
        for table in ["approvals", "prompt_tokens"] {
            tx.execute(
                &format!(
                    "UPDATE {table} SET withdrawn = 1 WHERE digest = ?1 AND consumed_ms IS NULL"
                ),
                [&digest],
            )
            .map_err(sql)?;
        }
        Ok(())
    });
    match daemon.audit.append_with(event, Durability::Full, op) {
        Ok(_) => OperatorReply::Done {
            message: format!("denied {request_id}"),
        },
        Err(e) => audit_refusal(e),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use praxis_proto::CredentialSource;

    use super::*;

    fn grant(name: &str) -> CredentialSpec {
        CredentialSpec {
            name: name.into(),
            env: "X".into(),
            source: CredentialSource::Env("X".into()),
            roles: vec!["agent".into()],
            programs: Vec::new(),
        }
    }

    #[test]
    fn digest_binds_cwd_profile_and_grants() {
        let cwd = PathBuf::from("/w");
        let base = request_digest("d", &cwd, Profile::ReadOnly, &[]);
        assert_eq!(base.len(), 64);
        assert_eq!(base, request_digest("d", &cwd, Profile::ReadOnly, &[]));
        for other in [
            request_digest("e", &cwd, Profile::ReadOnly, &[]),
            request_digest("d", Path::new("/x"), Profile::ReadOnly, &[]),
            request_digest("d", &cwd, Profile::Full, &[]),
            request_digest("d", &cwd, Profile::ReadOnly, &[grant("gh")]),
        ] {
            assert_ne!(base, other);
        }
        assert_eq!(
            request_digest("d", &cwd, Profile::ReadOnly, &[grant("a"), grant("b")]),
            request_digest("d", &cwd, Profile::ReadOnly, &[grant("b"), grant("a")])
        );
    }

    #[test]
    fn session_key_prefers_the_claimed_session() {
        let peer = Peer {
            uid: 7,
            gid: 7,
            pid: Some(std::process::id() as i32),
        };
        assert_eq!(session_key(Some("s1"), &peer), "s1");
        assert!(session_key(None, &peer).starts_with("unix-sid-"));
        let unknown = Peer { pid: None, ..peer };
        assert_eq!(session_key(Some(""), &unknown), "uid-7");
    }
}

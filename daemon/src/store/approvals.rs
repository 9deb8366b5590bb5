//! The approval tables and all the SQL on them: pending HOLDs, operator
//! approvals, one-time prompt tokens, the retry budget, and expiry.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use praxis_proto::PendingItem;
use rusqlite::{OptionalExtension, params};

use crate::gate::{Approval, Approver, Refusal, Rejection, Ticket, Trail};
use crate::store::audit::{AuditError, AuditStore, Durability, Event, EventKind, TxOp};
use crate::{clock, errors};

/// An unconsumed one-time token as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRow {
    pub id: String,
    /// The runtime whose prompt it was minted for.
    pub runtime: String,
    pub expires_ms: i64,
}

/// The latest unconsumed operator approval of a request digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    Usable(String),
    Expired(String),
}

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

/// The unconsumed token row whose hash is `token_sha256`, minted for
/// `digest` in `session`.
pub fn find_token(
    audit: &AuditStore,
    token_sha256: &str,
    digest: &str,
    session: &str,
) -> Result<Option<TokenRow>, AuditError> {
    audit.read(|conn| {
        conn.query_row(
            "SELECT id, runtime, expires_ms FROM prompt_tokens
             WHERE token_sha256 = ?1 AND digest = ?2 AND session = ?3
               AND consumed_ms IS NULL AND withdrawn = 0",
            [token_sha256, digest, session],
            |r| {
                Ok(TokenRow {
                    id: r.get(0)?,
                    runtime: r.get(1)?,
                    expires_ms: r.get(2)?,
                })
            },
        )
        .optional()
    })
}

/// The latest unconsumed operator approval of `digest`, usable or expired at `now`.
pub fn find_approval(
    audit: &AuditStore,
    digest: &str,
    now: i64,
) -> Result<Option<Found>, AuditError> {
    audit.read(|conn| {
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

/// How many times `digest` ran in `session`.
pub fn executions(audit: &AuditStore, session: &str, digest: &str) -> Result<u32, AuditError> {
    audit.read(|conn| {
        conn.query_row(
            "SELECT executions FROM retry_budget WHERE session = ?1 AND digest = ?2",
            [session, digest],
            |r| r.get(0),
        )
        .optional()
        .map(|n| n.unwrap_or(0))
    })
}

/// A one-time token as stored: its hash, never the token.
pub struct NewToken {
    pub id: String,
    pub token_sha256: String,
    pub request_id: String,
    pub digest: String,
    pub session: String,
    pub runtime: String,
    pub created_ms: i64,
    pub expires_ms: i64,
}

/// The SQL that stores a minted token, inside the transaction of its record.
pub fn insert_token_op(token: NewToken) -> TxOp {
    Box::new(move |tx| {
        tx.execute(
            "INSERT INTO prompt_tokens
               (id, token_sha256, request_id, digest, session, runtime, created_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                token.id,
                token.token_sha256,
                token.request_id,
                token.digest,
                token.session,
                token.runtime,
                token.created_ms,
                token.expires_ms
            ],
        )
        .map(drop)
        .map_err(|e| errors::one_line(&e))
    })
}

/// The SQL that runs inside the transaction of an ALLOW's intent record:
/// consumes the approval and counts the execution, or fails (and the intent
/// with it) when either is no longer possible, leaving which in `rejected`.
pub fn consume_op(
    ticket: &Ticket,
    request_id: &str,
    rejected: Arc<OnceLock<Rejection>>,
) -> Option<TxOp> {
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
        let now = clock::now_ms();
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
                let _ = rejected.set(Rejection::ApprovalGone);
                return Err(Rejection::ApprovalGone.to_string());
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
                let _ = rejected.set(Rejection::BudgetSpent);
                return Err(Rejection::BudgetSpent.to_string());
            }
        }
        Ok(())
    }))
}

/// The SQL that stores a policy HOLD as pending, inside the transaction of
/// its HOLD record.
pub fn pending_op(trail: &Trail, ticket: &Ticket, refusal: &Refusal, cwd: &Path) -> Option<TxOp> {
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
            params![row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, clock::now_ms()],
        )
        .map(drop)
        .map_err(|e| errors::one_line(&e))
    }))
}

/// Records each approval that expired unused, once.
pub fn record_expired(audit: &AuditStore) {
    let now = clock::now_ms();
    let expired: Result<Vec<(String, String)>, _> = audit.read(|conn| {
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
        match audit.append_with(event, Durability::Normal, op) {
            Ok(_) | Err(AuditError::Rejected(_)) => {}
            Err(e) => tracing::error!("audit of an approval expiry failed: {e}"),
        }
    }
}

/// Held requests nobody has approved or denied yet, oldest first, aged at `now`.
pub fn pending_items(audit: &AuditStore, now: i64) -> Result<Vec<PendingItem>, AuditError> {
    audit.read(|conn| {
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
    })
}

/// A pending request as the operator commands need it.
pub struct PendingRow {
    pub digest: String,
    pub command: Vec<String>,
    pub role: String,
    pub tier: String,
    pub resolution: Option<String>,
}

/// The pending row of `request_id`, resolved or not.
pub fn pending_row(audit: &AuditStore, request_id: &str) -> Result<Option<PendingRow>, AuditError> {
    audit.read(|conn| {
        conn.query_row(
            "SELECT digest, command, role, tier, resolution FROM pending WHERE request_id = ?1",
            [request_id],
            |r| {
                let command: String = r.get(1)?;
                Ok(PendingRow {
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

/// An operator's approval of a pending request, as stored.
pub struct NewApproval {
    pub id: String,
    pub request_id: String,
    pub digest: String,
    pub approved_by: u32,
    pub created_ms: i64,
    pub expires_ms: i64,
}

/// The SQL of `praxis approve`, inside the transaction of its record:
/// resolves the request (and other holds of the same digest) and stores the
/// approval; fails when someone resolved it meanwhile.
pub fn approve_op(approval: NewApproval) -> TxOp {
    Box::new(move |tx| {
        let sql = |e: rusqlite::Error| errors::one_line(&e);
        let request = &approval.request_id;
        let claimed = tx
            .execute(
                "UPDATE pending SET resolution = 'approved'
                 WHERE request_id = ?1 AND resolution IS NULL",
                [request],
            )
            .map_err(sql)?;
        if claimed != 1 {
            return Err(format!("{request} was resolved meanwhile"));
        }
        // Other holds of the same request are answered by the same approval.
        tx.execute(
            "UPDATE pending SET resolution = 'approved' WHERE digest = ?1 AND resolution IS NULL",
            [&approval.digest],
        )
        .map_err(sql)?;
        tx.execute(
            "INSERT INTO approvals (id, request_id, digest, approved_by, created_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                approval.id,
                approval.request_id,
                approval.digest,
                approval.approved_by,
                approval.created_ms,
                approval.expires_ms
            ],
        )
        .map_err(sql)?;
        Ok(())
    })
}

/// The SQL of `praxis deny`, inside the transaction of its record: denies
/// the request and its digest's other holds, and withdraws their unused
/// approvals and tokens.
pub fn deny_op(request_id: String, digest: String) -> TxOp {
    Box::new(move |tx| {
        let sql = |e: rusqlite::Error| errors::one_line(&e);
        tx.execute(
            "UPDATE pending SET resolution = 'denied'
             WHERE (request_id = ?1 OR digest = ?2) AND (resolution IS NULL OR resolution = 'approved')",
            [&request_id, &digest],
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
    })
}

//! One-time approval tokens for a runtime that asks its own user: minted
//! when a held command is judged for it, stored only as their SHA-256.

use std::fs::File;
use std::io::Read;

use sha2::{Digest, Sha256};

use crate::conn::Peer;
use crate::gate::{Approver, Ticket, Trail};
use crate::store::RequestEvent;
use crate::store::approvals::{self as store, NewToken};
use crate::store::audit::{AuditStore, Durability, Event, EventKind};
use crate::{clock, errors, ids};

/// Audit kind of a minted one-time token.
pub const MINTED: &str = "approval_minted";
/// Lifetime of a one-time token: long enough for a user to read the prompt.
pub const TTL_SECS: i64 = 10 * 60;
/// Prefix of the one-time tokens.
pub const PREFIX: &str = "pxa-";

/// SHA-256 of a token, as stored: the token itself is never written.
pub fn sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `peer` may be a command praxis runs: as its process was when
/// its request arrived (a peer never examined may be).
pub fn from_inside(peer: &Peer) -> bool {
    peer.inside.unwrap_or(true)
}

/// Mints a one-time token for a policy HOLD judged for a runtime that asks
/// its user, and records `approval_minted` in the transaction that stores it
/// (the hash only). Returns the token, for the runtime's prompt alone.
pub async fn mint(audit: &AuditStore, trail: &Trail, ticket: &Ticket) -> Result<String, String> {
    if from_inside(&trail.peer) {
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
    let token = format!("{PREFIX}{}", hex::encode(random));
    let id = ids::approval_id();
    let runtime = trail
        .runtime
        .clone()
        .unwrap_or_else(|| String::from("runtime"));
    let now = clock::now_ms();
    let mut detail = serde_json::Map::new();
    detail.insert("digest".into(), digest.clone().into());
    detail.insert("token_session".into(), ticket.session.clone().into());
    detail.insert("ttl_secs".into(), TTL_SECS.into());
    detail.insert(
        "approved_by".into(),
        Approver::Prompt(runtime.clone()).label().into(),
    );
    let event = Event {
        approval_id: Some(id.clone()),
        reason: Some(format!(
            "one-time approval token for {runtime}'s permission prompt: this request, in session {}, once, within {TTL_SECS}s",
            ticket.session
        )),
        detail: Some(detail),
        ..trail.event(EventKind::Other(String::from(MINTED)))
    };
    let op = store::insert_token_op(NewToken {
        id,
        token_sha256: sha256(&token),
        request_id: trail.request_id.clone(),
        digest,
        session: ticket.session.clone(),
        runtime,
        created_ms: now,
        expires_ms: now.saturating_add(TTL_SECS * 1000),
    });
    audit
        .append_with_async(event, Durability::Full, op)
        .await
        .map_err(|e| errors::one_line(&e))
        .map(|_| token)
}

//! Reversibility: a command that deletes, moves over, truncates or
//! overwrites workspace files runs only after what it would lose is saved, so
//! that `praxis undo` can put it back.
//!
//! Judging plans the snapshot (metadata only, so limits are known before the
//! decision); after the intent is committed the snapshot is taken; after the
//! command, what it left is recorded. The stage takes values and returns
//! values; the pipeline decides what a result means for the request.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use praxis_policy::Undo;
use praxis_snapshot::{Plan, Scope, Store};

use crate::config::Config;
use crate::store::audit::{AuditStore, Durability, Event, EventKind};

/// What judging found about undoing a command.
#[must_use]
#[derive(Debug)]
pub enum Reversibility {
    /// It loses nothing an undo needs.
    NotNeeded,
    /// What its snapshot will hold.
    Planned(Plan),
    /// It would lose work that cannot be saved, and why.
    Unavailable(String),
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether `role` gets a whole-workspace checkpoint before an opaque writer:
/// steer-only roles run T1 only where it can be undone, and other roles may
/// ask for it in `praxis.toml`.
pub fn wants_checkpoint(config: &Config, role: &str) -> bool {
    config.roles.is_steer_only(role) || config.snapshots.checkpoint_roles.iter().any(|r| r == role)
}

/// What must be saved for `undo` in `workspace`, if anything.
fn scope(undo: &Undo, workspace: &Path, checkpoint: bool) -> Option<Scope> {
    if let Some(ignored) = undo.workspace {
        return Some(Scope::Workspace { ignored });
    }
    if undo.opaque && checkpoint {
        return Some(Scope::Workspace { ignored: false });
    }
    let mut paths: Vec<_> = undo.paths.iter().map(std::path::PathBuf::from).collect();
    if undo.git_stash {
        paths.push(workspace.join(".git/refs/stash"));
        paths.push(workspace.join(".git/logs/refs/stash"));
    }
    match Scope::of_paths(workspace, &paths) {
        Scope::Paths(p) if p.is_empty() => None,
        scope => Some(scope),
    }
}

/// Plans the snapshot a command needs before it runs.
pub fn plan(
    store: &Result<Store, String>,
    undo: &Undo,
    workspace: &Path,
    checkpoint: bool,
) -> Reversibility {
    if undo.opaque && !checkpoint && undo.paths.is_empty() {
        return Reversibility::NotNeeded;
    }
    let Some(scope) = scope(undo, workspace, checkpoint) else {
        return Reversibility::NotNeeded;
    };
    let store = match store {
        Ok(store) => store,
        Err(why) => return Reversibility::Unavailable(why.clone()),
    };
    match store.plan(workspace, scope, now()) {
        Ok(plan) => Reversibility::Planned(plan),
        Err(e) => Reversibility::Unavailable(e.to_string()),
    }
}

/// The phrase a decision carries for a planned snapshot.
pub fn describe(plan: &Plan) -> String {
    let what = match plan.scope {
        Scope::Workspace { .. } => "workspace checkpoint",
        Scope::Paths(_) => "snapshot",
    };
    format!(
        "reversible: {what} of {} files, {} bytes",
        plan.files, plan.bytes
    )
}

fn event(kind: EventKind, request_id: &str, reason: String, detail: serde_json::Value) -> Event {
    Event {
        request_id: Some(request_id.to_owned()),
        reason: Some(reason),
        detail: detail.as_object().cloned(),
        ..Event::new(kind)
    }
}

/// Takes the planned snapshot, after the intent is committed and before the
/// command starts. `Err` is why the command must not start.
pub async fn capture(
    snapshots: &Result<Store, String>,
    audit: &AuditStore,
    request_id: &str,
    workspace: &Path,
    plan: &Plan,
) -> Result<(), String> {
    let store = snapshots.as_ref().map_err(Clone::clone)?;
    let taken = tokio::task::block_in_place(|| store.capture(request_id, workspace, plan, now()))
        .map_err(|e| format!("snapshot failed, so the command did not run: {e}"))?;
    let detail = serde_json::json!({
        "files": taken.files,
        "bytes": taken.bytes,
        "entries": taken.before.len(),
        "scope": taken.scope,
    });
    let reason = format!(
        "saved {} files, {} bytes for `praxis undo {request_id}`",
        taken.files, taken.bytes
    );
    let record = event(EventKind::Snapshot, request_id, reason, detail);
    if let Err(e) = crate::store::record(audit, record, Durability::Normal).await {
        tracing::error!("audit of a snapshot failed: {e}");
    }
    expire(audit, store).await;
    Ok(())
}

/// Drops what retention no longer keeps, each drop audited.
async fn expire(audit: &AuditStore, store: &Store) {
    let expired = match tokio::task::block_in_place(|| store.expire(now())) {
        Ok(expired) => expired,
        Err(e) => {
            tracing::error!("snapshot retention: {e}");
            return;
        }
    };
    for gone in expired {
        let detail = serde_json::json!({ "bytes": gone.bytes, "because": gone.reason });
        let reason = format!(
            "snapshot dropped ({}), {} bytes freed",
            gone.reason, gone.bytes
        );
        let record = event(EventKind::SnapshotExpired, &gone.request_id, reason, detail);
        if let Err(e) = crate::store::record(audit, record, Durability::Normal).await {
            tracing::error!("audit of a snapshot expiry failed: {e}");
        }
    }
}

/// Records what the command left, or drops the snapshot of one that never ran.
pub async fn settle(snapshots: &Result<Store, String>, request_id: &str, ran: bool) {
    let Ok(store) = snapshots else {
        return;
    };
    let done = tokio::task::block_in_place(|| {
        if ran {
            store.seal(request_id)
        } else {
            store.discard(request_id)
        }
    });
    if let Err(e) = done {
        tracing::error!("snapshot of {request_id}: {e}");
    }
}

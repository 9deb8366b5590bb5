//! The fleet link: this host's connection to the fleet store, when
//! `[fleet]` names one. It is a front: orders come in by it (the fleet's
//! kill switch, operators' decisions on holds, policy revisions, shared
//! memories an operator reviewed) and go through the same stages and
//! stores as a local operator's; it reports the host (heartbeat, policy
//! revision, kill state, audit position, open holds), proposes its shared
//! memories for review, and copies its audit chain to the store.
//!
//! Nothing on the request path waits for it: with the store down, ALLOW
//! and STOP go on, and holds wait for a local or a later fleet decision.
//! Orders arrive by notification; a poll every `[fleet] poll_secs` catches
//! what a lost notification missed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use praxis_fleet::host::{AuditRow, Decision, Hold, HostError, HostLink, Report};
use praxis_fleet::memory::{SharedMemory, StoredMemory};
use praxis_memory::contract::Visibility;
use praxis_memory::memory::Memory;
use praxis_proto::OperatorReply;
use tokio::time::timeout;

use crate::config::Fleet;
use crate::front::operator::approvals::{self, Approver};
use crate::stage::kill_switch::{self, Engaged};
use crate::state::Daemon;
use crate::store::approvals as approval_store;
use crate::store::audit::Maker;
use crate::store::memory as memory_store;
use crate::{clock, errors, reload};

/// How a kill the fleet engaged begins its reason, so the link releases
/// only kills of its own making.
const FLEET_KILL: &str = "fleet: ";

/// The longest one exchange with the store may take: a store that stopped
/// answering (a half-open connection) is dropped and dialled again.
const EXCHANGE: Duration = Duration::from_secs(5);

/// How often the open holds are compared with what the store was told.
const HOLD_SYNC: Duration = Duration::from_secs(1);

/// Most audit records copied in one statement.
const AUDIT_BATCH: usize = 500;

/// How long to wait between attempts to reach the store.
const REDIAL: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum FleetLinkError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("{0}")]
    Url(String),
    #[error("the store did not answer within {}s", EXCHANGE.as_secs())]
    Silent,
    #[error("the connection to the store closed")]
    Closed,
    #[error("{0}")]
    Local(String),
}

async fn bounded<T>(work: impl Future<Output = Result<T, HostError>>) -> Result<T, FleetLinkError> {
    match timeout(EXCHANGE, work).await {
        Ok(done) => Ok(done?),
        Err(_) => Err(FleetLinkError::Silent),
    }
}

async fn blocking<T: Send + 'static>(
    daemon: &Arc<Daemon>,
    work: impl FnOnce(&Daemon) -> T + Send + 'static,
) -> Result<T, FleetLinkError> {
    let daemon = Arc::clone(daemon);
    tokio::task::spawn_blocking(move || work(&daemon))
        .await
        .map_err(|e| FleetLinkError::Local(e.to_string()))
}

/// praxisd itself, acting on the fleet's order, as the maker of a change.
fn itself() -> Maker {
    Maker {
        uid: nix::unistd::geteuid().as_raw(),
        pid: Some(std::process::id()),
    }
}

/// Engages the local kill switch for `reason`, on the order of
/// `operator` when one gave it, unless it is engaged.
fn engage(daemon: &Daemon, reason: String, operator: Option<&str>) {
    if daemon.kill_switch.current().is_some() {
        return;
    }
    match daemon.kill_switch.engage(&reason, itself(), operator) {
        Ok(()) => kill_switch::on_engaged(&daemon.kill_switch, &daemon.audit, &Engaged { reason }),
        Err(e) => tracing::error!("fleet kill: {}", errors::one_line(&e)),
    }
}

/// Releases the local kill switch if the fleet engaged it.
fn release_own(daemon: &Daemon) {
    let ours = daemon
        .kill_switch
        .current()
        .is_some_and(|e| e.reason.starts_with(FLEET_KILL));
    if !ours {
        return;
    }
    match daemon
        .kill_switch
        .release(itself(), Some(String::from("released by the fleet")))
    {
        Ok(()) => kill_switch::on_released(&daemon.kill_switch, &daemon.audit),
        Err(e) => tracing::error!("fleet release: {}", errors::one_line(&e)),
    }
}

/// Loads the latest policy revision pushed unless it runs already or was
/// refused; returns whether what the host runs or refused changed.
async fn apply_policy(
    daemon: &Arc<Daemon>,
    link: &HostLink,
    policy: &mut FleetPolicy,
) -> Result<bool, FleetLinkError> {
    let Some(number) = bounded(link.latest_policy()).await? else {
        return Ok(false);
    };
    let tried = policy.running == Some(number)
        || policy.refused.as_ref().is_some_and(|(n, _)| *n == number);
    if tried {
        return Ok(false);
    }
    let Some(revision) = bounded(link.policy(number)).await? else {
        return Ok(false);
    };
    match blocking(daemon, move |d| reload::adopt(d, &revision, itself())).await? {
        Ok(hash) => {
            tracing::info!("loaded the fleet's policy revision {number} ({hash})");
            policy.running = Some(number);
            policy.refused = None;
        }
        Err(why) => {
            tracing::warn!("refused the fleet's policy revision {number}, last good kept: {why}");
            policy.refused = Some((number, why));
        }
    }
    Ok(true)
}

/// The name a memory's visibility goes by in the store, when the fleet
/// shares it.
fn shared_visibility(memory: &Memory) -> Option<&'static str> {
    match memory.item.scope.visibility {
        Visibility::Workspace => Some("workspace"),
        Visibility::Org => Some("org"),
        Visibility::Personal | Visibility::Project => None,
    }
}

/// The shared memories here that wait for review and were not proposed
/// yet, as the store takes them.
fn to_propose(daemon: &Daemon, proposed: &BTreeSet<String>) -> Result<Vec<SharedMemory>, String> {
    let store = daemon.memory.as_ref().map_err(Clone::clone)?;
    let all = store.all().map_err(|e| errors::one_line(&e))?;
    Ok(all
        .into_iter()
        .filter(|m| m.review.is_open() && !proposed.contains(m.id()))
        .filter_map(|m| {
            let visibility = shared_visibility(&m)?;
            Some(SharedMemory {
                id: m.id().to_owned(),
                visibility: visibility.to_owned(),
                workspace: m.item.scope.workspace_id.clone(),
                review: m.review.as_str().to_owned(),
                body: serde_json::to_value(&m).ok()?,
            })
        })
        .collect())
}

/// Takes a memory the fleet reviewed into the local store, which is its
/// offline cache; audited like a local review. Returns why not, if not.
fn take_reviewed(daemon: &Daemon, row: &StoredMemory) -> Result<(), String> {
    let store = daemon.memory.as_ref().map_err(Clone::clone)?;
    let memory: Memory =
        serde_json::from_value(row.memory.body.clone()).map_err(|e| e.to_string())?;
    if memory.id() != row.memory.id || shared_visibility(&memory).is_none() {
        return Err(String::from("not a shared memory of that id"));
    }
    memory.check().map_err(|e| e.to_string())?;
    let local = store.get(memory.id()).map_err(|e| errors::one_line(&e))?;
    if local.as_ref() == Some(&memory) {
        return Ok(());
    }
    let mut detail = serde_json::Map::new();
    detail.insert("by".into(), row.changed_by.clone().into());
    detail.insert(
        "from".into(),
        local.map(|m| m.review.as_str()).unwrap_or("absent").into(),
    );
    detail.insert("to".into(), memory.review.as_str().into());
    detail.insert("fleet_change".into(), row.changed.into());
    memory_store::record(
        &daemon.audit,
        "fleet-review",
        memory.id(),
        memory_store::Maker {
            role: "fleet",
            uid: None,
            pid: None,
        },
        format!(
            "fleet operator {} made {} {}",
            row.changed_by,
            memory.id(),
            memory.review.as_str()
        ),
        detail,
    )?;
    store.put(&memory).map_err(|e| errors::one_line(&e))
}

/// Proposes this host's shared memories waiting for review, and takes in
/// every shared memory the fleet reviewed since the link last looked.
async fn exchange_memories(
    daemon: &Arc<Daemon>,
    link: &HostLink,
    shared: &mut SharedMemories,
) -> Result<(), FleetLinkError> {
    let proposed = shared.proposed.clone();
    let new = blocking(daemon, move |d| to_propose(d, &proposed))
        .await?
        .map_err(FleetLinkError::Local)?;
    if !new.is_empty() {
        bounded(link.propose_memories(&new)).await?;
        shared.proposed.extend(new.into_iter().map(|m| m.id));
    }
    let changed: Vec<String> = bounded(link.memory_changes())
        .await?
        .into_iter()
        .filter(|(id, changed)| shared.seen.get(id) != Some(changed))
        .map(|(id, _)| id)
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    for row in bounded(link.memories(&changed)).await? {
        shared.seen.insert(row.memory.id.clone(), row.changed);
        // The queue lives in the store: an open memory decides nothing.
        if ["pending", "escalated"].contains(&row.memory.review.as_str()) {
            continue;
        }
        let id = row.memory.id.clone();
        if let Err(why) = blocking(daemon, move |d| take_reviewed(d, &row)).await? {
            tracing::warn!("fleet memory {id} not taken: {why}");
        }
    }
    Ok(())
}

/// Applies the kill order in force and every decision not yet applied.
async fn apply_orders(daemon: &Arc<Daemon>, link: &HostLink) -> Result<(), FleetLinkError> {
    let order = bounded(link.kill_order()).await?;
    blocking(daemon, move |d| match order {
        Some(order) => engage(
            d,
            format!("{FLEET_KILL}killed by {}: {}", order.operator, order.reason),
            Some(&order.operator),
        ),
        None => release_own(d),
    })
    .await?;
    for decision in bounded(link.decisions()).await? {
        let request_id = decision.request_id.clone();
        let outcome = blocking(daemon, move |d| decide(d, &decision)).await?;
        bounded(link.applied(&request_id, &outcome)).await?;
    }
    Ok(())
}

/// One operator's decision, applied as a local operator's would be: an
/// approval becomes the local one-shot approval of the same digest.
fn decide(daemon: &Daemon, decision: &Decision) -> String {
    let held = approval_store::pending_row(&daemon.audit, &decision.request_id);
    match held {
        Ok(Some(row)) if row.digest != decision.digest => {
            return String::from("refused: the hold's digest differs from the one decided");
        }
        Err(e) => return format!("refused: {}", errors::one_line(&e)),
        _ => {}
    }
    let by = Approver::fleet(&decision.operator);
    let note = decision.note.as_deref();
    let reply = if decision.approve {
        approvals::approve(daemon, &by, &decision.request_id, decision.ttl_secs, note)
    } else {
        approvals::deny(daemon, &by, &decision.request_id, note)
    };
    match reply {
        OperatorReply::Done { message } => message,
        OperatorReply::Refused { reason } => format!("refused: {reason}"),
        other => format!("{other:?}"),
    }
}

/// The holds waiting here, as the store keeps them.
/// `known`: the grants of the holds already told, by request id, which
/// are not read from the audit log again.
fn open_holds(daemon: &Daemon, known: &BTreeMap<String, Vec<String>>) -> Result<Vec<Hold>, String> {
    let items = approval_store::pending_items(&daemon.audit, clock::now_ms())
        .map_err(|e| errors::one_line(&e))?;
    Ok(items
        .into_iter()
        .map(|item| {
            let grants = known.get(&item.request_id).cloned().unwrap_or_else(|| {
                // The credentials the request asked for, as its records name them.
                let named: BTreeSet<String> = daemon
                    .audit
                    .by_request(&item.request_id)
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|e| e.event.credentials.unwrap_or_default())
                    .collect();
                named.into_iter().collect()
            });
            Hold {
                command: item.command.join(" ; "),
                request_id: item.request_id,
                reason: item.reason,
                grants,
                digest: item.digest,
            }
        })
        .collect())
}

/// The records after `seq`, a batch at most, as the store copies them.
fn audit_after(daemon: &Daemon, seq: i64) -> Result<Vec<AuditRow>, String> {
    let events = daemon
        .audit
        .after(seq, AUDIT_BATCH)
        .map_err(|e| errors::one_line(&e))?;
    Ok(events
        .into_iter()
        .map(|e| AuditRow {
            seq: e.seq,
            ts: e.ts.clone(),
            kind: e.event.kind.as_str().to_owned(),
            record: serde_json::to_value(&e).unwrap_or_default(),
            prev_hash: e.prev_hash,
            hash: e.hash,
        })
        .collect())
}

/// Copies what the store lacks of the audit chain after `copied`, a batch
/// at a time; returns the new position.
async fn copy_audit(
    daemon: &Arc<Daemon>,
    link: &HostLink,
    mut copied: i64,
) -> Result<i64, FleetLinkError> {
    loop {
        let rows = blocking(daemon, move |d| audit_after(d, copied))
            .await?
            .map_err(FleetLinkError::Local)?;
        let Some(last) = rows.last().map(|r| r.seq) else {
            return Ok(copied);
        };
        bounded(link.copy_audit(&rows)).await?;
        copied = last;
        if rows.len() < AUDIT_BATCH {
            return Ok(copied);
        }
    }
}

fn report(daemon: &Daemon, policy: FleetPolicy) -> Report {
    let kill = daemon.kill_switch.current();
    let (audit_seq, audit_head) = daemon.audit.head();
    Report {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        policy_revision: daemon
            .policy()
            .map(|p| p.revision().to_owned())
            .unwrap_or_else(|why| format!("none: {why}")),
        killed: kill.is_some(),
        kill_reason: kill.map(|k| k.reason),
        audit_seq,
        audit_head,
        fleet_policy: policy.running,
        policy_refused: policy.refused,
    }
}

/// Whether a notice (`kill *`, `kill NAME`, `decision NAME`) is for the
/// host `name`: every host hears every notice, and acts on its own.
fn names_us(notice: &str, name: &str) -> bool {
    match notice.split_once(' ') {
        Some((_, scope)) => scope == "*" || scope == name,
        // An unknown form: look, rather than miss an order.
        None => true,
    }
}

/// The fleet's policy revisions as this host took them.
#[derive(Clone, Debug, Default)]
struct FleetPolicy {
    /// The revision in force (none: the local policy).
    running: Option<i64>,
    /// The last revision refused, and why.
    refused: Option<(i64, String)>,
}

/// The shared memories as this host exchanged them.
#[derive(Default)]
struct SharedMemories {
    /// Proposed to the store since praxisd started.
    proposed: BTreeSet<String>,
    /// Each shared memory's change number, as last taken.
    seen: BTreeMap<String, i64>,
}

/// What the link remembers across connections.
struct LinkState {
    policy: FleetPolicy,
    memories: SharedMemories,
    /// The last time the store answered.
    last_contact: Instant,
    /// No heartbeat has gone out since praxisd started.
    first_beat: bool,
}

/// One connection's life: register, then apply orders as they come and
/// report on every tick, until the connection fails.
async fn connected(
    daemon: &Arc<Daemon>,
    fleet: &Fleet,
    memory: &mut LinkState,
) -> Result<(), FleetLinkError> {
    let url = fleet.url.resolve().map_err(FleetLinkError::Url)?;
    let (mut link, mut notices) = bounded(HostLink::connect(&url, &fleet.host)).await?;
    tracing::info!("joined the fleet as {}", link.name);
    memory.last_contact = Instant::now();
    apply_orders(daemon, &link).await?;
    let mut report_now = apply_policy(daemon, &link, &mut memory.policy).await?;
    exchange_memories(daemon, &link, &mut memory.memories).await?;
    // Resumed from what the store acknowledged, whatever was sent before.
    let mut copied = bounded(link.audit_copied()).await?;
    let mut told: Option<Vec<Hold>> = None;
    let mut tick = tokio::time::interval(HOLD_SYNC);
    let mut last_beat: Option<Instant> = None;
    loop {
        tokio::select! {
            notice = notices.recv() => {
                let Some(notice) = notice else {
                    return Err(FleetLinkError::Closed);
                };
                if names_us(&notice, &link.name) {
                    apply_orders(daemon, &link).await?;
                    report_now |= apply_policy(daemon, &link, &mut memory.policy).await?;
                    exchange_memories(daemon, &link, &mut memory.memories).await?;
                }
            }
            _ = tick.tick() => {
                let known: BTreeMap<String, Vec<String>> = told
                    .iter()
                    .flatten()
                    .map(|h| (h.request_id.clone(), h.grants.clone()))
                    .collect();
                let holds = blocking(daemon, move |d| open_holds(d, &known))
                    .await?
                    .map_err(FleetLinkError::Local)?;
                if told.as_ref() != Some(&holds) {
                    bounded(link.sync_holds(&holds)).await?;
                    told = Some(holds);
                }
                copied = copy_audit(daemon, &link, copied).await?;
                if report_now || last_beat.is_none_or(|at| at.elapsed() >= fleet.poll) {
                    let policy = memory.policy.clone();
                    let report = blocking(daemon, move |d| report(d, policy)).await?;
                    bounded(link.heartbeat(&report, memory.first_beat)).await?;
                    memory.first_beat = false;
                    apply_orders(daemon, &link).await?;
                    report_now = apply_policy(daemon, &link, &mut memory.policy).await?;
                    exchange_memories(daemon, &link, &mut memory.memories).await?;
                    last_beat = Some(Instant::now());
                }
            }
        }
        memory.last_contact = Instant::now();
    }
}

/// The link, for praxisd's life: connects, and reconnects after any
/// failure; trips the local kill switch after the store was unreachable
/// for `[fleet] kill_when_unreachable_after`, when that is set.
pub async fn run(daemon: Arc<Daemon>, fleet: Fleet) {
    // A revision loaded before this start runs still (`reload::load`).
    let running = blocking(&daemon, |d| reload::fleet_revision(&d.config))
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
        .map(|r| r.number);
    let mut memory = LinkState {
        memories: SharedMemories::default(),
        policy: FleetPolicy {
            running,
            refused: None,
        },
        last_contact: Instant::now(),
        first_beat: true,
    };
    let mut said = String::new();
    loop {
        if let Err(e) = connected(&daemon, &fleet, &mut memory).await {
            let why = errors::one_line(&e);
            // Once per kind of failure, not once a second.
            if why != said {
                tracing::warn!("fleet store: {why}; local work goes on");
                said = why;
            }
        }
        if let Some(after) = fleet.kill_when_unreachable_after {
            let silent = memory.last_contact.elapsed();
            if silent >= after {
                let reason = format!(
                    "{FLEET_KILL}the fleet store was unreachable for {}s",
                    silent.as_secs()
                );
                let _ = blocking(&daemon, move |d| engage(d, reason, None)).await;
            }
        }
        tokio::time::sleep(REDIAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::names_us;

    #[test]
    fn a_host_acts_on_its_own_notices_and_the_fleets() {
        assert!(names_us("kill *", "ci-1"));
        assert!(names_us("kill ci-1", "ci-1"));
        assert!(names_us("decision ci-1", "ci-1"));
        assert!(!names_us("decision ci-2", "ci-1"));
        assert!(!names_us("kill ci-10", "ci-1"));
        assert!(names_us("unknown", "ci-1"));
    }
}

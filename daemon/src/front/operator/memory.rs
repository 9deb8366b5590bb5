//! `praxis approve --remember`, `praxis review`, `praxis inspect` and
//! `praxis memory stats`: the operator's side of judgment memory. The rules
//! (what a lesson covers, which review actions are legal, what the
//! inspector answers) are the `praxis_memory` crate's; these handlers read
//! and write the store, and put every change in the audit chain first.

use praxis_memory::contract::{CreatedBy, ProvenanceStatus, UsePolicy, Visibility};
use praxis_memory::event::Event as MemoryEvent;
use praxis_memory::inspect::inspect as inspection;
use praxis_memory::lesson::{Action, generalise};
use praxis_memory::memory::{Memory, Origin, OriginKind, Proposal, judge_event_source, propose};
use praxis_memory::metrics::metrics;
use praxis_memory::replay::replay;
use praxis_memory::review::{self, LESSON_FRESH_FOR, ReviewAction, Reviewer, ReviewerKind};
use praxis_proto::OperatorReply;
use serde_json::{Value, json};

use crate::conn::Peer;
use crate::errors;
use crate::state::Daemon;
use crate::store::memory::db::MemoryStore;
use crate::store::memory::{self, now};

/// How many recent held requests a queued lesson is replayed over.
const REPLAY_WINDOW: u32 = 200;

/// Confidence of a lesson generalised from one operator approval.
const APPROVAL_CONFIDENCE: f64 = 0.8;

pub fn store(daemon: &Daemon) -> Result<&MemoryStore, String> {
    daemon
        .memory
        .as_ref()
        .map_err(|why| format!("judgment memory is unavailable: {why}"))
}

fn refused(reason: String) -> OperatorReply {
    OperatorReply::Refused { reason }
}

/// The reviewer an operator is: root is an admin (who alone confirms an
/// escalated item), any other trusted operator a human reviewer.
fn reviewer(peer: &Peer) -> Reviewer {
    let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(peer.uid))
        .ok()
        .flatten()
        .map_or_else(|| format!("uid {}", peer.uid), |u| u.name);
    let kind = if peer.uid == 0 {
        ReviewerKind::Admin
    } else {
        ReviewerKind::Human
    };
    Reviewer { name, kind }
}

/// An operator, as the audit records of its memory operations name it.
fn operator(peer: &Peer) -> memory::Maker {
    memory::Maker {
        role: "operator",
        uid: Some(peer.uid),
        pid: peer.pid,
    }
}

/// The one-line form of a held action, for the queue's examples.
fn describe(action: &Action) -> String {
    let commands: Vec<String> = action
        .commands
        .iter()
        .map(|c| {
            let mut words = vec![c.program.clone()];
            words.extend(c.subcommand.iter().cloned());
            words.extend(c.flags.iter().cloned());
            words.extend(c.operands.iter().cloned());
            words.join(" ")
        })
        .collect();
    format!("{} (role {})", commands.join("; "), action.role)
}

/// After `praxis approve ID`: the memory store records that a human
/// overrode the pipeline's HOLD (the false-block proxy of the metrics).
/// Only a request memory kept is recorded; the approval stands either way.
pub fn approved(daemon: &Daemon, peer: &Peer, request_id: &str) {
    let Ok(store) = store(daemon) else { return };
    let kept = store.held(request_id).map(|held| held.is_some());
    let recorded = kept.and_then(|kept| {
        if kept {
            store.add_event(&MemoryEvent::approved(
                request_id,
                &reviewer(peer).name,
                now(),
            ))?;
        }
        Ok(())
    });
    if let Err(e) = recorded {
        tracing::warn!("override of {request_id} not kept in memory: {e}");
    }
}

/// After `praxis approve ID --remember` approved the request: proposes the
/// lesson generalised from what was held, into the review queue. Returns
/// the sentence the operator sees.
pub fn remember(daemon: &Daemon, peer: &Peer, request_id: &str) -> Result<String, String> {
    let store = store(daemon)?;
    let action = store
        .held(request_id)
        .map_err(|e| errors::one_line(&e))?
        .ok_or_else(|| format!("nothing is known of what {request_id} held; no lesson proposed"))?;
    if !action.relaxable {
        return Err(String::from(
            "what held it may not be relaxed by memory (a rule marked not relaxable, root, or an unknown program); no lesson proposed",
        ));
    }
    let lesson = generalise(&action).ok_or_else(|| {
        String::from("its held commands have no single shape to generalise; no lesson proposed")
    })?;
    let at = now();
    let by = reviewer(peer);
    let memory_id = format!("lesson-{request_id}");
    let mut keywords = vec![lesson.program.clone()];
    keywords.extend(lesson.subcommand.iter().cloned());
    let memory = propose(
        Proposal {
            memory_id: memory_id.clone(),
            summary: lesson.description.clone(),
            content: format!(
                "{} approved {}; proposed to cover: {}",
                by.name,
                describe(&action),
                lesson.description
            ),
            source: judge_event_source(
                Some(format!("praxis:request/{request_id}")),
                Some(String::from("operator approval")),
                at,
            ),
            status: ProvenanceStatus::Generated,
            confidence: APPROVAL_CONFIDENCE,
            created_by: CreatedBy::System,
            model: None,
            runtime: None,
            workspace_id: action.workspace.clone(),
            project_id: action.project.clone(),
            visibility: Visibility::Workspace,
            origin: Origin {
                kind: OriginKind::OperatorApproval,
                decision_id: None,
                action_id: Some(request_id.to_owned()),
                reason: format!("{} approved {request_id} and asked to remember it", by.name),
            },
            lesson: Some(lesson),
            keywords,
            sensitive_area: false,
            fresh_for: Some(LESSON_FRESH_FOR),
        },
        at,
    );
    if store
        .get(&memory_id)
        .map_err(|e| errors::one_line(&e))?
        .is_some()
    {
        return Err(format!("{memory_id} was already proposed"));
    }
    let mut detail = serde_json::Map::new();
    detail.insert("request_id".into(), request_id.into());
    detail.insert("by".into(), by.name.clone().into());
    detail.insert("lesson".into(), json!(memory.lesson));
    memory::record(
        &daemon.audit,
        "proposed",
        &memory_id,
        operator(peer),
        format!("lesson proposed for review: {}", memory.item.summary),
        detail,
    )?;
    store.put(&memory).map_err(|e| errors::one_line(&e))?;
    store
        .add_event(&MemoryEvent::proposed(&memory, at))
        .map_err(|e| errors::one_line(&e))?;
    Ok(format!(
        "lesson {memory_id} proposed for review: {} (praxis review)",
        memory.item.summary
    ))
}

/// What confirming an item would make it: instruction-grade for a lesson,
/// evidence otherwise.
fn suggested_policy(memory: &Memory) -> UsePolicy {
    if memory.lesson.is_some() {
        UsePolicy::CanUseAsInstruction
    } else {
        UsePolicy::CanUseAsEvidence
    }
}

/// One queue item: the source event, the proposed memory, its labels, the
/// scope it would affect, and what it would have allowed of recent HOLDs.
fn queue_item(memory: &Memory, past: &[Action]) -> Value {
    let influence = memory.lesson.as_ref().map(|lesson| {
        let replayed = replay(lesson, past);
        let examples: Vec<String> = replayed
            .examples
            .iter()
            .filter_map(|&i| past.get(i).map(describe))
            .collect();
        json!({
            "sentence": replayed.sentence(),
            "held": replayed.held,
            "would_allow": replayed.would_allow,
            "examples": examples,
        })
    });
    json!({
        "item_id": memory.id(),
        "priority": memory.priority,
        "review_status": memory.review,
        "source_event": memory.origin,
        "proposed_memory": memory.item,
        "lesson": memory.lesson,
        "provenance": memory.provenance(),
        "confidence": memory.item.provenance.confidence,
        "suggested_use_policy": suggested_policy(memory),
        "affected_scope": memory.item.scope,
        "future_actions": influence,
    })
}

/// `praxis review`: the open items, most urgent first.
pub fn queue(daemon: &Daemon) -> OperatorReply {
    match queue_value(daemon) {
        Ok(value) => OperatorReply::Json { value },
        Err(why) => refused(why),
    }
}

/// The review queue as one JSON document (`{"items": [...]}`).
pub fn queue_value(daemon: &Daemon) -> Result<Value, String> {
    store(daemon).and_then(|store| {
        let memories = store.all().map_err(|e| errors::one_line(&e))?;
        let past = store
            .recent_held(REPLAY_WINDOW)
            .map_err(|e| errors::one_line(&e))?;
        let items: Vec<Value> = review::queue(&memories)
            .into_iter()
            .map(|m| queue_item(m, &past))
            .collect();
        Ok(json!({ "items": items }))
    })
}

/// `praxis review ACTION ITEM_ID`: one human review action.
pub fn act(daemon: &Daemon, peer: &Peer, item_id: &str, action: Value) -> OperatorReply {
    match acted(daemon, peer, item_id, action) {
        Ok(message) => OperatorReply::Done { message },
        Err(why) => refused(why),
    }
}

/// One review action; the sentence saying what it did.
pub fn acted(daemon: &Daemon, peer: &Peer, item_id: &str, action: Value) -> Result<String, String> {
    let store = store(daemon)?;
    let action: ReviewAction =
        serde_json::from_value(action).map_err(|e| format!("review action: {e}"))?;
    let before = store
        .get(item_id)
        .map_err(|e| errors::one_line(&e))?
        .ok_or_else(|| format!("no memory {item_id}"))?;
    let by = reviewer(peer);
    let at = now();
    let mut after = review::apply(&before, &action, &by, at).map_err(|e| e.to_string())?;
    if matches!(
        action,
        ReviewAction::Confirm {
            fresh_for: None,
            ..
        }
    ) && after.lesson.is_some()
    {
        after.item.freshness.stale_after = Some(at.plus(LESSON_FRESH_FOR));
    }
    let target = match &action {
        ReviewAction::Merge { into } => {
            let mut target = store
                .get(into)
                .map_err(|e| errors::one_line(&e))?
                .ok_or_else(|| format!("no memory {into} to merge into"))?;
            target.supersedes.push(item_id.to_owned());
            Some(target)
        }
        _ => None,
    };
    let mut detail = serde_json::Map::new();
    detail.insert("by".into(), json!(by));
    detail.insert("from".into(), json!(before.review));
    detail.insert("to".into(), json!(after.review));
    detail.insert("use_policy".into(), json!(after.use_policy()));
    memory::record(
        &daemon.audit,
        action.name(),
        item_id,
        operator(peer),
        format!("{} {} {item_id}", by.name, action.name()),
        detail,
    )?;
    store.put(&after).map_err(|e| errors::one_line(&e))?;
    if let Some(target) = &target {
        store.put(target).map_err(|e| errors::one_line(&e))?;
    }
    store
        .add_event(&MemoryEvent::reviewed(
            &before,
            &after,
            action.name(),
            &by,
            at,
        ))
        .map_err(|e| errors::one_line(&e))?;
    Ok(format!(
        "{item_id}: {} by {}; now {} ({})",
        action.name(),
        by.name,
        after.review.as_str(),
        after.use_policy().as_str()
    ))
}

/// `praxis inspect MEMORY_ID`: the inspector's ten answers.
pub fn inspect(daemon: &Daemon, memory_id: &str) -> OperatorReply {
    match inspect_value(daemon, memory_id) {
        Ok(value) => OperatorReply::Json { value },
        Err(why) => refused(why),
    }
}

/// The inspector's answers as one JSON document.
pub fn inspect_value(daemon: &Daemon, memory_id: &str) -> Result<Value, String> {
    store(daemon).and_then(|store| {
        let memory = store
            .get(memory_id)
            .map_err(|e| errors::one_line(&e))?
            .ok_or_else(|| format!("no memory {memory_id}"))?;
        let events = store.events().map_err(|e| errors::one_line(&e))?;
        let others = store.all().map_err(|e| errors::one_line(&e))?;
        let answer = inspection(&memory, &events, &others, now());
        serde_json::to_value(answer).map_err(|e| e.to_string())
    })
}

/// `praxis memory stats`: the judge, recall and governance metrics.
pub fn stats(daemon: &Daemon) -> OperatorReply {
    let counted = store(daemon).and_then(|store| {
        let events = store.events().map_err(|e| errors::one_line(&e))?;
        serde_json::to_value(metrics(&events)).map_err(|e| e.to_string())
    });
    match counted {
        Ok(value) => OperatorReply::Json { value },
        Err(why) => refused(why),
    }
}

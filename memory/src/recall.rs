//! Recall for the judge API: scoped, provenance-labelled, use-policy
//! constrained memories for one request, most relevant first.

use praxis_policy::Verdict;
use praxis_policy::rules::Rule;
use serde::Serialize;

use crate::contract::{
    MemoryItem, PolicyHit, RecallRequest, RecallResponse, RecallResponseVersion, RequiredBehavior,
    UsePolicy, Warning,
};
use crate::memory::{Memory, ReviewStatus};
use crate::time::{DAY, Timestamp};

/// What recall left out, and why, for warnings and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub superseded: u32,
    pub disputed: u32,
    pub stale: u32,
    pub unconfirmed: u32,
    pub over_limits: u32,
}

/// A recall's answer plus what it counted on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Recall {
    pub response: RecallResponse,
    pub skipped: Skipped,
    /// Of the memories returned, how many are stale or disputed (the
    /// request asked for them).
    pub stale_returned: u32,
    pub disputed_returned: u32,
}

/// Rough token count of a memory's text, for `limits.max_tokens`.
fn tokens(item: &MemoryItem) -> u32 {
    ((item.summary.len() + item.content.len()) / 4 + 1) as u32
}

/// How well a memory fits the request: one point per keyword that the
/// request names as an entity, tool or target system, two when the
/// memory's lesson is about the requested tool. Zero is not relevant.
fn relevance(memory: &Memory, request: &RecallRequest) -> u32 {
    let query = &request.query;
    let named = |word: &str| {
        request.entities.all().any(|e| e.eq_ignore_ascii_case(word))
            || query
                .tool_name
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(word))
            || query
                .target_system
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(word))
    };
    let keywords = memory.keywords.iter().filter(|k| named(k)).count() as u32;
    let tool = memory.lesson.as_ref().is_some_and(|l| {
        query
            .tool_name
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case(&l.program))
    });
    keywords + 2 * u32::from(tool)
}

/// Answers a recall request over `memories` at `now`.
///
/// Never returned: other workspaces, other projects, memories narrower than
/// the requested visibility, rejected and superseded memories. Returned only
/// when asked for: disputed (`include_disputed`, then labelled
/// `do_not_inject_automatically`), stale (`include_stale`), unconfirmed
/// (`include_unconfirmed`: open in review or `requires_confirmation`). The
/// use policy must be one the request allows; with `require_source_refs` the
/// source must have a URI; with `recency_days` it must be created or
/// confirmed within them.
pub fn recall<'m>(
    memories: impl IntoIterator<Item = &'m Memory>,
    request: &RecallRequest,
    policy_hits: Vec<PolicyHit>,
    now: Timestamp,
) -> Recall {
    let mut skipped = Skipped::default();
    let mut candidates: Vec<(u32, &Memory)> = Vec::new();
    for memory in memories {
        let item = &memory.item;
        if item.scope.workspace_id != request.workspace_id
            || item
                .scope
                .project_id
                .as_ref()
                .is_some_and(|p| request.project_id.as_ref() != Some(p))
            || item.scope.visibility < request.scope.visibility
            || memory.review == ReviewStatus::Rejected
        {
            continue;
        }
        if memory.is_superseded() {
            skipped.superseded += 1;
            continue;
        }
        if memory.is_disputed() && !request.scope.include_disputed {
            skipped.disputed += 1;
            continue;
        }
        if !memory.is_fresh(now) && !request.scope.include_stale {
            skipped.stale += 1;
            continue;
        }
        let unconfirmed =
            memory.review.is_open() || memory.use_policy() == UsePolicy::RequiresConfirmation;
        if unconfirmed && !request.scope.include_unconfirmed {
            skipped.unconfirmed += 1;
            continue;
        }
        let policy = label(memory, now);
        if !request.policy.allowed_use_policies.contains(&policy)
            || (request.policy.require_source_refs && item.source.uri.is_none())
        {
            continue;
        }
        if let Some(days) = request.limits.recency_days {
            let since = now.plus(-i64::from(days) * DAY);
            let last = item
                .freshness
                .last_confirmed_at
                .unwrap_or(item.freshness.created_at);
            if last < since {
                continue;
            }
        }
        let score = relevance(memory, request);
        if score > 0 {
            candidates.push((score, memory));
        }
    }
    candidates.sort_by(|(sa, a), (sb, b)| {
        sb.cmp(sa)
            .then(
                b.item
                    .provenance
                    .confidence
                    .total_cmp(&a.item.provenance.confidence),
            )
            .then(a.id().cmp(b.id()))
    });
    let mut items = Vec::new();
    let (mut budget, mut stale_returned, mut disputed_returned) = (request.limits.max_tokens, 0, 0);
    for (_, memory) in candidates {
        let cost = tokens(&memory.item);
        if items.len() as u32 >= request.limits.max_items || cost > budget {
            skipped.over_limits += 1;
            continue;
        }
        budget -= cost;
        stale_returned += u32::from(!memory.is_fresh(now));
        disputed_returned += u32::from(memory.is_disputed());
        let mut item = memory.item.clone();
        item.use_policy.policy = label(memory, now);
        items.push(item);
    }
    let response = RecallResponse {
        schema_version: RecallResponseVersion::V1,
        request_id: request.request_id.clone(),
        memories: items,
        policy_hits,
        warnings: warnings(&skipped, stale_returned, disputed_returned),
    };
    Recall {
        response,
        skipped,
        stale_returned,
        disputed_returned,
    }
}

/// The use policy a recalled memory is handed out with: its own, except
/// that what is disputed or stale is never to be injected automatically and
/// what claims instruction use without meeting every condition is evidence.
fn label(memory: &Memory, now: Timestamp) -> UsePolicy {
    match memory.use_policy() {
        _ if memory.is_disputed() || !memory.is_fresh(now) => UsePolicy::DoNotInjectAutomatically,
        UsePolicy::CanUseAsInstruction if !memory.is_instruction_grade(now) => {
            UsePolicy::CanUseAsEvidence
        }
        policy => policy,
    }
}

fn warnings(skipped: &Skipped, stale: u32, disputed: u32) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut warn = |count: u32, code: &str, what: &str| {
        if count > 0 {
            out.push(Warning {
                code: code.to_owned(),
                message: format!("{count} {what}"),
            });
        }
    };
    warn(
        skipped.superseded,
        "superseded_withheld",
        "superseded memories withheld",
    );
    warn(
        skipped.disputed,
        "disputed_withheld",
        "disputed memories withheld",
    );
    warn(skipped.stale, "stale_withheld", "stale memories withheld");
    warn(
        skipped.unconfirmed,
        "unconfirmed_withheld",
        "unconfirmed memories withheld",
    );
    warn(
        skipped.over_limits,
        "limits_reached",
        "relevant memories left out by the limits",
    );
    warn(
        disputed,
        "disputed_included",
        "disputed memories included as asked; not to be injected",
    );
    warn(
        stale,
        "stale_included",
        "stale memories included as asked; not to be injected",
    );
    out
}

/// The lower-case words of `text` of three letters or more.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
}

/// The words a recall query is about: its summary's and its topics'.
fn query_words(request: &RecallRequest) -> Vec<String> {
    words(&request.query.summary)
        .chain(request.entities.topics.iter().flat_map(|t| words(t)))
        .collect()
}

/// The policy hits of a recall: the rules of the policy in force that name
/// the request's `tool_name` as their program (the seed's simple policy
/// hits), those whose id or reason share words with the query first, then
/// STOP rules first, at most `limits.max_items`. Each names its rule and the
/// policy revision it belongs to.
pub fn policy_hits(rules: &[Rule], request: &RecallRequest, revision: &str) -> Vec<PolicyHit> {
    let Some(tool) = request.query.tool_name.as_deref() else {
        return Vec::new();
    };
    let mut hits: Vec<&Rule> = rules
        .iter()
        .filter(|r| r.programs().iter().any(|p| p == tool))
        .collect();
    // A tool has many rules: those that speak of what the query is about
    // (its summary and topics) come first, the strictest first among equals.
    let asked = query_words(request);
    hits.sort_by_key(|r| {
        let spoken = words(&r.id)
            .chain(words(&r.reason))
            .filter(|w| asked.contains(w))
            .count();
        (std::cmp::Reverse(spoken), std::cmp::Reverse(r.verdict))
    });
    hits.into_iter()
        .take(request.limits.max_items as usize)
        .map(|r| PolicyHit {
            policy_id: r.id.clone(),
            summary: r.reason.clone(),
            required_behavior: match r.verdict {
                Verdict::Stop => RequiredBehavior::Block,
                Verdict::Hold => RequiredBehavior::Escalate,
                Verdict::Allow => RequiredBehavior::Allow,
            },
            source_ref: Some(format!("praxis:policy/{revision}#{}", r.id)),
        })
        .collect()
}

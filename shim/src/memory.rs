//! `praxis review`, `praxis inspect` and `praxis memory stats`: the
//! operator's view of judgment memory, as praxisd's store holds it.

use clap::{Args, Subcommand, ValueEnum};
use praxis_proto::{OperatorReply, OperatorRequest};
use serde_json::{Value, json};

use crate::reply::{listing, simple};

/// `praxis review [ACTION ITEM_ID]`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The action on an item; without one, the queue is listed.
    #[arg(value_enum, requires = "item_id")]
    action: Option<ReviewActionName>,
    /// The queued memory (as `praxis review` lists it).
    item_id: Option<String>,
    /// The queue as one JSON document.
    #[arg(long)]
    json: bool,
    /// confirm: keep it as evidence, not as an instruction.
    #[arg(long)]
    as_evidence: bool,
    /// confirm: how long it stays fresh, in days (default 90).
    #[arg(long)]
    fresh_days: Option<u32>,
    /// edit: the new summary.
    #[arg(long)]
    summary: Option<String>,
    /// edit: the new content.
    #[arg(long)]
    content: Option<String>,
    /// restrict: the one project it applies to.
    #[arg(long)]
    project: Option<String>,
    /// restrict: a narrower visibility (personal, project, workspace, org).
    #[arg(long)]
    visibility: Option<String>,
    /// restrict: the one role it applies to.
    #[arg(long)]
    role: Option<String>,
    /// merge: the memory that replaces it.
    #[arg(long)]
    into: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ReviewActionName {
    Confirm,
    Edit,
    EvidenceOnly,
    Restrict,
    Stale,
    Merge,
    Reject,
    Escalate,
}

/// `praxis memory ...`.
#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// Judge, recall and governance metrics from the memory store.
    Stats {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// The review action as praxisd reads it.
fn action_object(name: ReviewActionName, args: &ReviewArgs) -> Value {
    match name {
        ReviewActionName::Confirm => json!({
            "action": "confirm",
            "as_instruction": !args.as_evidence,
            "fresh_for": args.fresh_days.map(|d| i64::from(d) * 86_400),
        }),
        ReviewActionName::Edit => json!({
            "action": "edit",
            "summary": args.summary,
            "content": args.content,
            "lesson": null,
        }),
        ReviewActionName::EvidenceOnly => json!({"action": "evidence-only"}),
        ReviewActionName::Restrict => json!({
            "action": "restrict",
            "project_id": args.project,
            "visibility": args.visibility,
            "role": args.role,
        }),
        ReviewActionName::Stale => json!({"action": "stale"}),
        ReviewActionName::Merge => json!({"action": "merge", "into": args.into}),
        ReviewActionName::Reject => json!({"action": "reject"}),
        ReviewActionName::Escalate => json!({"action": "escalate"}),
    }
}

pub fn review(args: ReviewArgs) -> i32 {
    if let (Some(name), Some(item_id)) = (args.action, args.item_id.clone()) {
        let action = action_object(name, &args);
        return simple(OperatorRequest::ReviewAct { item_id, action });
    }
    let json = args.json;
    listing(OperatorRequest::Review, |reply| match reply {
        OperatorReply::Json { value } => {
            print_queue(&value, json);
            None
        }
        other => Some(other),
    })
}

fn text<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("-")
}

fn print_queue(value: &Value, json: bool) {
    if json {
        println!("{value}");
        return;
    }
    let items = value["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if items.is_empty() {
        println!("the review queue is empty");
    }
    for item in items {
        println!(
            "{}  [{}] {}\n    {}, confidence {}, suggested {}, scope {}\n    from: {}",
            text(item, "/item_id"),
            text(item, "/priority"),
            text(item, "/proposed_memory/summary"),
            text(item, "/provenance"),
            item["confidence"],
            text(item, "/suggested_use_policy"),
            text(item, "/affected_scope/workspace_id"),
            text(item, "/source_event/reason"),
        );
        if let Some(sentence) = item
            .pointer("/future_actions/sentence")
            .and_then(Value::as_str)
        {
            println!("    {sentence}");
        }
    }
}

/// One value for people: text bare, nothing as `-`, a rate in percent.
fn scalar(key: &str, value: &Value) -> String {
    match value {
        Value::Null => String::from("-"),
        Value::String(s) => s.clone(),
        Value::Number(n) if key.ends_with("rate") => {
            format!("{:.1}%", n.as_f64().unwrap_or_default() * 100.0)
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.2}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A JSON document as an indented outline of `label: value` lines (labels
/// with spaces for underscores; list items as `-`).
fn outline(key: &str, value: &Value, depth: usize, out: &mut Vec<String>) {
    let pad = "  ".repeat(depth);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let label = k.replace('_', " ");
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        out.push(format!("{pad}{label}:"));
                        outline(k, v, depth + 1, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push(format!("{pad}{label}:"));
                        outline(k, v, depth + 1, out);
                    }
                    Value::Object(_) | Value::Array(_) => out.push(format!("{pad}{label}: none")),
                    _ => out.push(format!("{pad}{label}: {}", scalar(k, v))),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                if item.is_object() || item.is_array() {
                    out.push(format!("{pad}-"));
                    outline(key, item, depth + 1, out);
                } else {
                    out.push(format!("{pad}- {}", scalar(key, item)));
                }
            }
        }
        Value::Object(_) => out.push(format!("{pad}none")),
        other => out.push(format!("{pad}{}", scalar(key, other))),
    }
}

/// Prints the daemon's JSON answer: as it is with `--json`, else as text.
fn print_json(request: OperatorRequest, json: bool) -> i32 {
    listing(request, |reply| match reply {
        OperatorReply::Json { value } => {
            if json {
                println!("{value}");
            } else {
                let mut lines = Vec::new();
                outline("", &value, 0, &mut lines);
                println!("{}", lines.join("\n"));
            }
            None
        }
        other => Some(other),
    })
}

pub fn inspect(memory_id: String, json: bool) -> i32 {
    print_json(OperatorRequest::Inspect { memory_id }, json)
}

pub fn run(cmd: MemoryCmd) -> i32 {
    match cmd {
        MemoryCmd::Stats { json } => print_json(OperatorRequest::MemoryStats, json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_print_as_an_outline_not_json() {
        let value = json!({
            "decisions": 3,
            "escalation_rate": 0.25,
            "average_review_seconds": null,
            "created_by": {"kind": "approval", "decision_id": "r-1"},
            "used": [{"decision_id": "r-2", "used_as": "evidence"}],
            "conflicts": [],
        });
        let mut lines = Vec::new();
        outline("", &value, 0, &mut lines);
        assert_eq!(
            lines,
            [
                "average review seconds: -",
                "conflicts: none",
                "created by:",
                "  decision id: r-1",
                "  kind: approval",
                "decisions: 3",
                "escalation rate: 25.0%",
                "used:",
                "  -",
                "    decision id: r-2",
                "    used as: evidence",
            ]
        );
    }
}

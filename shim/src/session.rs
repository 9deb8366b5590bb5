//! `praxis session list` and `praxis session show ID [--json]`: the agent
//! sessions praxisd's session control plane follows, and one session's
//! private `/tmp` (where it lies on the host, its size) and trajectory as a
//! timeline (actions, boundaries, windows, steers, checkpoints), drawn from
//! the audit log.

use clap::Subcommand;
use praxis_proto::{OperatorReply, OperatorRequest, SessionInfo};
use serde_json::Value;

use crate::client;
use crate::reply::report;

#[derive(Debug, Subcommand)]
pub enum SessionCmd {
    /// The sessions with state, most recently active first.
    List {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One session's private /tmp, and its timeline: actions, boundaries,
    /// windows, steers, checkpoints.
    Show {
        /// The session id, as the runtime named it (`praxis session list`).
        session: String,
        /// One JSON object a line (the private /tmp first, then the audit
        /// events) instead of the timeline.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: SessionCmd) -> i32 {
    match cmd {
        SessionCmd::List { json } => list(json),
        SessionCmd::Show { session, json } => show(session, json),
    }
}

fn list(json: bool) -> i32 {
    match client::operator(OperatorRequest::SessionList, |_| {}) {
        Ok(OperatorReply::Sessions { items }) => {
            if json {
                println!("{}", serde_json::to_string(&items).unwrap_or_default());
            } else if items.is_empty() {
                println!("no sessions");
            }
            if !json {
                items.iter().for_each(|s| println!("{}", list_line(s)));
            }
            0
        }
        Ok(OperatorReply::Refused { reason }) => {
            eprintln!("praxis: refused: {reason}");
            1
        }
        Ok(other) => {
            eprintln!("praxis: unexpected reply: {other:?}");
            1
        }
        Err(e) => report(&e),
    }
}

fn list_line(s: &SessionInfo) -> String {
    let window = s
        .open_window
        .map_or_else(|| String::from("none"), |w| format!("#{w}"));
    let mut line = format!(
        "{}  {}  actions={} windows={} open={} checkpoints={}{} phase={}  last={}",
        s.session,
        s.runtime,
        s.actions,
        s.windows,
        window,
        s.checkpoints,
        if s.checkpoint_pending {
            " (one pending)"
        } else {
            ""
        },
        s.phase.as_deref().unwrap_or("-"),
        clock(s.last_ms),
    );
    if let Some(cwd) = &s.cwd {
        line.push_str(&format!("  cwd {cwd}"));
    }
    if !s.disabled.is_empty() {
        line.push_str(&format!("  off: {}", s.disabled.join(",")));
    }
    line
}

fn show(session: String, json: bool) -> i32 {
    let mut count = 0usize;
    let printed = client::operator(
        OperatorRequest::SessionShow {
            session: session.clone(),
        },
        |r| match r {
            OperatorReply::PrivateTmp {
                tmp,
                var_tmp,
                exists,
                bytes,
            } => {
                if json {
                    let value = serde_json::json!({ "private_tmp": {
                        "tmp": tmp, "var_tmp": var_tmp, "exists": exists, "bytes": bytes,
                    }});
                    println!("{value}");
                } else {
                    let size = if *exists {
                        format!("{bytes} bytes")
                    } else {
                        String::from("not made yet")
                    };
                    println!("private /tmp  {tmp}  /var/tmp  {var_tmp}  ({size})");
                }
            }
            OperatorReply::Events { events } => {
                for e in events {
                    count += 1;
                    if json {
                        println!("{e}");
                    } else if let Some(line) = timeline_line(e) {
                        println!("{line}");
                    }
                }
            }
            _ => {}
        },
    );
    match printed {
        Ok(OperatorReply::End) if count == 0 => {
            eprintln!("praxis: no events recorded for session `{session}`");
            1
        }
        Ok(OperatorReply::End) => 0,
        Ok(OperatorReply::Refused { reason }) => {
            eprintln!("praxis: refused: {reason}");
            1
        }
        Ok(other) => {
            eprintln!("praxis: unexpected reply: {other:?}");
            1
        }
        Err(e) => report(&e),
    }
}

/// `HH:MM:SS` of a time in ms since the epoch (UTC).
fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn number(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// One event of the session as a line of its timeline; session events are
/// indented under the actions they belong to. None for events the timeline
/// leaves out (the audit's own bookkeeping).
pub fn timeline_line(e: &Value) -> Option<String> {
    // `ts` is RFC 3339; the timeline shows its time of day.
    let ts = text(e, "ts");
    let time = ts.get(11..23).unwrap_or(ts);
    let d = e.get("detail").cloned().unwrap_or(Value::Null);
    let kind = text(e, "kind");
    let body = match kind {
        "decided" => {
            let what = e
                .get("argv_redacted")
                .and_then(|a| a.get(0))
                .and_then(Value::as_str)
                .unwrap_or("");
            let tool = if d.get("judge_only").is_some() {
                "hook"
            } else {
                "run"
            };
            format!(
                "action  {} {} {tool}: {what}",
                text(e, "decision"),
                text(e, "tier")
            )
        }
        "finished" => format!(
            "exit    {}",
            e.get("exit_code")
                .and_then(Value::as_i64)
                .map_or_else(|| String::from("?"), |c| c.to_string())
        ),
        "tool_finished" => format!("outcome {}", text(&d, "tool_name")),
        "session_started" | "prompt_submitted" | "session_ended" => kind.replace('_', " "),
        "session_boundary" => format!(
            "  ┃ BOUNDARY {}{}: {}",
            text(&d, "signal"),
            also(&d),
            text(e, "reason")
        ),
        "session_window_opened" => format!(
            "  ┃ window #{} opened: {} risk, backstop {} actions / {} min",
            number(&d, "window"),
            text(&d, "risk"),
            number(&d["backstop"], "actions"),
            number(&d["backstop"], "seconds") / 60
        ),
        "session_window_closed" | "session_window_expired" => {
            let r = &d["record"];
            format!(
                "  ┃ window #{} {}: {} actions in {} min ({})",
                number(r, "window"),
                if kind.ends_with("expired") {
                    "EXPIRED"
                } else {
                    "closed"
                },
                number(r, "actions"),
                number(r, "elapsed_ms") / 60_000,
                match text(&r["end"], "by") {
                    "boundary" => text(&r["end"], "signal").to_owned(),
                    other => other.replace('_', " "),
                }
            )
        }
        "session_window_risk_raised" => format!(
            "  ┃ window #{} risk raised to {}",
            number(&d, "window"),
            text(&d, "risk")
        ),
        "session_steer" => format!("  ┃ steer: {}", text(e, "reason")),
        "session_checkpoint_required" => format!(
            "  ┃ checkpoint #{} required ({})",
            number(&d, "checkpoint"),
            names(&d["mechanisms"])
        ),
        "session_checkpoint_satisfied" => format!(
            "  ┃ checkpoint #{} satisfied by {} ({} {})",
            number(&d, "checkpoint"),
            text(&d["evidence"], "mechanism"),
            text(&d["evidence"], "tool"),
            text(&d["evidence"], "target")
        ),
        "session_checkpoint_skipped" => {
            format!("  ┃ checkpoint #{} SKIPPED", number(&d, "checkpoint"))
        }
        "session_skip" => format!("  ┃ skip {}: inside the re-arm floor", text(&d, "signal")),
        "session_signal_disabled" => format!(
            "  ┃ signal {} off: no {} telemetry",
            text(&d, "signal"),
            text(&d, "missing")
        ),
        "session_signal_enabled" => format!("  ┃ signal {} on again", text(&d, "signal")),
        "session_block" => format!("  ┃ BLOCK {}: {}", text(&d, "method"), text(e, "reason")),
        "session_baseline_seeded" => format!("  ┃ baseline {}", text(e, "reason")),
        "session_failed" => format!("  ┃ detector failed (work went on): {}", text(e, "reason")),
        _ => return None,
    };
    Some(format!("{time}  {body}"))
}

fn names(list: &Value) -> String {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn also(d: &Value) -> String {
    let also = names(&d["also"]);
    if also.is_empty() {
        also
    } else {
        format!(" (also {also})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn session_events_read_as_a_timeline() {
        let boundary = json!({"ts": "2026-01-02T10:11:12.345Z", "kind": "session_boundary",
            "reason": "It held for 3 actions.",
            "detail": {"signal": "work_kind_shift", "also": ["scope_change"], "action": 7}});
        assert_eq!(
            timeline_line(&boundary).unwrap(),
            "10:11:12.345    ┃ BOUNDARY work_kind_shift (also scope_change): It held for 3 actions."
        );
        let closed = json!({"ts": "2026-01-02T10:11:12.345Z", "kind": "session_window_expired",
            "detail": {"record": {"window": 2, "actions": 40, "elapsed_ms": 125000,
                "end": {"by": "boundary", "signal": "tool_budget"}}}});
        assert_eq!(
            timeline_line(&closed).unwrap(),
            "10:11:12.345    ┃ window #2 EXPIRED: 40 actions in 2 min (tool_budget)"
        );
        assert!(timeline_line(&json!({"kind": "startup"})).is_none());
        assert_eq!(clock(3_723_000), "01:02:03");
    }
}

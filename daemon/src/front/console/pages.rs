//! The console's pages, rendered on the server (maud escapes every value).
//! Each takes the operator replies of every host, tagged with their host.

use hyper::StatusCode;
use maud::{DOCTYPE, Markup, html};
use praxis_proto::{OperatorReply, PendingItem};
use serde_json::Value;

use super::form::Form;
use crate::logins::Session;

/// Where a held request's reason lists what an approval would let it do.
const GRANTS_LEAD: &str = "if approved it ";

/// Replies tagged with the host that gave them.
type Tagged = [(String, OperatorReply)];

pub fn refusal(status: StatusCode, why: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { "Praxis console" } link rel="stylesheet" href="/console.css"; }
            body { main { h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) } p { (why) } } }
        }
    }
}

/// The host filter of a page that spans more than one host.
pub struct HostFilter<'a> {
    /// The page it filters.
    pub page: &'a str,
    pub hosts: &'a [String],
    /// The one host shown; none: every host.
    pub chosen: Option<&'a str>,
}

fn host_filter(filter: &HostFilter) -> Markup {
    html! {
        @if filter.hosts.len() > 1 {
            form.hosts method="get" action=(filter.page) {
                label { "Host " select name="host" {
                    option value="" selected[filter.chosen.is_none()] { "every host" }
                    @for host in filter.hosts {
                        option value=(host) selected[filter.chosen == Some(host.as_str())] { (host) }
                    }
                } }
                button type="submit" { "Show" }
            }
        }
    }
}

/// A page: the navigation, who is logged in, the host filter, the last
/// change's outcome.
pub fn frame(
    title: &str,
    session: &Session,
    flash: Option<&str>,
    filter: &HostFilter,
    body: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Praxis console" }
                link rel="stylesheet" href="/console.css";
                script src="/console.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header {
                    nav aria-label="Pages" {
                        @for (href, name) in [("/pending", "Pending"), ("/audit", "Audit"), ("/sessions", "Sessions"), ("/review", "Review"), ("/kill", "Kill switch")] {
                            a href=(href) aria-current=[(name == title).then_some("page")] { (name) }
                        }
                    }
                    form method="post" action="/logout" {
                        input type="hidden" name="csrf" value=(session.csrf);
                        span { "operator uid " (session.operator.uid) " " }
                        button type="submit" { "Log out" }
                    }
                }
                main id="main" tabindex="-1" {
                    h1 { (title) }
                    @if let Some(flash) = flash {
                        p.flash role="status" { (flash) }
                    }
                    (host_filter(filter))
                    (body)
                }
            }
        }
    }
}

fn refused(host: &str, reason: &str) -> Markup {
    html! { p.refused { (host) ": " (reason) } }
}

/// The grants a held request's reason names ("will write …", "will
/// connect to …").
pub fn grants(reason: &str) -> Vec<&str> {
    reason
        .split_once(GRANTS_LEAD)
        .map(|(_, rest)| {
            rest.split("; ")
                .take_while(|part| part.starts_with("will "))
                .collect()
        })
        .unwrap_or_default()
}

pub fn pending(session: &Session, host: Option<&str>, held: &Tagged) -> Markup {
    html! {
        p { "Held requests wait here for an operator. An approval lets the same command run once within its TTL." }
        div #pending data-live={ "/pending/rows" @if let Some(host) = host { "?host=" (host) } } aria-live="polite" { (pending_rows(session, held)) }
    }
}

pub fn pending_rows(session: &Session, held: &Tagged) -> Markup {
    let items: Vec<(&str, &PendingItem)> = each(held, |r| match r {
        OperatorReply::Pending { items } => Some(items.as_slice()),
        _ => None,
    });
    html! {
        @for (host, reply) in held {
            @if let OperatorReply::Refused { reason } = reply { (refused(host, reason)) }
        }
        @if items.is_empty() {
            p.empty { "Nothing is held." }
        }
        @for (host, item) in items {
            article.held data-request=(item.request_id) {
                h2 { code { (item.command.join(" ; ")) } }
                dl {
                    dt { "Request" } dd { a href={ "/audit/request?host=" (host) "&id=" (item.request_id) } { (item.request_id) } }
                    dt { "Host" } dd { (host) }
                    dt { "Role" } dd { (item.role) }
                    dt { "Tier" } dd { (item.tier) }
                    dt { "Reason" } dd { (item.reason) }
                    dt { "Grants" } dd {
                        @let granted = grants(&item.reason);
                        @if granted.is_empty() { "none beyond the role's profile" }
                        ul.grants { @for g in granted { li { (g) } } }
                    }
                    dt { "Directory" } dd { code { (item.cwd) } }
                    dt { "Session" } dd { (item.session) }
                    dt { "Waiting" } dd { (item.age_secs) " s" }
                }
                form method="post" action="/pending/decide" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    input type="hidden" name="host" value=(host);
                    input type="hidden" name="request_id" value=(item.request_id);
                    label { "TTL (seconds) " input type="number" name="ttl" min="1" placeholder="default"; }
                    label { "Note " input type="text" name="note"; }
                    button type="submit" name="action" value="approve" { "Approve" }
                    button type="submit" name="action" value="remember" { "Approve and remember" }
                    button.deny type="submit" name="action" value="deny" { "Deny" }
                }
            }
        }
    }
}

fn events(replies: &[OperatorReply]) -> impl Iterator<Item = &Value> {
    replies.iter().flat_map(|r| match r {
        OperatorReply::Events { events } => events.as_slice(),
        _ => &[],
    })
}

fn text<'a>(event: &'a Value, field: &str) -> &'a str {
    event.get(field).and_then(Value::as_str).unwrap_or("")
}

fn command(event: &Value) -> String {
    event
        .get("argv_redacted")
        .and_then(Value::as_array)
        .map(|argv| {
            argv.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ; ")
        })
        .unwrap_or_default()
}

/// The program a recorded command starts with, by its base name.
fn program(event: &Value) -> String {
    let command = command(event);
    let first = command.split_whitespace().next().unwrap_or("");
    first.rsplit('/').next().unwrap_or(first).to_owned()
}

/// Whether `event` passes the Audit page's filters.
fn matches(query: &Form, event: &Value) -> bool {
    let want = |name: &str| query.get(name).filter(|v| !v.is_empty());
    want("decision").is_none_or(|d| text(event, "decision") == d)
        && want("role").is_none_or(|r| text(event, "role") == r)
        && want("session").is_none_or(|s| text(event, "session") == s)
        && want("kind").is_none_or(|k| text(event, "kind") == k)
        && want("program").is_none_or(|p| program(event) == p)
}

fn event_rows<'a>(rows: impl Iterator<Item = (&'a str, &'a Value)>) -> Markup {
    html! {
        table {
            thead { tr { th { "Seq" } th { "Time" } th { "Host" } th { "Kind" } th { "Request" } th { "Decision" } th { "Role" } th { "Command" } th { "Reason" } th { "Record" } } }
            tbody {
                @for (host, event) in rows {
                    tr data-kind=(text(event, "kind")) {
                        td { (event.get("seq").cloned().unwrap_or_default()) }
                        td { (text(event, "ts")) }
                        td { (host) }
                        td { (text(event, "kind")) }
                        td {
                            @let id = text(event, "request_id");
                            @if !id.is_empty() { a href={ "/audit/request?host=" (host) "&id=" (id) } { (id) } }
                        }
                        td { (text(event, "decision")) }
                        td { (text(event, "role")) }
                        td { code { (command(event)) } }
                        td { (text(event, "reason")) }
                        td { details { summary { "record" } pre { (serde_json::to_string_pretty(event).unwrap_or_default()) } } }
                    }
                }
            }
        }
    }
}

fn verify_state(verify: &Tagged) -> Markup {
    html! {
        ul.verify {
            @for (host, reply) in verify {
                @match reply {
                    OperatorReply::Verify(v) if v.ok => li.ok { (host) ": chain verified, " (v.events_checked) " events" },
                    OperatorReply::Verify(v) => li.broken { (host) ": chain BROKEN at event " (v.first_broken.map(|s| s.to_string()).unwrap_or_default()) ": " (v.problem.clone().unwrap_or_default()) },
                    OperatorReply::Refused { reason } => li.broken { (host) ": cannot verify: " (reason) },
                    _ => {}
                }
            }
        }
    }
}

pub fn audit(query: &Form, verify: &Tagged, events: &Tagged) -> Markup {
    let field = |name: &str| query.get(name).unwrap_or("").to_owned();
    let mut rows: Vec<(&str, &Value)> = each(events, |r| match r {
        OperatorReply::Events { events } => Some(events.as_slice()),
        _ => None,
    });
    rows.retain(|(_, e)| matches(query, e));
    rows.reverse();
    rows.truncate(500);
    html! {
        (verify_state(verify))
        form.search method="get" action="/audit" {
            label { "Since (RFC 3339 or unix seconds) " input type="text" name="since" value=(field("since")); }
            label { "Decision " select name="decision" {
                @for d in ["", "ALLOW", "HOLD", "STOP"] {
                    option value=(d) selected[field("decision") == d] { @if d.is_empty() { "any" } @else { (d) } }
                }
            } }
            label { "Kind " input type="text" name="kind" value=(field("kind")); }
            label { "Role " input type="text" name="role" value=(field("role")); }
            label { "Program " input type="text" name="program" value=(field("program")); }
            label { "Session " input type="text" name="session" value=(field("session")); }
            button type="submit" { "Search" }
        }
        @for (host, reply) in events {
            @if let OperatorReply::Refused { reason } = reply { (refused(host, reason)) }
        }
        p { (rows.len()) " events, newest first." }
        (event_rows(rows.into_iter()))
    }
}

/// A request's chain: its decision, and the approval and the run that
/// followed it.
pub fn request(host: &str, id: &str, replies: &[OperatorReply]) -> Markup {
    html! {
        p { "Request " code { (id) } " on " (host) ", with every request an approval ties to it." }
        @for reply in replies {
            @if let OperatorReply::Refused { reason } = reply { (refused(host, reason)) }
        }
        ol.chain {
            @for event in events(replies) {
                li data-kind=(text(event, "kind")) {
                    strong { (text(event, "kind")) }
                    " " (text(event, "decision"))
                    @let approval = text(event, "approval_id");
                    @if !approval.is_empty() { " · approval " code { (approval) } }
                    @let other = text(event, "request_id");
                    @if other != id { " · run " a href={ "/audit/request?host=" (host) "&id=" (other) } { (other) } }
                    " · " (text(event, "ts")) " · " (text(event, "reason"))
                }
            }
        }
        (event_rows(events(replies).map(|e| (host, e))))
    }
}

/// A host's kill switch from its status: `Some(reason)` when tripped, and
/// where it is kept. A host of the fleet reports it through the store.
fn kill_state(reply: &OperatorReply) -> Option<(Option<String>, String)> {
    match reply {
        OperatorReply::Status(report) => Some((
            report.kill_switch.clone(),
            format!("kill file {}", report.kill_file),
        )),
        OperatorReply::Json { value } => {
            let killed = value.get("killed").and_then(Value::as_bool)?;
            let reason = value.get("kill_reason").and_then(Value::as_str);
            let tripped = killed.then(|| reason.unwrap_or("").to_owned());
            Some((tripped, String::from("the fleet store's kill order")))
        }
        _ => None,
    }
}

fn kill_form(session: &Session, host: &str, trip: bool, label: &str) -> Markup {
    html! {
        form method="post" action="/kill" {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="host" value=(host);
            input type="hidden" name="action" value=(if trip { "trip" } else { "release" });
            label { "Reason " input type="text" name="reason" required; }
            label { input type="checkbox" name="confirm" value="yes" required; " I confirm" }
            button type="submit" { (label) }
        }
    }
}

pub fn kill(session: &Session, status: &Tagged) -> Markup {
    html! {
        p { "The kill switch refuses every command on a host until it is released." }
        @if status.len() > 1 {
            section.host {
                h2 { "Every host" }
                (kill_form(session, "*", true, "Trip every host"))
                (kill_form(session, "*", false, "Release every host"))
            }
        }
        @for (host, reply) in status {
            @if let OperatorReply::Refused { reason } = reply { (refused(host, reason)) }
            @if let Some((tripped, kept)) = kill_state(reply) {
                section.host {
                    h2 { (host) }
                    @match &tripped {
                        Some(reason) => p.tripped role="status" { "TRIPPED: " (reason) },
                        None => p.released role="status" { "Released: commands are judged as usual." },
                    }
                    p { "Kept in " (kept) }
                    @if tripped.is_none() {
                        (kill_form(session, host, true, "Trip the kill switch"))
                    } @else {
                        (kill_form(session, host, false, "Release the kill switch"))
                    }
                }
            }
        }
    }
}

/// Every item of every host's reply that `pick` finds, with its host.
fn each<'a, T>(
    tagged: &'a Tagged,
    pick: impl Fn(&'a OperatorReply) -> Option<&'a [T]>,
) -> Vec<(&'a str, &'a T)> {
    tagged
        .iter()
        .flat_map(|(host, reply)| {
            pick(reply)
                .unwrap_or_default()
                .iter()
                .map(move |item| (host.as_str(), item))
        })
        .collect()
}

pub fn sessions(sessions: &Tagged, snapshots: &Tagged) -> Markup {
    let sessions = each(sessions, |r| match r {
        OperatorReply::Sessions { items } => Some(items.as_slice()),
        _ => None,
    });
    let snapshots = each(snapshots, |r| match r {
        OperatorReply::Snapshots { items } => Some(items.as_slice()),
        _ => None,
    });
    html! {
        table {
            thead { tr { th { "Host" } th { "Session" } th { "Runtime" } th { "Actions" } th { "Windows" } th { "Checkpoints" } th { "Phase" } } }
            tbody {
                @for (host, s) in sessions {
                    tr {
                        td { (host) }
                        td { a href={ "/sessions/show?host=" (host) "&id=" (s.session) } { (s.session) } }
                        td { (s.runtime) } td { (s.actions) } td { (s.windows) } td { (s.checkpoints) }
                        td { (s.phase.clone().unwrap_or_default()) }
                    }
                }
            }
        }
        h2 { "Snapshots praxis undo can restore" }
        table {
            thead { tr { th { "Host" } th { "Request" } th { "Workspace" } th { "Files" } th { "Bytes" } th { "Expires" } th { "Restored" } } }
            tbody {
                @for (host, s) in snapshots {
                    tr {
                        td { (host) }
                        td { a href={ "/audit/request?host=" (host) "&id=" (s.request_id) } { (s.request_id) } }
                        td { code { (s.workspace) } } td { (s.files) } td { (s.bytes) }
                        td { (s.expires_at) } td { (s.restored_at.map(|t| t.to_string()).unwrap_or_default()) }
                    }
                }
            }
        }
    }
}

/// One session's timeline: every event recorded under it, in order.
pub fn session(host: &str, id: &str, replies: &[OperatorReply]) -> Markup {
    html! {
        p { "Session " code { (id) } " on " (host) ": tool calls, boundaries, windows, steers and checkpoints." }
        (event_rows(events(replies).map(|e| (host, e))))
    }
}

/// The judgment-memory review queue: each item's proposed memory, its
/// evidence, the replay of its lesson over recent holds, and every review
/// action.
pub fn review(session: &Session, queue: &Tagged) -> Markup {
    let at = |v: &Value, pointer: &str| -> String {
        match v.pointer(pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    };
    html! {
        p { "Proposed memories wait here until a human confirms, edits, narrows or rejects them. Nothing unconfirmed relaxes a HOLD." }
        @for (host, reply) in queue {
            @match reply {
                OperatorReply::Refused { reason } => (refused(host, reason)),
                OperatorReply::Json { value } => {
                    @let items = value.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
                    @if items.is_empty() { p.empty { (host) ": the queue is empty." } }
                    @for item in &items {
                        @let id = at(item, "/item_id");
                        article.review data-item=(id) {
                            h2 { (at(item, "/proposed_memory/summary")) }
                            dl {
                                dt { "Item" } dd { code { (id) } }
                                dt { "Host" } dd { (host) }
                                dt { "Status" } dd { (at(item, "/review_status")) ", priority " (at(item, "/priority")) }
                                dt { "Provenance" } dd { (at(item, "/provenance")) ", confidence " (at(item, "/confidence")) }
                                dt { "Suggested use" } dd { (at(item, "/suggested_use_policy")) }
                                dt { "Scope" } dd { code { (at(item, "/affected_scope")) } }
                                dt { "Replay" } dd.replay {
                                    (at(item, "/future_actions/sentence"))
                                    ul { @for example in item.pointer("/future_actions/examples").and_then(Value::as_array).into_iter().flatten() {
                                        li { code { (example.as_str().unwrap_or("")) } }
                                    } }
                                }
                            }
                            details { summary { "Evidence (the source event)" } pre { (serde_json::to_string_pretty(&item["source_event"]).unwrap_or_default()) } }
                            details { summary { "The whole item" } pre { (serde_json::to_string_pretty(item).unwrap_or_default()) } }
                            form method="post" action="/review" {
                                input type="hidden" name="csrf" value=(session.csrf);
                                input type="hidden" name="host" value=(host);
                                input type="hidden" name="item_id" value=(id);
                                label { "Action " select name="action" {
                                    @for (value, name) in [("confirm", "Confirm"), ("edit", "Edit"), ("evidence-only", "Evidence only"), ("restrict", "Restrict scope"), ("stale", "Mark stale"), ("merge", "Merge into"), ("reject", "Reject"), ("escalate", "Escalate to admin")] {
                                        option value=(value) { (name) }
                                    }
                                } }
                                label { input type="checkbox" name="as_instruction" value="yes"; " as an instruction (confirm)" }
                                label { "Fresh for (days, confirm) " input type="number" name="fresh_days" min="1"; }
                                label { "Summary (edit) " input type="text" name="summary"; }
                                label { "Content (edit) " input type="text" name="content"; }
                                label { "Project (restrict) " input type="text" name="project_id"; }
                                label { "Visibility (restrict) " input type="text" name="visibility"; }
                                label { "Role (restrict) " input type="text" name="role"; }
                                label { "Into item (merge) " input type="text" name="into"; }
                                button type="submit" { "Apply" }
                            }
                        }
                    }
                },
                _ => {},
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_read_from_a_held_reason() {
        let reason = "network access needs approval; if approved it will write /tmp/x; will connect to pypi.org:443; not reversible: no snapshot";
        assert_eq!(
            grants(reason),
            vec!["will write /tmp/x", "will connect to pypi.org:443"]
        );
        assert!(grants("rm -rf needs approval").is_empty());
    }
}

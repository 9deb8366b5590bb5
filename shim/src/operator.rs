//! Operator commands that talk to praxisd (kill switch, status, audit,
//! reload). They need a running daemon: `audit verify` falls back to
//! `praxisd verify` (an offline read-only check of the database) when none
//! answers, so a stopped daemon can still be audited.

use std::time::Duration;

use clap::Subcommand;
use praxis_proto::{OperatorReply, OperatorRequest};

use crate::client::{self, ClientError};

#[derive(Debug, Subcommand)]
pub enum OperatorCmd {
    /// Engage the kill switch (refuse new work, end running work), or release it.
    Kill {
        #[arg(long)]
        reason: Option<String>,
        #[arg(long, conflicts_with = "reason")]
        release: bool,
    },
    /// Show the daemon's mode, socket, policy revision, self-test, kill switch and counts.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Reload the policy (a bad file keeps the last good policy).
    Reload,
    /// Read and check the audit log.
    #[command(subcommand)]
    Audit(AuditCmd),
}

#[derive(Debug, Subcommand)]
pub enum AuditCmd {
    /// Check the hash chain; exits non-zero naming the first broken seq.
    Verify,
    /// The last events.
    Tail {
        #[arg(short = 'n', default_value_t = 20)]
        count: u32,
        /// Keep following new events.
        #[arg(short, long)]
        follow: bool,
        #[arg(long)]
        json: bool,
    },
    /// Every event of one request.
    Show { request_id: String },
    /// Events as JSON Lines, for a SIEM.
    Export {
        #[arg(long, required = true)]
        jsonl: bool,
        /// RFC 3339 time (or a date) to start at.
        #[arg(long)]
        since: Option<String>,
    },
    /// Follow live non-ALLOW decisions.
    Watch {
        #[arg(long)]
        json: bool,
    },
}

/// Exit status when the daemon cannot be asked.
const EXIT_UNREACHABLE: i32 = 125;
/// Poll interval of `tail -f` and `watch`.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);

fn report(e: &ClientError) -> i32 {
    eprintln!("praxis: {e}");
    EXIT_UNREACHABLE
}

/// Sends one request; prints `Done`/`Refused` and maps them to 0/1.
fn simple(request: OperatorRequest) -> i32 {
    match client::operator(request, |_| {}) {
        Ok(OperatorReply::Done { message }) => {
            println!("{message}");
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

/// One line per event for people.
fn human(event: &serde_json::Value) -> String {
    let s = |k: &str| {
        event
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_owned()
    };
    let argv = event
        .get("argv_redacted")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(" ; ")
        })
        .unwrap_or_default();
    let exit = match (
        event.get("exit_code").and_then(|v| v.as_i64()),
        event.get("signal").and_then(|v| v.as_i64()),
    ) {
        (Some(code), _) => format!(" exit={code}"),
        (None, Some(sig)) => format!(" signal={sig}"),
        _ => String::new(),
    };
    format!(
        "{:>6} {} {:<8} {:<5} {:<20} {} {}{} {}",
        event.get("seq").and_then(|v| v.as_i64()).unwrap_or(0),
        s("ts"),
        s("kind"),
        s("decision"),
        s("tier"),
        s("request_id"),
        argv,
        exit,
        s("reason")
    )
}

fn print_events(
    reply: &OperatorReply,
    json: bool,
    filter: impl Fn(&serde_json::Value) -> bool,
    last: &mut u64,
) {
    if let OperatorReply::Events { events } = reply {
        for e in events {
            *last = (*last).max(e.get("seq").and_then(|v| v.as_u64()).unwrap_or(0));
            if filter(e) {
                println!("{}", if json { e.to_string() } else { human(e) });
            }
        }
    }
}

/// Lists events for `request` (only to find the head when `quiet_start`),
/// then optionally follows new ones.
fn events(
    request: OperatorRequest,
    json: bool,
    follow: bool,
    quiet_start: bool,
    filter: impl Fn(&serde_json::Value) -> bool,
) -> i32 {
    let mut last = 0u64;
    match client::operator(request, |r| {
        print_events(r, json, |e| !quiet_start && filter(e), &mut last)
    }) {
        Ok(OperatorReply::End) => {}
        Ok(OperatorReply::Refused { reason }) => {
            eprintln!("praxis: refused: {reason}");
            return 1;
        }
        Ok(other) => {
            eprintln!("praxis: unexpected reply: {other:?}");
            return 1;
        }
        Err(e) => return report(&e),
    }
    while follow {
        std::thread::sleep(FOLLOW_EVERY);
        if let Err(e) = client::operator(
            OperatorRequest::AuditAfter {
                seq: last,
                limit: 1000,
            },
            |r| print_events(r, json, &filter, &mut last),
        ) {
            return report(&e);
        }
    }
    0
}

fn verify() -> i32 {
    match client::operator(OperatorRequest::AuditVerify, |_| {}) {
        Ok(OperatorReply::Verify(v)) if v.ok => {
            println!("audit chain intact: {} events verified", v.events_checked);
            0
        }
        Ok(OperatorReply::Verify(v)) => {
            println!(
                "audit chain BROKEN at seq {}: {}",
                v.first_broken
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| String::from("?")),
                v.problem.unwrap_or_default()
            );
            1
        }
        Ok(OperatorReply::Refused { reason }) => {
            eprintln!("praxis: refused: {reason}");
            1
        }
        Ok(other) => {
            eprintln!("praxis: unexpected reply: {other:?}");
            1
        }
        Err(ClientError::Unreachable { .. }) => client::verify_offline(),
        Err(e) => report(&e),
    }
}

fn status(json: bool) -> i32 {
    match client::operator(OperatorRequest::Status, |_| {}) {
        Ok(OperatorReply::Status(s)) if json => {
            println!("{}", serde_json::to_string(&s).unwrap_or_default());
            0
        }
        Ok(OperatorReply::Status(s)) => {
            println!("mode:            {}", s.mode);
            println!("socket:          {}", s.socket);
            println!("state dir:       {}", s.state_dir);
            println!("pid:             {}", s.pid);
            println!("policy revision: {}", s.policy_revision);
            if let Some(why) = &s.hold_all {
                println!("SERVING ONLY HOLD: {why}");
            }
            println!("sandbox:         {}", s.self_test);
            match &s.kill_switch {
                Some(reason) => println!("kill switch:     ENGAGED ({reason}) [{}]", s.kill_file),
                None => println!("kill switch:     off [{}]", s.kill_file),
            }
            println!("running:         {}", s.in_flight);
            println!(
                "requests:        {} ({} allowed, {} held, {} stopped)",
                s.requests, s.allowed, s.held, s.stopped
            );
            println!("audit events:    {}", s.audit_events);
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

fn not_allowed(e: &serde_json::Value) -> bool {
    e.get("kind").and_then(|v| v.as_str()) == Some("decided")
        && e.get("decision").and_then(|v| v.as_str()) != Some("ALLOW")
}

pub fn run(cmd: OperatorCmd) -> i32 {
    match cmd {
        OperatorCmd::Kill { release: true, .. } => simple(OperatorRequest::Release),
        OperatorCmd::Kill { reason, .. } => simple(OperatorRequest::Kill { reason }),
        OperatorCmd::Status { json } => status(json),
        OperatorCmd::Reload => simple(OperatorRequest::Reload),
        OperatorCmd::Audit(AuditCmd::Verify) => verify(),
        OperatorCmd::Audit(AuditCmd::Tail {
            count,
            follow,
            json,
        }) => events(
            OperatorRequest::AuditTail { count },
            json,
            follow,
            false,
            |_| true,
        ),
        OperatorCmd::Audit(AuditCmd::Show { request_id }) => events(
            OperatorRequest::AuditShow { request_id },
            true,
            false,
            false,
            |_| true,
        ),
        OperatorCmd::Audit(AuditCmd::Export { since, .. }) => events(
            OperatorRequest::AuditExport { since },
            true,
            false,
            false,
            |_| true,
        ),
        OperatorCmd::Audit(AuditCmd::Watch { json }) => {
            // Start at the head: only events from now on.
            events(
                OperatorRequest::AuditTail { count: 1 },
                json,
                true,
                true,
                not_allowed,
            )
        }
    }
}

//! Operator commands that talk to praxisd (kill switch, status, audit,
//! reload, approvals, credentials). They need a running daemon: `audit verify` falls back to
//! `praxisd verify` (an offline read-only check of the database) when none
//! answers, so a stopped daemon can still be audited.

use std::time::Duration;

use clap::{Args, Subcommand};
use praxis_proto::{
    CredentialBinding, CredentialInfo, CredentialSource, CredentialSpec, OperatorReply,
    OperatorRequest, PendingItem,
};

use crate::client::{self, ClientError};
use crate::reply::{age, answer, listing, report, simple};
use praxis_proto::Layout;

#[derive(Debug, Subcommand)]
pub enum OperatorCmd {
    /// Engage the kill switch (refuse new work, end running work), or release it.
    Kill {
        /// Why, for the audit log (and, when engaging, for every agent that
        /// is refused).
        #[arg(long)]
        reason: Option<String>,
        /// Release the kill switch: new work is judged again.
        #[arg(long)]
        release: bool,
    },
    /// Show the daemon's mode, socket, policy revision, self-test, process tracking, kill switch and counts.
    Status {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Reload the policy (a bad file keeps the last good policy).
    Reload,
    /// Read and check the audit log.
    #[command(subcommand)]
    Audit(AuditCmd),
    /// Held requests waiting for an operator.
    Pending {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Approve a held request once: the agent may then run the same command again.
    Approve {
        /// The held request (as `praxis pending` lists it).
        request_id: String,
        /// How long the approval stays usable: 90s, 10m, 2h, 1d (default 15m).
        #[arg(long, value_parser = parse_ttl)]
        ttl: Option<u64>,
        /// A note for the audit log.
        #[arg(long)]
        note: Option<String>,
        /// Also propose a lesson generalised from it for the review queue
        /// (`praxis review`); it is used only once a human confirms it.
        #[arg(long)]
        remember: bool,
    },
    /// The judgment-memory review queue, or one action on an item:
    /// confirm, edit, evidence-only, restrict, stale, merge, reject, escalate.
    Review(crate::memory::ReviewArgs),
    /// What a memory is, where it came from, how it was used, what it can influence.
    Inspect {
        memory_id: String,
        /// One JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Judgment memory.
    #[command(subcommand)]
    Memory(crate::memory::MemoryCmd),
    /// Deny a held request (or withdraw its unused approval).
    Deny {
        /// The held request, or the approved one whose approval to withdraw.
        request_id: String,
        /// A note for the audit log.
        #[arg(long)]
        note: Option<String>,
    },
    /// Brokered credentials: references the daemon resolves at exec time.
    #[command(subcommand)]
    Cred(CredCmd),
    /// Add the praxis hooks to an agent runtime's configuration.
    #[command(subcommand)]
    Install(crate::install::InstallCmd),
    /// Put back what a command removed or overwrote, from the snapshot taken before it ran.
    Undo(crate::undo::UndoArgs),
    /// Agent sessions: their boundaries, windows, steers and checkpoints.
    #[command(subcommand)]
    Session(crate::session::SessionCmd),
    /// Stop a user-mode praxisd cleanly (running commands end first).
    Stop,
    /// The web console: print a one-time login URL and open a browser.
    Console(crate::console::ConsoleArgs),
}

#[derive(Debug, Subcommand)]
pub enum CredCmd {
    /// Add (or replace) a credential; only the reference is stored.
    Add(CredAdd),
    /// Names, variables, roles, programs and source kinds; never values.
    List {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a credential: no later request gets it.
    Revoke {
        /// The credential's name.
        name: String,
    },
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["from_file", "from_env", "from_command"])))]
pub struct CredAdd {
    /// A name for the credential (letters, digits, `-`, `_`).
    name: String,
    /// Environment variable the command gets the value in.
    #[arg(long)]
    env: String,
    /// Absolute path of a file holding the value.
    #[arg(long)]
    from_file: Option<String>,
    /// Variable of the daemon's environment holding the value.
    #[arg(long)]
    from_env: Option<String>,
    /// Command line whose output is the value (run by the daemon, sandboxed).
    #[arg(long)]
    from_command: Option<String>,
    /// Role granted the credential (repeatable; default: the default role).
    #[arg(long = "role")]
    roles: Vec<String>,
    /// Program that must run for it to be injected (repeatable; default: any).
    #[arg(long = "program")]
    programs: Vec<String>,
    /// Bind it to destinations: the command gets a placeholder in --env, and
    /// the egress proxy sets this header, value at `{}`, on requests to --to
    /// only (e.g. 'Authorization: Bearer {}').
    #[arg(long, requires = "to")]
    header: Option<String>,
    /// A destination of a bound credential, `host` (port 443) or
    /// `host:port` (repeatable; needs --header).
    #[arg(long = "to", requires = "header")]
    to: Vec<String>,
}

/// Seconds in a duration such as `90`, `90s`, `10m`, `2h`, `1d`.
pub(crate) fn parse_ttl(text: &str) -> Result<u64, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 90s, 10m, 2h or 1d"))?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("`{text}`: unit must be s, m, h or d")),
    };
    match n.checked_mul(scale) {
        Some(0) | None => Err(format!("`{text}` is not a usable duration")),
        Some(secs) => Ok(secs),
    }
}

#[derive(Debug, Subcommand)]
pub enum AuditCmd {
    /// Check the hash chain; exits non-zero naming the first broken seq.
    Verify {
        /// Also check the chain holds this head (`SEQ:HASH`, as `praxis audit anchor` printed it).
        #[arg(long, value_name = "SEQ:HASH")]
        anchor: Option<String>,
    },
    /// Print the chain's head (`SEQ:HASH`), to keep outside this host for `verify --anchor`.
    Anchor,
    /// The last events.
    Tail {
        /// How many events.
        #[arg(short = 'n', default_value_t = 20)]
        count: u32,
        /// Keep following new events.
        #[arg(short, long)]
        follow: bool,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Every event of one request.
    Show {
        /// The request id, or a prefix of it that only one request has.
        request_id: String,
        /// One JSON object per event instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Events as JSON Lines, for a SIEM.
    Export {
        /// JSON Lines, one event a line (the one format).
        #[arg(long, required = true)]
        jsonl: bool,
        /// RFC 3339 time (or a date) to start at.
        #[arg(long)]
        since: Option<String>,
    },
    /// Follow live non-ALLOW decisions.
    Watch {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Poll interval of `tail -f` and `watch`.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);

/// The kill file praxisd watches: `kill_file` of praxis.toml, else the default.
fn kill_file(layout: &Layout) -> std::path::PathBuf {
    std::fs::read_to_string(layout.config_dir.join("praxis.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| t.get("kill_file")?.as_str().map(std::path::PathBuf::from))
        .unwrap_or_else(|| layout.default_kill_file())
}

/// The kill switch without a daemon to ask: the file it watches is made (or
/// removed) here, and a daemon that starts later finds it.
fn kill(reason: Option<String>, release: bool) -> i32 {
    let request = if release {
        OperatorRequest::Release {
            reason: reason.clone(),
        }
    } else {
        OperatorRequest::Kill {
            reason: reason.clone(),
        }
    };
    // Asked first: in user mode this starts a daemon that is not running.
    match client::operator(request, |_| {}) {
        Err(ClientError::Unreachable { .. } | ClientError::Autostart(_)) => {}
        reply => return answer(reply),
    }
    let file = kill_file(&Layout::detect());
    let done = if release {
        std::fs::remove_file(&file).or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        })
    } else {
        std::fs::write(
            &file,
            reason.unwrap_or_else(|| String::from("engaged with praxisd down")) + "\n",
        )
    };
    match (done, release) {
        (Ok(()), false) => {
            println!(
                "praxisd is not running: wrote the kill file {}; praxisd refuses all work while it exists (praxis kill --release removes it)",
                file.display()
            );
            0
        }
        (Ok(()), true) => {
            println!(
                "praxisd is not running: removed the kill file {}",
                file.display()
            );
            0
        }
        (Err(e), _) => {
            eprintln!("praxis: {}: {e}", file.display());
            1
        }
    }
}

/// Width of the kind column: the longest kind the audit log writes
/// (`session_checkpoint_satisfied`), so session rows keep the columns.
const KIND_WIDTH: usize = 28;

/// One line per event for people.
fn human(event: &serde_json::Value) -> String {
    let s = |k: &str| {
        event
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_owned()
    };
    // The command as the agent sent it (the breakdown follows it in JSON).
    let argv = event
        .get("argv_redacted")
        .and_then(|v| v.get(0))
        .and_then(|v| v.as_str())
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
        "{:>6} {} {:<KIND_WIDTH$} {:<5} {:<20} {} {}{} {}",
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
    if !follow {
        return 0;
    }
    loop {
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
}

fn verify(anchor: Option<String>) -> i32 {
    let request = match anchor {
        None => OperatorRequest::AuditVerify,
        Some(text) => match text
            .split_once(':')
            .and_then(|(s, h)| Some((s.parse().ok()?, h)))
        {
            Some((seq, hash)) => OperatorRequest::AuditVerifyAnchor {
                seq,
                hash: hash.to_owned(),
            },
            None => {
                eprintln!("praxis: --anchor takes SEQ:HASH, as `praxis audit anchor` prints it");
                return 2;
            }
        },
    };
    match client::operator(request, |_| {}) {
        Ok(OperatorReply::Verify(v)) if v.ok => {
            println!("audit chain intact: {} events verified", v.events_checked);
            0
        }
        Ok(OperatorReply::Verify(v)) => {
            let problem = v.problem.unwrap_or_default();
            match v.first_broken {
                Some(seq) => println!("audit chain BROKEN at seq {seq}: {problem}"),
                None => println!("audit store NOT TRUSTED: {problem}"),
            }
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
            if let Some(why) = &s.audit_problem {
                println!("REFUSING ALL WORK: {why}");
            }
            for why in &s.credential_problems {
                println!("credential cannot be resolved: {why}");
            }
            if let Some(why) = &s.hold_all {
                println!("SERVING ONLY HOLD: {why}");
            }
            println!("sandbox:         {}", s.self_test);
            println!("process tracking: {}", s.process_tracking);
            println!("network: {}", s.egress);
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
            if let Some(codex) = crate::doctor::codex_hooks_summary() {
                println!("codex hooks:     {codex}");
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

fn not_allowed(e: &serde_json::Value) -> bool {
    e.get("kind").and_then(|v| v.as_str()) == Some("decided")
        && e.get("decision").and_then(|v| v.as_str()) != Some("ALLOW")
}

fn print_pending(items: &[PendingItem], json: bool) {
    if json {
        println!("{}", serde_json::to_string(items).unwrap_or_default());
        return;
    }
    if items.is_empty() {
        println!("no held requests");
    }
    for p in items {
        println!(
            "{}  {:>5} ago  role={} tier={}  {}",
            p.request_id,
            age(p.age_secs),
            p.role,
            p.tier,
            p.command.first().map_or("", String::as_str)
        );
        if p.command.len() > 1 {
            println!("    judged as: {}", p.command[1..].join(" ; "));
        }
        println!("    cwd {}  reason: {}", p.cwd, p.reason);
    }
}

fn print_credentials(items: &[CredentialInfo], json: bool) {
    if json {
        println!("{}", serde_json::to_string(items).unwrap_or_default());
        return;
    }
    if items.is_empty() {
        println!("no credentials");
    }
    for c in items {
        let programs = if c.programs.is_empty() {
            String::from("any")
        } else {
            c.programs.join(",")
        };
        println!(
            "{}  env={} source={} roles={} programs={} ({})",
            c.name,
            c.env,
            c.source_kind,
            c.roles.join(","),
            programs,
            c.origin
        );
        if let Some(bound) = &c.bound {
            println!(
                "    bound: the command holds a placeholder; the egress proxy sets `{}` on requests to {}",
                bound.header,
                bound.to.join(", ")
            );
        }
        if let Some(why) = &c.problem {
            println!("    CANNOT BE RESOLVED: {why}; commands that would get it run without it");
        }
    }
}

fn cred(cmd: CredCmd) -> i32 {
    match cmd {
        CredCmd::Add(a) => {
            let source = match (a.from_file, a.from_env, a.from_command) {
                (Some(path), _, _) if std::path::Path::new(&path).is_absolute() => {
                    CredentialSource::File(path)
                }
                (Some(path), _, _) => {
                    // The daemon reads it, from its own working directory.
                    eprintln!(
                        "praxis: --from-file needs an absolute path, not `{path}` (e.g. --from-file \"$PWD/{path}\")"
                    );
                    return 2;
                }
                (None, Some(var), _) => CredentialSource::Env(var),
                (None, None, Some(command)) => CredentialSource::Command(command),
                (None, None, None) => {
                    eprintln!("praxis: one of --from-file, --from-env, --from-command is needed");
                    return 2;
                }
            };
            simple(OperatorRequest::CredAdd(CredentialSpec {
                name: a.name,
                env: a.env,
                source,
                roles: a.roles,
                programs: a.programs,
                bound: a
                    .header
                    .map(|header| CredentialBinding { header, to: a.to }),
            }))
        }
        CredCmd::List { json } => listing(OperatorRequest::CredList, |reply| match reply {
            OperatorReply::Credentials { items } => {
                print_credentials(&items, json);
                None
            }
            other => Some(other),
        }),
        CredCmd::Revoke { name } => simple(OperatorRequest::CredRevoke { name }),
    }
}

pub fn run(cmd: OperatorCmd) -> i32 {
    match cmd {
        OperatorCmd::Pending { json } => listing(OperatorRequest::Pending, |reply| match reply {
            OperatorReply::Pending { items } => {
                print_pending(&items, json);
                None
            }
            other => Some(other),
        }),
        OperatorCmd::Approve {
            request_id,
            ttl,
            note,
            remember,
        } => simple(OperatorRequest::Approve {
            request_id,
            ttl_secs: ttl,
            note,
            remember,
        }),
        OperatorCmd::Review(args) => crate::memory::review(args),
        OperatorCmd::Inspect { memory_id, json } => crate::memory::inspect(memory_id, json),
        OperatorCmd::Memory(cmd) => crate::memory::run(cmd),
        OperatorCmd::Deny { request_id, note } => {
            simple(OperatorRequest::Deny { request_id, note })
        }
        OperatorCmd::Cred(cmd) => cred(cmd),
        OperatorCmd::Install(cmd) => crate::install::run(cmd),
        OperatorCmd::Undo(args) => crate::undo::run(args),
        OperatorCmd::Console(args) => crate::console::run(args),
        OperatorCmd::Session(cmd) => crate::session::run(cmd),
        OperatorCmd::Kill { reason, release } => kill(reason, release),
        OperatorCmd::Stop => match client::operator(OperatorRequest::Stop, |_| {}) {
            Err(ClientError::Unreachable { .. }) => {
                println!("praxisd is not running");
                0
            }
            reply => answer(reply),
        },
        OperatorCmd::Status { json } => status(json),
        OperatorCmd::Reload => simple(OperatorRequest::Reload),
        OperatorCmd::Audit(AuditCmd::Verify { anchor }) => verify(anchor),
        OperatorCmd::Audit(AuditCmd::Anchor) => {
            match client::operator(OperatorRequest::AuditAnchor, |_| {}) {
                Ok(OperatorReply::Done { message }) => {
                    println!("{}", message.replacen(' ', ":", 1));
                    0
                }
                Ok(other) => {
                    eprintln!("praxis: unexpected reply: {other:?}");
                    1
                }
                Err(e) => report(&e),
            }
        }
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
        OperatorCmd::Audit(AuditCmd::Show { request_id, json }) => events(
            OperatorRequest::AuditShow { request_id },
            json,
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

#[cfg(test)]
mod tests {
    use super::{human, parse_ttl};

    #[test]
    fn audit_rows_keep_their_columns_whatever_the_kind() {
        let row = |kind: &str, decision: &str, tier: &str| {
            human(&serde_json::json!({
                "seq": 7, "ts": "2026-01-02T03:04:05.678Z", "kind": kind,
                "decision": decision, "tier": tier, "request_id": "r-0195f3a2b7c4-9f2c1a7b3e5d",
            }))
        };
        let column = |line: String| line.find("r-0195").unwrap();
        let decided = column(row("decided", "ALLOW", "read_only"));
        for kind in ["session_steer", "session_checkpoint_satisfied", "finished"] {
            assert_eq!(column(row(kind, "", "")), decided, "{kind}");
        }
    }

    #[test]
    fn ttls_parse_with_units() {
        assert_eq!(parse_ttl("90"), Ok(90));
        assert_eq!(parse_ttl("1s"), Ok(1));
        assert_eq!(parse_ttl("10m"), Ok(600));
        assert_eq!(parse_ttl("2h"), Ok(7200));
        assert_eq!(parse_ttl("1d"), Ok(86400));
        assert!(parse_ttl("0s").is_err());
        assert!(parse_ttl("5y").is_err());
        assert!(parse_ttl("m").is_err());
    }
}

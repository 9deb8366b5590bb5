//! `praxis fleet …`: the operator's side of the fleet store. These talk to
//! PostgreSQL, not to the local praxisd, over an operator's login (`--url`,
//! `--url-file`, or `PRAXIS_FLEET_URL`); `init` needs the store owner's.

use std::future::Future;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use praxis_fleet::operator::{OperatorError, OperatorLink, UnderReview};
use praxis_fleet::policy::PolicyFiles;
use praxis_fleet::schema;
use praxis_memory::memory::Memory;
use praxis_memory::review::{self, LESSON_FRESH_FOR, ReviewAction, Reviewer, ReviewerKind};
use praxis_memory::time::Timestamp;
use praxis_policy::BUILTIN_PATTERNS;

use crate::operator::parse_ttl;

#[derive(Debug, Args)]
pub struct FleetArgs {
    /// The store's URL (postgresql://…); else `--url-file`, else $PRAXIS_FLEET_URL.
    #[arg(long, global = true)]
    url: Option<String>,
    /// A file whose first line is the store's URL (it holds a password).
    #[arg(long, global = true, conflicts_with = "url")]
    url_file: Option<PathBuf>,
    #[command(subcommand)]
    cmd: FleetCmd,
}

#[derive(Debug, Subcommand)]
enum FleetCmd {
    /// Create or migrate the schema and the roles (as the store's owner);
    /// prints each new login's password once.
    Init {
        /// A host's login to create (repeatable).
        #[arg(long = "host")]
        hosts: Vec<String>,
        /// An operator's login to create (repeatable).
        #[arg(long = "operator")]
        operators: Vec<String>,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Every host: last seen, policy revision, kill state, pending holds, audit position.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Engage the kill switch of every host (or one).
    Kill {
        /// Why, for every host's audit log and every refused agent.
        #[arg(long)]
        reason: String,
        #[arg(long)]
        host: Option<String>,
    },
    /// Release the fleet's kill switch (or one host's).
    Release {
        #[arg(long)]
        host: Option<String>,
    },
    /// Holds waiting on any host.
    Pending {
        #[arg(long)]
        json: bool,
    },
    /// Approve a held request on its host, once (ID as `fleet pending` lists it).
    Approve {
        id: String,
        /// How long the approval stays usable: 90s, 10m, 2h, 1d (default: the host's).
        #[arg(long, value_parser = parse_ttl)]
        ttl: Option<u64>,
        #[arg(long)]
        note: Option<String>,
    },
    /// Check every host's copied audit chain against its anchor.
    #[command(subcommand)]
    Audit(FleetAuditCmd),
    /// Distribute a policy revision to every host, and see who runs which.
    #[command(subcommand)]
    Policy(FleetPolicyCmd),
    /// The review queue of shared judgment memory.
    #[command(subcommand)]
    Review(FleetReviewCmd),
    /// Deny a held request on its host.
    Deny {
        id: String,
        #[arg(long)]
        note: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum FleetReviewCmd {
    /// Shared memories waiting for review, from every host.
    Queue {
        #[arg(long)]
        json: bool,
    },
    /// Confirm a shared memory: its lesson then relaxes the same HOLD on
    /// every host in its scope.
    Confirm {
        id: String,
        /// Confirm it as evidence only, shown with a HOLD, relaxing nothing.
        #[arg(long)]
        evidence: bool,
    },
    /// Reject a shared memory: it is never recalled on any host.
    Reject { id: String },
}

#[derive(Debug, Subcommand)]
enum FleetPolicyCmd {
    /// Check DIR's patterns.toml and policy.toml as praxisd loads them
    /// (every example too) and store them as the fleet's next revision.
    /// A file DIR lacks is the built-in patterns.toml, or no policy.toml.
    Push { dir: PathBuf },
    /// The revisions pushed, and which one each host runs or refused.
    Status {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum FleetAuditCmd {
    /// Every host's copy: continuous from 1, each record naming the one
    /// before, and ending at the host's reported head.
    Verify {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, thiserror::Error)]
enum FleetCliError {
    #[error("{0} host chain(s) do not verify")]
    Broken(usize),
    #[error("no store URL: give --url, --url-file or PRAXIS_FLEET_URL")]
    NoUrl,
    #[error("{path}: {source}")]
    UrlFile {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} has neither patterns.toml nor policy.toml")]
    EmptyDir(String),
    #[error("{path}: {source}")]
    PolicyFile {
        path: String,
        source: std::io::Error,
    },
    #[error("shared memory {id} does not read: {why}")]
    Memory { id: String, why: String },
    #[error(transparent)]
    Review(#[from] review::ReviewError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Operator(#[from] OperatorError),
    #[error(transparent)]
    Link(#[from] praxis_fleet::LinkError),
    #[error(transparent)]
    Schema(#[from] schema::SchemaError),
}

fn url(args: &FleetArgs) -> Result<String, FleetCliError> {
    if let Some(url) = &args.url {
        return Ok(url.clone());
    }
    if let Some(path) = &args.url_file {
        let text = std::fs::read_to_string(path).map_err(|source| FleetCliError::UrlFile {
            path: path.display().to_string(),
            source,
        })?;
        return Ok(text.lines().next().unwrap_or("").trim().to_owned());
    }
    std::env::var("PRAXIS_FLEET_URL").map_err(|_| FleetCliError::NoUrl)
}

/// DIR's revision: its `patterns.toml` (else the built-in one) and its
/// `policy.toml` (else none).
fn policy_files(dir: &Path) -> Result<PolicyFiles, FleetCliError> {
    let read = |name: &str| -> Result<Option<String>, FleetCliError> {
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(FleetCliError::PolicyFile {
                path: path.display().to_string(),
                source,
            }),
        }
    };
    let (patterns, policy) = (read("patterns.toml")?, read("policy.toml")?);
    if patterns.is_none() && policy.is_none() {
        return Err(FleetCliError::EmptyDir(dir.display().to_string()));
    }
    Ok(PolicyFiles {
        patterns: patterns.unwrap_or_else(|| BUILTIN_PATTERNS.to_owned()),
        policy,
    })
}

/// Takes one human review action on a shared memory, as its login; the
/// memory crate's rules decide what the action may do.
async fn review(
    link: &OperatorLink,
    id: &str,
    action: ReviewAction,
) -> Result<String, FleetCliError> {
    let UnderReview {
        seen,
        login,
        store_now_secs,
    } = link.memory(id).await?;
    let unreadable = |why: String| FleetCliError::Memory {
        id: id.to_owned(),
        why,
    };
    let before: Memory =
        serde_json::from_value(seen.memory.body.clone()).map_err(|e| unreadable(e.to_string()))?;
    let by = Reviewer {
        name: login,
        kind: ReviewerKind::Human,
    };
    let after = review::apply(&before, &action, &by, Timestamp(store_now_secs))?;
    after.check().map_err(|e| unreadable(e.to_string()))?;
    let body = serde_json::to_value(&after).map_err(|e| unreadable(e.to_string()))?;
    link.review_memory(&seen, after.review.as_str(), &body)
        .await?;
    Ok(format!(
        "{id}: {} by {}; now {} ({}) on every host in its scope",
        action.name(),
        by.name,
        after.review.as_str(),
        after.use_policy().as_str()
    ))
}

fn block_on<T>(work: impl Future<Output = Result<T, FleetCliError>>) -> Result<T, FleetCliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(FleetCliError::Runtime)?
        .block_on(work)
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn ago(secs: Option<f64>) -> String {
    match secs {
        None => String::from("never"),
        Some(s) => format!("{:.0}s ago", s.max(0.0)),
    }
}

pub fn run(args: FleetArgs) -> i32 {
    let outcome = url(&args).and_then(|url| block_on(dispatch(url, args.cmd)));
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("praxis fleet: {e}");
            1
        }
    }
}

async fn dispatch(url: String, cmd: FleetCmd) -> Result<(), FleetCliError> {
    if let FleetCmd::Init {
        hosts,
        operators,
        json: as_json,
    } = &cmd
    {
        let (mut client, _notices) = praxis_fleet::connect(&url).await?;
        let done = schema::init(&mut client, hosts, operators).await?;
        if *as_json {
            println!("{}", json(&done));
        } else {
            println!(
                "fleet schema at version {} (applied now: {:?})",
                done.version, done.applied
            );
            for login in &done.created {
                println!("created {} with password {}", login.role, login.password);
            }
            for role in &done.existing {
                println!("{role} exists (password unchanged)");
            }
        }
        return Ok(());
    }
    let link = OperatorLink::connect(&url).await?;
    match cmd {
        FleetCmd::Init { .. } => {}
        FleetCmd::Status { json: as_json } => {
            let hosts = link.status().await?;
            if as_json {
                let kill = link.kill_rows().await?;
                println!(
                    "{}",
                    json(&serde_json::json!({ "hosts": hosts, "kill": kill }))
                );
            } else {
                for h in hosts {
                    println!(
                        "{:<20} seen {:<10} revision {:<14} {} pending {} audit seq {} (lag {})",
                        h.name,
                        ago(h.last_seen_secs),
                        h.policy_revision.as_deref().unwrap_or("-"),
                        match (&h.killed, &h.kill_reason) {
                            (true, Some(r)) => format!("KILLED ({r})"),
                            (true, None) => String::from("KILLED"),
                            (false, _) => String::from("running"),
                        },
                        h.pending,
                        h.audit_seq,
                        h.audit_seq - h.audit_copied
                    );
                }
            }
        }
        FleetCmd::Kill { reason, host } => {
            link.kill(&reason, host.as_deref()).await?;
            println!(
                "fleet kill switch engaged for {}",
                host.as_deref().unwrap_or("every host")
            );
        }
        FleetCmd::Release { host } => {
            let still = link.release(host.as_deref()).await?;
            println!(
                "fleet kill switch released for {}",
                host.as_deref().unwrap_or("every host")
            );
            if still {
                println!(
                    "the fleet-wide kill order still holds it: `praxis fleet release` lifts that"
                );
            }
        }
        FleetCmd::Pending { json: as_json } => {
            let holds = link.pending().await?;
            if as_json {
                println!("{}", json(&holds));
            } else if holds.is_empty() {
                println!("no holds waiting");
            } else {
                for h in holds {
                    println!("{}  {:.0}s  {}", h.id, h.age_secs, h.command);
                    println!("    reason: {}", h.reason);
                    if !h.grants.is_empty() {
                        println!("    grants: {}", h.grants.join(", "));
                    }
                }
            }
        }
        FleetCmd::Approve { id, ttl, note } => {
            let full = link.decide(&id, true, ttl, note.as_deref()).await?;
            println!("approved {full}: its host lets the same request run once");
        }
        FleetCmd::Audit(FleetAuditCmd::Verify { json: as_json }) => {
            let checks = link.verify_audit().await?;
            if as_json {
                println!("{}", json(&checks));
            } else {
                for c in &checks {
                    let state = match (c.problems.is_empty(), c.anchored) {
                        (true, true) => String::from("ok"),
                        (true, false) => {
                            String::from("ok so far (the copy has not reached the anchor)")
                        }
                        (false, _) => format!("BROKEN: {}", c.problems.join("; ")),
                    };
                    println!(
                        "{:<20} {} records, anchor {}: {state}",
                        c.host, c.records, c.anchor_seq
                    );
                }
            }
            let broken = checks.iter().filter(|c| !c.problems.is_empty()).count();
            if broken > 0 {
                return Err(FleetCliError::Broken(broken));
            }
        }
        FleetCmd::Review(FleetReviewCmd::Queue { json: as_json }) => {
            let queue = link.review_queue().await?;
            if as_json {
                println!("{}", json(&queue));
            } else if queue.is_empty() {
                println!("no shared memory waiting for review");
            } else {
                for m in queue {
                    let summary = m.memory.body["item"]["summary"].as_str().unwrap_or("");
                    println!(
                        "{}  {} ({} of {}, from {})",
                        m.memory.id, summary, m.memory.visibility, m.memory.workspace, m.host
                    );
                }
            }
        }
        FleetCmd::Review(FleetReviewCmd::Confirm { id, evidence }) => {
            let lesson = !link.memory(&id).await?.seen.memory.body["lesson"].is_null();
            let action = ReviewAction::Confirm {
                as_instruction: !evidence,
                fresh_for: (lesson && !evidence).then_some(LESSON_FRESH_FOR),
            };
            println!("{}", review(&link, &id, action).await?);
        }
        FleetCmd::Review(FleetReviewCmd::Reject { id }) => {
            println!("{}", review(&link, &id, ReviewAction::Reject).await?);
        }
        FleetCmd::Policy(FleetPolicyCmd::Push { dir }) => {
            let pushed = link.push_policy(&policy_files(&dir)?).await?;
            println!(
                "pushed policy revision {} ({}): every host loads it",
                pushed.number, pushed.revision
            );
        }
        FleetCmd::Policy(FleetPolicyCmd::Status { json: as_json }) => {
            let status = link.policy_status(10).await?;
            if as_json {
                println!("{}", json(&status));
            } else {
                for r in &status.revisions {
                    println!(
                        "revision {:<4} {}  by {}  {}",
                        r.number,
                        r.revision,
                        r.operator,
                        ago(Some(r.age_secs))
                    );
                }
                for h in &status.hosts {
                    let runs = match h.fleet_policy {
                        Some(n) => format!("runs revision {n}"),
                        None => String::from("runs its local policy"),
                    };
                    print!(
                        "{:<20} {runs} ({}), seen {}",
                        h.host,
                        h.policy_revision.as_deref().unwrap_or("-"),
                        ago(h.last_seen_secs)
                    );
                    if let (Some(n), Some(why)) = (h.refused, &h.refused_why) {
                        print!("; REFUSED revision {n}: {why}");
                    }
                    println!();
                }
            }
        }
        FleetCmd::Deny { id, note } => {
            let full = link.decide(&id, false, None, note.as_deref()).await?;
            println!("denied {full}");
        }
    }
    Ok(())
}

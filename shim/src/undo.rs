//! `praxis undo`: puts back what a reversible command removed or overwrote,
//! from the snapshot praxisd took before it ran. An operator command: the
//! daemon refuses it from inside any command it runs.

use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use praxis_proto::{OperatorReply, OperatorRequest, SnapshotInfo};

use crate::reply::{age, listing, simple};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["request_id", "list"])))]
pub struct UndoArgs {
    /// The request whose command to undo (as `praxis audit tail` shows it).
    request_id: Option<String>,
    /// Restore even if the files changed since the command ran.
    #[arg(long, conflicts_with = "list")]
    force: bool,
    /// Show what can be undone, and until when, newest first.
    #[arg(long)]
    list: bool,
    /// With --list: one JSON array.
    #[arg(long, requires = "list")]
    json: bool,
}

fn print(items: &[SnapshotInfo], json: bool) {
    if json {
        println!("{}", serde_json::to_string(items).unwrap_or_default());
        return;
    }
    if items.is_empty() {
        println!("nothing to undo");
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for s in items {
        let state = match (s.restored_at, s.sealed) {
            (Some(_), _) => String::from("undone"),
            (None, true) => format!("undoable for {}", age(s.expires_at.saturating_sub(now))),
            (None, false) => {
                String::from("command still running or ended unrecorded (needs --force)")
            }
        };
        println!(
            "{}  {:>5} ago  {} files, {} bytes  {}  in {}",
            s.request_id,
            age(now.saturating_sub(s.created_at)),
            s.files,
            s.bytes,
            state,
            s.workspace
        );
    }
}

pub fn run(args: UndoArgs) -> i32 {
    match args.request_id {
        Some(request_id) if !args.list => simple(OperatorRequest::Undo {
            request_id,
            force: args.force,
        }),
        _ => listing(OperatorRequest::UndoList, |reply| match reply {
            OperatorReply::Snapshots { items } => {
                print(&items, args.json);
                None
            }
            other => Some(other),
        }),
    }
}

//! `praxis console`: a one-time login URL to praxisd's web console, as
//! Jupyter prints one. It opens a browser where there is a display and it
//! is not run by CI; `--url` only prints the URL, for scripts.

use std::process::{Command, Stdio};

use clap::Args;
use praxis_proto::{OperatorReply, OperatorRequest};

use crate::client;
use crate::reply::answer;

#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// Print the login URL and exit, opening nothing.
    #[arg(long)]
    url: bool,
}

/// Whether a browser may be opened here: a graphical session, and no CI.
fn may_open_browser() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    !set("CI") && (set("DISPLAY") || set("WAYLAND_DISPLAY"))
}

pub fn run(args: ConsoleArgs) -> i32 {
    let url = match client::operator(OperatorRequest::ConsoleLogin, |_| {}) {
        Ok(OperatorReply::Console { url }) => url,
        other => return answer(other),
    };
    if args.url {
        println!("{url}");
        return 0;
    }
    println!(
        "The Praxis console, for you alone (the link logs in once, within 10 minutes):\n\n    {url}\n"
    );
    if may_open_browser() {
        let opened = Command::new("xdg-open")
            .arg(&url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Err(e) = opened {
            eprintln!("praxis: no browser opened (xdg-open: {e}); open the link above");
        }
    }
    0
}

//! Invariant 1, "one path": nothing but the sandbox crate's spawn module
//! starts a host process. This test reads the sources of every crate that
//! could (proto, policy, daemon, shim) and fails on any process-starting API.
//!
//! Two other files are allowed. The client module starts praxisd itself
//! (`praxis-run`'s user-mode auto-start and the offline `praxisd verify`):
//! our own daemon binary, never an agent's command. The console command
//! opens the operator's browser on the console's login URL (`xdg-open`):
//! an operator's own act on their desktop; inside a command `praxis
//! console` is STOP before it runs.

use std::fs;
use std::path::Path;

use praxis_e2e::module_graph::rust_files;

/// Process-starting APIs. Built from pieces so this file does not match itself.
fn needles() -> Vec<String> {
    [
        ("Command", "::new("),
        ("process::", "Command"),
        ("fork", "("),
        ("vfork", "("),
        ("execv", ""),
        ("execve", ""),
        ("posix_", "spawn"),
        ("libc::", "system("),
        ("clone3", ""),
        ("SYS_", "clone"),
    ]
    .iter()
    .map(|(a, b)| format!("{a}{b}"))
    .collect()
}

/// Files allowed to start a process, relative to the workspace root.
const ALLOWED: &[&str] = &["shim/src/client.rs", "shim/src/console.rs"];

#[test]
fn only_the_sandbox_spawns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    let mut files = Vec::new();
    for krate in ["proto/src", "policy/src", "daemon/src", "shim/src"] {
        rust_files(&root.join(krate), &mut files);
    }
    assert!(
        files.len() > 10,
        "found only {} source files under {}",
        files.len(),
        root.display()
    );
    let needles = needles();
    let mut offenders = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if ALLOWED.contains(&rel.as_str()) {
            continue;
        }
        let text = fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            // clap's argument builder shares the name; spelled in full it is
            // not a process.
            let code = line
                .split("//")
                .next()
                .unwrap_or("")
                .replace("clap::Command::new(", "");
            for needle in &needles {
                if code.contains(needle.as_str()) {
                    offenders.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "process starts outside the sandbox spawn module:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_allowed_client_starts_only_praxisd() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = fs::read_to_string(root.join(ALLOWED[0])).unwrap();
    let starts: Vec<&str> = text.lines().filter(|l| l.contains(&needles()[0])).collect();
    assert!(!starts.is_empty());
    assert!(
        starts.iter().all(|l| l.contains("praxisd_path()")),
        "{starts:?}"
    );
}

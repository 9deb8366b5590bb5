//! Writes to the repository's git config that the policy allows, or an
//! operator approves, run with a grant for exactly that file: a real
//! praxisd, real git, the sandbox's read-only pins. `.git/hooks` stays
//! unwritable in the same commands.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{Daemon, signal_json};

/// `git config --get KEY` in `dir`, outside the sandbox.
fn config_value(dir: &Path, key: &str) -> String {
    let out = Command::new("git")
        .args(["config", "--get", key])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn ran_ok(out: &Output) {
    assert!(out.status.success(), "{out:?}");
}

/// The request id of a HOLD, from the audit signal.
fn held(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let signal = signal_json(out);
    assert_eq!(signal["decision"], "HOLD", "{signal}");
    signal["request_id"].as_str().unwrap().to_owned()
}

fn hook_absent(d: &Daemon) {
    assert!(
        !d.work().join(".git/hooks/pre-commit").exists(),
        "a hook was written"
    );
}

#[test]
fn allowed_git_config_changes_write_the_repository_config_and_nothing_else() {
    let d = Daemon::start_in_git();
    let config = d.work().join(".git/config");

    ran_ok(&d.run(&["--", "git", "config", "user.email", "a@b"]));
    assert_eq!(config_value(&d.work(), "user.email"), "a@b");

    let remote = "https://example.invalid/x.git";
    ran_ok(&d.run(&["--", "git", "remote", "add", "origin", remote]));
    assert_eq!(config_value(&d.work(), "remote.origin.url"), remote);

    // The decision names the grant, and only that file.
    let explained = d.praxis(&["explain", "--", "git", "config", "user.name", "A"]);
    let text = String::from_utf8_lossy(&explained.stdout);
    assert!(
        text.contains(&format!("will write {}", config.display())),
        "{explained:?}"
    );

    // The grant would cover every command of the request: with a script
    // beside the git command it is held, and once approved the script still
    // cannot write a hook.
    std::fs::write(
        d.work().join("hook.sh"),
        "#!/bin/sh\necho evil > .git/hooks/pre-commit\n",
    )
    .unwrap();
    let shared = "git config user.name A && sh hook.sh";
    let id = held(&d.run(&["-c", shared]));
    assert!(d.praxis(&["approve", &id]).status.success());
    let out = d.run(&["-c", shared]);
    assert!(!matches!(out.status.code(), Some(0 | 125 | 126)), "{out:?}");
    assert_eq!(config_value(&d.work(), "user.name"), "A");
    hook_absent(&d);

    // A key that can run something stays held, and nothing is written.
    let before = std::fs::read_to_string(&config).unwrap();
    held(&d.run(&["--", "git", "config", "core.hooksPath", "x"]));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

#[test]
fn an_approved_append_to_the_git_config_runs_while_hooks_stay_pinned() {
    let d = Daemon::start_in_git();
    let config = d.work().join(".git/config");
    // The script names no path the policy could grant: only the config is.
    std::fs::write(
        d.work().join("hook.sh"),
        "#!/bin/sh\necho evil > .git/hooks/pre-commit\n",
    )
    .unwrap();
    let command = "printf '[x]\\n' >> .git/config; sh hook.sh";

    let id = held(&d.run(&["-c", command]));
    assert!(!std::fs::read_to_string(&config).unwrap().contains("[x]"));
    let approved = d.praxis(&["approve", &id]);
    assert!(approved.status.success(), "{approved:?}");

    let out = d.run(&["-c", command]);
    assert_ne!(out.status.code(), Some(125), "approved: {out:?}");
    assert!(
        std::fs::read_to_string(&config).unwrap().ends_with("[x]\n"),
        "{out:?}"
    );
    hook_absent(&d);
}

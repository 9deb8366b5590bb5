//! A program the policy does not know, found outside every writable tree,
//! runs contained end to end: a real praxisd checkpoints the workspace first,
//! runs it without network, and `praxis undo` puts back what it changed; a
//! role whose posture is `hold` holds it and nothing changes.

mod common;

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::{Daemon, bin, last_finished, signal_json, tree};

const CAREFUL_ROLE: &str = "[roles.careful]\nread_only = \"allow\"\nreversible_write = \"allow\"\n\
     external_side_effect = \"hold\"\nhigh_risk = \"hold\"\nunknown = \"hold\"\n";

/// A directory of programs in a tree commands may read (`/opt` is a system
/// read) and no request can write: neither the workspace, a cache nor the
/// shared `/tmp`.
fn tool_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("praxis-e2e-tools-")
        .tempdir_in("/opt")
        .expect("a scratch directory in /opt (the end-to-end tests run as root)")
}

/// Installs `script` as the executable `name` in `dir`.
fn install(dir: &Path, name: &str, script: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, script).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `PATH` with `dir` first.
fn tools_path(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `praxis-run` with `dir` first on the PATH the daemon resolves names on.
fn run_with_tools(d: &Daemon, dir: &Path, args: &[&str]) -> Output {
    d.cmd(&bin("praxis-run"))
        .env("PATH", tools_path(dir))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn an_unknown_program_runs_checkpointed_and_is_undone_and_a_hold_role_holds_it() {
    let tools = tool_dir();
    install(
        tools.path(),
        "scrub-tool",
        "#!/bin/sh\nrm -f src/lib.rs\nrm -rf drafts\nprintf 'rewritten\\n' > README.md\n\
         echo created > new.txt\necho scrubbed\n",
    );
    let d = Daemon::start_with(&[("policy.toml", CAREFUL_ROLE)], &[]);
    let w = d.work();
    fs::create_dir_all(w.join("src")).unwrap();
    fs::create_dir_all(w.join("drafts")).unwrap();
    fs::write(w.join("src/lib.rs"), b"pub fn answer() -> u32 { 42 }\n").unwrap();
    fs::write(w.join("README.md"), b"# keep this text\n").unwrap();
    fs::write(w.join("drafts/idea.md"), b"an untracked draft\n").unwrap();
    let before = tree(&w);

    // A role whose posture is `hold`: held, and nothing changes.
    let out = run_with_tools(&d, tools.path(), &["--role", "careful", "--", "scrub-tool"]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert_eq!(signal_json(&out)["decision"], "HOLD", "{out:?}");
    assert_eq!(tree(&w), before, "a held unknown program changed nothing");

    // Role agent: contained, T1, the workspace checkpointed first.
    let out = run_with_tools(&d, tools.path(), &["--", "scrub-tool"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("scrubbed"));
    assert!(!w.join("src/lib.rs").exists() && !w.join("drafts").exists());
    let id = last_finished(&d);
    let decided = &d.events_of(&id)[0];
    let reason = decided["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("unknown program `scrub-tool`, run contained")
            && reason.contains("workspace checkpoint"),
        "{decided}"
    );
    assert_eq!(d.events_of_kind("snapshot").len(), 1);

    // `praxis explain` shows the same judgment.
    let explained = d
        .cmd(&bin("praxis"))
        .env("PATH", tools_path(tools.path()))
        .args(["explain", "--", "scrub-tool"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&explained.stdout);
    assert!(
        text.contains("unknown program `scrub-tool`, run contained")
            && text.contains("reversible_write"),
        "{text}"
    );

    let undone = d.praxis(&["undo", &id]);
    assert!(undone.status.success(), "{undone:?}");
    assert_eq!(tree(&w), before, "undo put back what the program changed");
}

#[test]
fn a_contained_unknown_program_reaches_no_network() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let tools = tool_dir();
    // bash's /dev/tcp needs no other program: only the sandbox stands between.
    install(
        tools.path(),
        "phone-home",
        &format!(
            "#!/bin/bash\nfor to in 127.0.0.1/{port} 1.1.1.1/80; do\n\
             if timeout 3 bash -c \"exec 3<>/dev/tcp/$to\" 2>/dev/null; \
             then echo \"reached $to\"; else echo \"unreachable $to\"; fi\ndone\n"
        ),
    );
    let d = Daemon::start();
    let out = run_with_tools(&d, tools.path(), &["--", "phone-home"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("unreachable 127.0.0.1/{port}"))
            && stdout.contains("unreachable 1.1.1.1/80")
            && !stdout.lines().any(|l| l.starts_with("reached")),
        "{stdout}"
    );
    assert!(
        listener.accept().is_err(),
        "the host's listener was reached"
    );
    assert!(d.egress_events().is_empty(), "{:?}", d.egress_events());

    // Asking for network in the same request holds the whole of it.
    let out = run_with_tools(
        &d,
        tools.path(),
        &["-c", "phone-home; curl -s https://example.com"],
    );
    assert_eq!(out.status.code(), Some(125), "{out:?}");
}

#[test]
fn an_unknown_program_in_a_workspace_too_large_to_checkpoint_is_held_naming_the_size() {
    let tools = tool_dir();
    install(tools.path(), "wipe-tool", "#!/bin/sh\nrm -rf big\n");
    let d = Daemon::start_with(&[("praxis.toml", "[snapshots]\nmax_mib = 1\n")], &[]);
    let big = d.work().join("big");
    fs::create_dir_all(&big).unwrap();
    fs::write(big.join("blob.bin"), vec![1u8; 2 << 20]).unwrap();
    let out = run_with_tools(&d, tools.path(), &["--", "wipe-tool"]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let reason = signal_json(&out)["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains("not reversible")
            && reason.contains(&format!("{} bytes", 2 << 20))
            && reason.contains("per-command limit"),
        "{reason}"
    );
    assert!(big.join("blob.bin").exists(), "nothing ran uncheckpointed");
}

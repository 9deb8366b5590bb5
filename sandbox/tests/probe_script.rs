//! The shape of the acceptance check: one shell script in a git workspace,
//! under the default command profile (workspace-write, network off), tries
//! every kind of write and escape; only the write inside the workspace and
//! the one into the scratch TMPDIR may succeed.

mod common;

use std::fs;
use std::net::TcpListener;
use std::process::Command;

use common::{Fixture, run_in};
use praxis_sandbox::{Network, Profile};

#[test]
fn only_the_workspace_and_tmpdir_writes_succeed() {
    let fx = Fixture::new();
    if common::have("git") {
        assert!(
            Command::new("git")
                .args(["init", "-q"])
                .current_dir(&fx.ws)
                .status()
                .unwrap()
                .success()
        );
    } else {
        fs::create_dir_all(fx.ws.join(".git/hooks")).unwrap();
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = fx.outside.join("escaped");
    let script = format!(
        r#"
try() {{ name=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "ALLOWED $name"; else echo "denied $name"; fi; }}
try workspace sh -c 'echo x > inside.txt'
try tmpdir sh -c 'echo x > "$TMPDIR/t"'
try outside sh -c 'echo x > {outside}'
try hooks sh -c 'echo x > .git/hooks/pre-commit'
try hooks-dir sh -c 'rm -rf .git/hooks && mkdir .git/hooks'
try secret sh -c 'cat "$HOME/.ssh/id_rsa"'
try tcp-bash bash -c 'echo x > /dev/tcp/127.0.0.1/{port}'
try tcp-python python3 -c 'import socket; socket.create_connection(("127.0.0.1", {port}), 2)'
try cache sh -c 'echo x > "$HOME/.cache/c"'
try proc-self sh -c 'test -r /proc/self/status && grep -q NoNewPrivs /proc/self/status'
try signal-1 kill -0 1
try signal-term-1 kill -TERM 1
"#,
        outside = outside.display()
    );
    fs::write(fx.ws.join("probe.sh"), script).unwrap();
    // Path lists as the daemon hands them over from the policy file.
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.protected = [
        ".git/hooks",
        ".git/config",
        ".bashrc",
        ".claude",
        ".mcp.json",
        ".praxis",
    ]
    .iter()
    .map(Into::into)
    .collect();
    spec.secrets = vec![
        fx.home.join(".ssh"),
        fx.home.join(".aws"),
        "/etc/shadow".into(),
        "/etc/ssh/ssh_host_*".into(),
        "/proc/self/environ".into(),
    ];
    fs::create_dir_all(fx.home.join(".cache")).unwrap();
    spec.writable_caches = vec![fx.home.join(".cache"), fx.home.join(".npm")];
    let ran = run_in(&spec, &fx.ws, &["sh", "probe.sh"]);
    assert!(ran.ok(), "{}", ran.output);
    let allowed: Vec<&str> = ran
        .output
        .lines()
        .filter_map(|l| l.strip_prefix("ALLOWED "))
        .collect();
    // The cache write is allowed by design (a writable tool cache), and the
    // process still sees its own /proc entries.
    assert_eq!(
        allowed,
        ["workspace", "tmpdir", "cache", "proc-self"],
        "{}",
        ran.output
    );
    assert!(ran.output.lines().count() >= 10, "{}", ran.output);
    assert!(!outside.exists());
    assert!(!fx.ws.join(".git/hooks/pre-commit").exists());
}

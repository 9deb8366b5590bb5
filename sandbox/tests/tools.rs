//! Real tools under workspace-write with the network off. The home is the
//! real one (toolchain managers live there), readable as the built-in
//! allow-list says, its secrets carved out, its caches writable. A missing
//! tool is skipped with a notice.

mod common;

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use common::{Fixture, have, sh};
use praxis_sandbox::{Network, Profile, Spec};

fn tool_spec(fx: &Fixture) -> Spec {
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME"));
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.secrets = [".ssh", ".aws", ".gnupg", ".config/gh", ".netrc"]
        .iter()
        .map(|s| home.join(s))
        .collect();
    spec.writable_caches = [".cache", ".cargo/registry", ".cargo/git", ".npm"]
        .iter()
        .map(|c| home.join(c))
        .collect();
    let policy = praxis_policy::Policy::builtin().expect("built-in policy");
    spec.reads = policy.sandbox_lists().reads_in(&home);
    spec.home = home;
    // Tools run longer than probes and read more files.
    spec.rlimits.cpu_secs = 120;
    spec.rlimits.nofile = 1024;
    spec.rlimits.fsize_bytes = 1 << 30;
    spec
}

#[test]
fn git_add_commit_stash_work() {
    if !have("git") {
        return;
    }
    let fx = Fixture::new();
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&fx.ws)
        .status()
        .unwrap();
    assert!(init.success());
    assert!(
        fx.ws.join(".git/hooks").is_dir(),
        "git init makes the hooks dir"
    );
    fs::write(fx.ws.join("a.txt"), "one\n").unwrap();
    let spec = tool_spec(&fx);
    let id = "git -c user.name=t -c user.email=t@example.invalid -c commit.gpgsign=false";
    let script = format!(
        "set -e; git add a.txt; {id} commit -qm first; echo two >> a.txt; {id} stash -q; \
         test \"$(cat a.txt)\" = one; {id} stash pop -q; git log --oneline | wc -l"
    );
    let ran = sh(&spec, &script);
    assert!(ran.ok(), "{}", ran.output);
    assert_eq!(ran.output.trim(), "1");
    assert_eq!(
        fs::read_to_string(fx.ws.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    // Still no way into the hooks.
    assert!(!sh(&spec, "echo evil > .git/hooks/pre-commit").ok());
}

#[test]
fn make_builds() {
    if !have("make") {
        return;
    }
    let fx = Fixture::new();
    fs::write(
        fx.ws.join("Makefile"),
        "out.txt: in.txt\n\tcp in.txt out.txt\n",
    )
    .unwrap();
    fs::write(fx.ws.join("in.txt"), "made\n").unwrap();
    let ran = sh(&tool_spec(&fx), "make -s");
    assert!(ran.ok(), "{}", ran.output);
    assert_eq!(fs::read_to_string(fx.ws.join("out.txt")).unwrap(), "made\n");
}

#[test]
fn python_unittest_runs() {
    if !have("python3") {
        return;
    }
    let fx = Fixture::new();
    fs::write(
        fx.ws.join("test_x.py"),
        "import tempfile, unittest\n\
         class T(unittest.TestCase):\n\
         \x20   def test_tmp(self):\n\
         \x20       with tempfile.NamedTemporaryFile() as f:\n\
         \x20           f.write(b'x')\n\
         \x20       self.assertTrue(True)\n",
    )
    .unwrap();
    let ran = sh(&tool_spec(&fx), "python3 -m unittest -q test_x 2>&1");
    assert!(ran.ok(), "{}", ran.output);
    assert!(ran.output.contains("OK"), "{}", ran.output);
}

#[test]
fn cargo_builds_and_tests_offline() {
    if !have("cargo") {
        return;
    }
    let fx = Fixture::new();
    let new = Command::new("cargo")
        .args(["new", "--quiet", "--vcs", "none", "--lib", "tiny"])
        .current_dir(&fx.ws)
        .status()
        .unwrap();
    assert!(new.success());
    let mut spec = tool_spec(&fx);
    spec.workspace = fx.ws.join("tiny");
    let ran = sh(&spec, "cargo test --offline --quiet 2>&1");
    assert!(ran.ok(), "{}", ran.output);
    assert!(fx.ws.join("tiny/target").is_dir());
}

#[test]
fn npm_test_runs() {
    if !have("npm") || !have("node") {
        return;
    }
    let fx = Fixture::new();
    fs::write(
        fx.ws.join("package.json"),
        r#"{"name":"tiny","version":"1.0.0","scripts":{"test":"node -e \"require('fs').writeFileSync('ok.txt','ok')\""}}"#,
    )
    .unwrap();
    let ran = sh(&tool_spec(&fx), "npm test --silent --offline 2>&1");
    assert!(ran.ok(), "{}", ran.output);
    assert_eq!(fs::read_to_string(fx.ws.join("ok.txt")).unwrap(), "ok");
}

//! The credential broker end to end: `praxis cred add/list/revoke` against a
//! real daemon, values injected into real sandboxed children, masked in what
//! the agent sees, and absent from everything the daemon writes.

mod common;

use std::path::Path;

use common::{Daemon, contains};

/// A value with characters that base64 and URL encoding change.
const VALUE: &str = "ghp_Tk9/x+Qz7Lm=Vb3Rw8Yc2Nd5Hf0Js6Pa";

/// Output of a coreutils filter fed `input`, trimmed (the test does not
/// trust its own encoders more than the tools the commands use).
fn filter(program: &str, args: &[&str], input: &[u8]) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn sha256_hex(bytes: &[u8]) -> String {
    filter("sha256sum", &[], bytes)[..64].to_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn ok(out: &std::process::Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {} stderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn add_file_credential(d: &Daemon, extra: &[&str]) {
    let file = d.dir.path().join("home/gh-token");
    std::fs::write(&file, format!("{VALUE}\n")).unwrap();
    let mut args = vec![
        "cred",
        "add",
        "gh",
        "--env",
        "GH_TOKEN",
        "--from-file",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ok(&d.praxis(&args));
}

/// Every byte of every file under `dir`, SQLite WAL and shm included.
fn every_byte(dir: &Path, out: &mut Vec<u8>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            every_byte(&path, out);
        } else if meta.is_file() {
            out.extend(std::fs::read(&path).unwrap_or_default());
        }
    }
}

#[test]
fn a_file_credential_reaches_the_child_but_never_the_output_or_the_disk() {
    let d = Daemon::start();
    add_file_credential(&d, &[]);

    let out = d.run(&["-c", "printf %s \"$GH_TOKEN\" | sha256sum"]);
    let text = ok(&out);
    assert!(
        text.starts_with(&sha256_hex(VALUE.as_bytes())),
        "the child got the value: {text}"
    );

    let b64 = filter("base64", &["-w0"], VALUE.as_bytes());
    let forms = [
        VALUE.to_owned(),
        b64.clone(),
        b64.replace('+', "-").replace('/', "_").replace('=', ""),
        hex(VALUE.as_bytes()),
    ];
    for script in [
        "printf '%s\\n' \"$GH_TOKEN\"",
        "printf %s \"$GH_TOKEN\" | base64",
        "printf %s \"$GH_TOKEN\" | base64 -w0 | tr '+/' '-_' | tr -d =",
        "printf %s \"$GH_TOKEN\" | od -An -tx1 -v | tr -d ' \\n'",
        // Split across two reads of the daemon.
        "printf %s \"${GH_TOKEN:0:14}\"; sleep 0.2; printf '%s\\n' \"${GH_TOKEN:14}\"",
        "printf %s \"${GH_TOKEN:0:14}\" >&2; sleep 0.2; printf '%s\\n' \"${GH_TOKEN:14}\" >&2",
        // Split between stdout and stderr, either way round.
        "echo start; printf %s \"${GH_TOKEN:0:14}\"; printf '%s\\n' \"${GH_TOKEN:14}\" >&2; echo end",
        "printf %s \"${GH_TOKEN:0:14}\" >&2; sleep 0.2; printf '%s\\n' \"${GH_TOKEN:14}\"",
    ] {
        let out = d.run(&["-c", script]);
        let shown = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        assert_eq!(out.status.code(), Some(0), "{script}: {out:?}");
        assert!(
            contains(&shown, b"[REDACTED:gh]"),
            "{script}: {}",
            String::from_utf8_lossy(&shown)
        );
        for form in &forms {
            assert!(!contains(&shown, form.as_bytes()), "{script} leaked {form}");
        }
        for half in [&VALUE[..14], &VALUE[14..]] {
            assert!(!contains(&shown, half.as_bytes()), "{script} leaked {half}");
        }
    }

    let listed = ok(&d.praxis(&["cred", "list", "--json"]));
    assert!(!listed.contains(VALUE));
    let list: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(list[0]["name"], "gh");
    assert_eq!(list[0]["source_kind"], "file");
    assert_eq!(list[0]["roles"], serde_json::json!(["agent"]));

    let injected: Vec<_> = d
        .events_of_kind("decided")
        .into_iter()
        .filter(|e| e["credentials"] == serde_json::json!(["gh"]))
        .collect();
    assert!(!injected.is_empty(), "the audit names injected credentials");
    assert!(ok(&d.praxis(&["audit", "verify"])).contains("intact"));

    let mut bytes = Vec::new();
    every_byte(&d.dir.path().join("state"), &mut bytes);
    every_byte(&d.dir.path().join("run"), &mut bytes);
    assert!(
        bytes.len() > 10_000,
        "the state was read: {} bytes",
        bytes.len()
    );
    for form in &forms {
        assert!(!contains(&bytes, form.as_bytes()), "{form} at rest");
    }
}

#[test]
fn revoke_takes_effect_for_the_next_request() {
    let d = Daemon::start();
    add_file_credential(&d, &[]);
    let probe = ["-c", "printf '%s\\n' \"${GH_TOKEN:-unset}\""];
    assert!(ok(&d.run(&probe)).contains("[REDACTED:gh]"));
    ok(&d.praxis(&["cred", "revoke", "gh"]));
    assert_eq!(ok(&d.run(&probe)), "unset\n");
    assert!(ok(&d.praxis(&["cred", "list"])).contains("no credentials"));
    let kinds: Vec<_> = d
        .events()
        .into_iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .filter(|k| k.starts_with("credential_"))
        .collect();
    assert_eq!(kinds, ["credential_added", "credential_revoked"]);
    assert!(!d.praxis(&["cred", "revoke", "gh"]).status.success());
}

#[test]
fn grants_follow_programs_and_roles() {
    let d = Daemon::start();
    add_file_credential(&d, &["--program", "printenv"]);
    let out = d.run(&["--", "printenv", "GH_TOKEN"]);
    assert_eq!(ok(&out), "[REDACTED:gh]\n");
    // `wc` is not granted: a pipeline through it gets nothing.
    let out = d.run(&["-c", "printenv GH_TOKEN | wc -c"]);
    assert_eq!(ok(&out).trim(), "0");
    // Another role does not get it either.
    let out = d.run(&["--role", "ci", "--", "printenv", "GH_TOKEN"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
}

#[test]
fn env_and_command_sources_are_resolved_by_the_daemon() {
    let d = Daemon::start_with(&[], &[("PRAXIS_TEST_SECRET", "from-env-7f3a9c1e5b")]);
    ok(&d.praxis(&[
        "cred",
        "add",
        "envcred",
        "--env",
        "ENV_CRED",
        "--from-env",
        "PRAXIS_TEST_SECRET",
    ]));
    ok(&d.praxis(&[
        "cred",
        "add",
        "cmdcred",
        "--env",
        "CMD_CRED",
        "--from-command",
        "printf '%s\\n' from-command-4d2b8e6a",
    ]));
    let out = d.run(&[
        "-c",
        "printf %s \"$ENV_CRED\" | sha256sum; printf %s \"$CMD_CRED\" | sha256sum",
    ]);
    let text = ok(&out);
    assert!(text.contains(&sha256_hex(b"from-env-7f3a9c1e5b")), "{text}");
    assert!(
        text.contains(&sha256_hex(b"from-command-4d2b8e6a")),
        "{text}"
    );
    // A source that cannot give a value is refused when it is added.
    let out = d.praxis(&[
        "cred",
        "add",
        "broken",
        "--env",
        "BROKEN",
        "--from-env",
        "PRAXIS_TEST_NOT_SET",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("PRAXIS_TEST_NOT_SET"));
    // One that fails only when used (a command that prints nothing) affects
    // only the commands that would get it: they run without it, and say so.
    ok(&d.praxis(&[
        "cred",
        "add",
        "silent",
        "--env",
        "SILENT_CRED",
        "--from-command",
        "true",
    ]));
    let out = d.run(&["-c", "echo ${SILENT_CRED:-absent}"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "absent\n", "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("`silent` could not be resolved"));
    assert_eq!(d.events_of_kind("credential_unresolved").len(), 1);
}

/// A credential cannot ride into commands in a variable that makes a program
/// load or run code: every variable of the policy's environment table but a
/// forwarded one is refused when the credential is added.
#[test]
fn a_credential_is_never_injected_as_a_code_loading_variable() {
    let d = Daemon::start();
    for name in ["JAVA_TOOL_OPTIONS", "LUA_PATH", "PS4", "LD_PRELOAD"] {
        let out = d.praxis(&[
            "cred",
            "add",
            "loader",
            "--env",
            name,
            "--from-command",
            "printf %s -javaagent:/tmp/agent.jar",
        ]);
        assert_eq!(out.status.code(), Some(1), "{name}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("not an environment variable"),
            "{name}: {out:?}"
        );
    }
}

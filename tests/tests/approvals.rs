//! One-shot approvals and the retry budget end to end: a real daemon, the
//! agent's `praxis-run`, the operator's `praxis pending/approve/deny`.

mod common;

use std::path::Path;
use std::process::Output;

use common::{Daemon, bin, signal_json};

/// Makes `dir` a git repository whose `origin` cannot be reached, so a push
/// fails fast (the sandbox has no network either) but does run.
fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    common::unreachable_origin_repo(dir);
}

fn push_in(d: &Daemon, dir: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["--", "git", "push", "origin", "main"]);
    d.cmd(&bin("praxis-run"))
        .args(&args)
        .current_dir(dir)
        .env("PRAXIS_SESSION", "session-1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn push(d: &Daemon) -> Output {
    push_in(d, &d.work(), &[])
}

/// The request id of a refusal, from the audit signal.
fn held(out: &Output, decision: &str) -> String {
    let code = if decision == "HOLD" { 125 } else { 126 };
    assert_eq!(out.status.code(), Some(code), "{out:?}");
    let v = signal_json(out);
    assert_eq!(v["decision"], decision, "{v}");
    v["request_id"].as_str().unwrap().to_owned()
}

/// A run that executed: git itself answered (it cannot reach the remote).
fn ran(out: &Output) {
    let code = out.status.code();
    assert!(
        !matches!(code, Some(125 | 126)),
        "expected the push to run: {out:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error"),
        "git's own error: {out:?}"
    );
}

fn approve(d: &Daemon, id: &str, extra: &[&str]) -> Output {
    let mut args = vec!["approve", id];
    args.extend_from_slice(extra);
    d.praxis(&args)
}

fn pending_ids(d: &Daemon) -> Vec<String> {
    let out = d.praxis(&["pending", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| p["request_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_push_runs_once_per_approval_and_twice_at_most() {
    let d = Daemon::start();
    repo(&d.work());

    let first = held(&push(&d), "HOLD");
    let signal = signal_json(&push(&d));
    assert_eq!(
        signal["approve_with"],
        format!("praxis approve {}", signal["request_id"].as_str().unwrap())
    );
    assert!(pending_ids(&d).contains(&first));
    let listed = d.praxis(&["pending"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("git push origin main"));

    assert!(
        approve(&d, &first, &["--note", "release 1.2"])
            .status
            .success()
    );
    assert!(
        pending_ids(&d).is_empty(),
        "the approval answers both holds"
    );
    ran(&push(&d));
    let second = held(&push(&d), "HOLD");
    assert!(!approve(&d, &first, &[]).status.success(), "used up");
    assert!(approve(&d, &second, &[]).status.success());
    ran(&push(&d));
    let third = push(&d);
    held(&third, "STOP");
    assert!(
        signal_json(&third)["reason"]
            .as_str()
            .unwrap()
            .contains("retry budget exhausted")
    );
    assert!(signal_json(&third)["approve_with"].is_null());
    let refused = approve(&d, signal_json(&third)["request_id"].as_str().unwrap(), &[]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("STOP cannot be approved"));
    // Another session has its own budget.
    let other = d
        .cmd(&bin("praxis-run"))
        .args([
            "--session",
            "session-2",
            "--",
            "git",
            "push",
            "origin",
            "main",
        ])
        .output()
        .unwrap();
    held(&other, "HOLD");

    let kinds: Vec<String> = d
        .events()
        .iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .collect();
    for kind in ["approved", "approval_consumed", "budget_exhausted"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    let approved = d.events_of_kind("approved");
    assert_eq!(approved[0]["detail"]["note"], "release 1.2");
    assert!(approved[0]["uid"].is_i64());
    let allowed: Vec<_> = d
        .events_of_kind("decided")
        .into_iter()
        .filter(|e| e["decision"] == "ALLOW")
        .collect();
    assert_eq!(allowed.len(), 2);
    assert!(allowed.iter().all(|e| e["approval_id"].is_string()));
    assert!(
        allowed[0]["detail"]["role_reason"]
            .as_str()
            .unwrap()
            .contains("default")
    );
    let verify = d.praxis(&["audit", "verify"]);
    assert!(verify.status.success(), "{verify:?}");
}

#[test]
fn two_racing_runs_share_one_approval_and_exactly_one_executes() {
    let d = Daemon::start();
    repo(&d.work());
    let id = held(&push(&d), "HOLD");
    assert!(approve(&d, &id, &[]).status.success());
    let outs: Vec<Output> = std::thread::scope(|s| {
        let a = s.spawn(|| push(&d));
        let b = s.spawn(|| push(&d));
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    let executed = outs
        .iter()
        .filter(|o| !matches!(o.status.code(), Some(125 | 126)))
        .count();
    assert_eq!(executed, 1, "{outs:?}");
    let other = outs
        .iter()
        .find(|o| o.status.code() == Some(125))
        .expect("the other run is held");
    assert_eq!(signal_json(other)["decision"], "HOLD");
    assert_eq!(d.events_of_kind("approval_consumed").len(), 1);
}

#[test]
fn an_expired_approval_is_refused() {
    let d = Daemon::start();
    repo(&d.work());
    let id = held(&push(&d), "HOLD");
    assert!(approve(&d, &id, &["--ttl", "1s"]).status.success());
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let out = push(&d);
    held(&out, "HOLD");
    assert!(
        signal_json(&out)["reason"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{out:?}"
    );
    assert_eq!(d.events_of_kind("approval_expired").len(), 1);
    assert!(d.events_of_kind("approval_consumed").is_empty());
}

#[test]
fn an_approval_binds_cwd_and_role() {
    let d = Daemon::start();
    repo(&d.work());
    let sub = d.work().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let id = held(&push(&d), "HOLD");
    assert!(approve(&d, &id, &[]).status.success());
    held(&push_in(&d, &sub, &[]), "HOLD");
    held(&push_in(&d, &d.work(), &["--role", "ci"]), "HOLD");
    ran(&push(&d));
}

#[test]
fn deny_closes_a_held_request() {
    let d = Daemon::start();
    repo(&d.work());
    let id = held(&push(&d), "HOLD");
    let out = d.praxis(&["deny", &id, "--note", "not today"]);
    assert!(out.status.success(), "{out:?}");
    assert!(pending_ids(&d).is_empty());
    assert!(!approve(&d, &id, &[]).status.success());
    held(&push(&d), "HOLD");
    assert_eq!(d.events_of_kind("denied")[0]["detail"]["note"], "not today");
}

#[test]
fn agents_cannot_approve_and_steer_only_roles_get_an_advisory() {
    let praxis = bin("praxis");
    let d = Daemon::start_with(
        &[
            ("praxis.toml", "[roles]\nsteer_only = [\"director\"]\n"),
            (
                "policy.toml",
                "[roles.director]\nread_only = \"allow\"\nreversible_write = \"allow\"\nexternal_side_effect = \"hold\"\nhigh_risk = \"hold\"\n",
            ),
        ],
        &[],
    );
    repo(&d.work());
    let id = held(&push(&d), "HOLD");

    // Through praxis-run, as an agent, and as the steer-only director.
    let approve_cmd = format!("{} approve {id}", praxis.display());
    for role in ["agent", "director"] {
        let out = d.run(&["--role", role, "-c", &approve_cmd]);
        assert_ne!(out.status.code(), Some(0), "{role}: {out:?}");
        assert!(pending_ids(&d).contains(&id), "{role} approved it: {out:?}");
    }
    assert!(d.events_of_kind("approved").is_empty());
    // The policy itself stops an operator command in an agent's shell, and a
    // steer-only role never lifts a STOP.
    let inside = d.run(&["--role", "director", "-c", &approve_cmd]);
    assert_eq!(inside.status.code(), Some(126), "{inside:?}");
    assert!(
        signal_json(&inside)["rule_ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "operator-command"),
        "{inside:?}"
    );

    // The director's HOLD runs, with the advisory line; it is still audited.
    let out = push_in(&d, &d.work(), &["--role", "director"]);
    ran(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("advisory"),
        "{out:?}"
    );
    // A STOP stays a STOP for the director.
    let out = d.run(&["--role", "director", "-c", "rm -rf /"]);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    let stop_id = signal_json(&out)["request_id"].as_str().unwrap().to_owned();
    let refused = approve(&d, &stop_id, &[]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("STOP cannot be approved"));
}

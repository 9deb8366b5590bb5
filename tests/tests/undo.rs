//! Engineered reversibility end to end: a real praxisd snapshots what a
//! reversible command is about to remove, and `praxis undo` puts back the
//! exact bytes and modes; a command over the snapshot limit is held.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use common::{Daemon, last_finished, signal_json, tree};

fn git(d: &Daemon, args: &[&str]) {
    let st = d.cmd(Path::new("git")).args(args).status().unwrap();
    assert!(st.success(), "git {args:?}");
}

/// A scratch repository: tracked src/ (a script with mode 755), a README,
/// and untracked and ignored work.
fn scratch_repo(d: &Daemon) {
    let w = d.work();
    fs::create_dir_all(w.join("src/bin")).unwrap();
    fs::write(w.join("src/lib.rs"), b"pub fn answer() -> u32 { 42 }\n").unwrap();
    fs::write(w.join("src/bin/run.sh"), b"#!/bin/sh\necho run\n").unwrap();
    fs::set_permissions(w.join("src/bin/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(w.join("README.md"), b"# scratch\n\nkeep this text\n").unwrap();
    fs::write(w.join(".gitignore"), b"*.log\n").unwrap();
    git(d, &["add", "-A"]);
    git(
        d,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qm",
            "init",
        ],
    );
    fs::write(w.join("notes.txt"), b"untracked notes\n").unwrap();
    fs::create_dir_all(w.join("drafts")).unwrap();
    fs::write(w.join("drafts/idea.md"), b"an untracked draft\n").unwrap();
    fs::set_permissions(w.join("drafts/idea.md"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(w.join("debug.log"), b"ignored log\n").unwrap();
}

fn undo(d: &Daemon, id: &str, extra: &[&str]) -> Output {
    let mut args = vec!["undo", id];
    args.extend(extra);
    d.praxis(&args)
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn rm_rf_truncation_and_git_clean_are_each_undone_exactly() {
    let d = Daemon::start_in_git();
    scratch_repo(&d);
    let before = tree(&d.work());

    // rm -rf src: T1, allowed, snapshotted first.
    let out = d.run(&["-c", "rm -rf src"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!d.work().join("src").exists());
    let rm = last_finished(&d);
    let decided = d.events_of(&rm);
    let reason = decided[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("reversible: snapshot of 2 files"),
        "{decided:?}"
    );
    assert_eq!(d.events_of_kind("snapshot").len(), 1);
    assert!(ok(&undo(&d, &rm, &[])).contains("undone"));
    assert_eq!(tree(&d.work()), before, "rm -rf src undone");

    // > README.md: truncation, undone to the exact bytes.
    let out = d.run(&["-c", "> README.md"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(fs::read(d.work().join("README.md")).unwrap(), b"");
    let trunc = last_finished(&d);
    ok(&undo(&d, &trunc, &[]));
    assert_eq!(tree(&d.work()), before, "> README.md undone");

    // git clean -fdx: held by policy, approved, then undone (ignored files too).
    let out = d.run(&["--", "git", "clean", "-fdx"]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let held = signal_json(&out)["request_id"].as_str().unwrap().to_owned();
    assert!(
        signal_json(&out)["reason"]
            .as_str()
            .unwrap()
            .contains("reversible: workspace checkpoint"),
        "{out:?}"
    );
    ok(&d.praxis(&["approve", &held]));
    let out = d.run(&["--", "git", "clean", "-fdx"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!d.work().join("notes.txt").exists() && !d.work().join("debug.log").exists());
    let clean = last_finished(&d);
    ok(&undo(&d, &clean, &[]));
    assert_eq!(tree(&d.work()), before, "git clean -fdx undone");

    // Each undo is audited; the list shows them undone.
    assert_eq!(d.events_of_kind("undo").len(), 3);
    let list = ok(&d.praxis(&["undo", "--list", "--json"]));
    let items: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(items.as_array().unwrap().len(), 3);
    assert!(
        items
            .as_array()
            .unwrap()
            .iter()
            .all(|i| !i["restored_at"].is_null())
    );
}

#[test]
fn an_undo_refuses_when_the_files_changed_since_unless_forced() {
    let d = Daemon::start_in_git();
    scratch_repo(&d);
    let out = d.run(&["-c", "echo replaced > README.md"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let id = last_finished(&d);
    fs::write(d.work().join("README.md"), b"edited by hand afterwards\n").unwrap();

    let out = undo(&d, &id, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("changed since") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        fs::read(d.work().join("README.md")).unwrap(),
        b"edited by hand afterwards\n"
    );

    ok(&undo(&d, &id, &["--force"]));
    assert_eq!(
        fs::read(d.work().join("README.md")).unwrap(),
        b"# scratch\n\nkeep this text\n"
    );
}

#[test]
fn a_command_over_the_snapshot_limit_is_held_with_the_reason() {
    let d = Daemon::start_with(&[("praxis.toml", "[snapshots]\nmax_mib = 1\n")], &[]);
    let big = d.work().join("big");
    fs::create_dir_all(&big).unwrap();
    fs::write(big.join("blob.bin"), vec![1u8; 2 << 20]).unwrap();
    let out = d.run(&["-c", "rm -rf big"]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let signal = signal_json(&out);
    let reason = signal["reason"].as_str().unwrap();
    assert!(
        reason.contains("not reversible") && reason.contains("per-command limit"),
        "{reason}"
    );
    assert!(big.join("blob.bin").exists(), "nothing ran");
    // An operator may still let it run, without a snapshot.
    let id = signal["request_id"].as_str().unwrap();
    ok(&d.praxis(&["approve", id]));
    let out = d.run(&["-c", "rm -rf big"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!big.exists());
}

const DIRECTOR: [(&str, &str); 2] = [
    (
        "praxis.toml",
        "[roles]\nsteer_only = [\"director\"]\n\n[snapshots]\nmax_mib = 1\n",
    ),
    (
        "policy.toml",
        "[roles.director]\nread_only = \"allow\"\nreversible_write = \"allow\"\nexternal_side_effect = \"hold\"\nhigh_risk = \"hold\"\n",
    ),
];

#[test]
fn a_steer_only_role_runs_opaque_writers_behind_a_checkpoint_and_is_blocked_where_none_can_be_taken()
 {
    let d = Daemon::start_with(&DIRECTOR, &[]);
    git(&d, &["init", "-q", "."]);
    scratch_repo(&d);
    fs::write(
        d.work().join("clean.sh"),
        b"#!/bin/sh\nrm -rf src drafts notes.txt\n",
    )
    .unwrap();
    fs::set_permissions(d.work().join("clean.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let before = tree(&d.work());

    // A workspace script: its writes cannot be listed, so the whole
    // workspace is checkpointed before it runs.
    let out = d.run(&["--role", "director", "--", "./clean.sh"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!d.work().join("src").exists());
    let id = last_finished(&d);
    let snap = d.events_of_kind("snapshot");
    assert_eq!(snap.last().unwrap()["request_id"], id.as_str());
    ok(&undo(&d, &id, &[]));
    assert_eq!(
        tree(&d.work()),
        before,
        "the checkpoint put the workspace back"
    );

    // Over the snapshot limit: the steer-only role is blocked, not steered.
    fs::write(d.work().join("src/blob.bin"), vec![1u8; 2 << 20]).unwrap();
    let out = d.run(&["--role", "director", "-c", "rm -rf src"]);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(
        signal_json(&out)["reason"]
            .as_str()
            .unwrap()
            .contains("not reversible")
    );
    assert!(d.work().join("src/blob.bin").exists());
}

#[test]
fn the_list_is_newest_first_counts_what_an_undo_restores_and_a_forced_undo_never_repeats() {
    let d = Daemon::start_in_git();
    scratch_repo(&d);
    let out = d.run(&["-c", "> README.md"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let older = last_finished(&d);
    let out = d.run(&["-c", "rm -rf src"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let newer = last_finished(&d);

    let list: serde_json::Value =
        serde_json::from_str(&ok(&d.praxis(&["undo", "--list", "--json"]))).unwrap();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [newer.as_str(), older.as_str()]);
    let files = list[0]["files"].as_u64().unwrap();
    let said = ok(&undo(&d, &newer, &[]));
    assert!(
        said.contains(&format!("undone: {files} restored")),
        "the list said {files} files: {said}"
    );

    // Newer work over the restored tree: a second undo, forced or not,
    // would put the old bytes back over it.
    fs::write(d.work().join("src/lib.rs"), b"written after the undo\n").unwrap();
    let out = undo(&d, &newer, &["--force"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already restored"),
        "{out:?}"
    );
    assert_eq!(
        fs::read(d.work().join("src/lib.rs")).unwrap(),
        b"written after the undo\n"
    );
}

//! Capture, seal and restore on real directories: exact bytes, modes, links,
//! refusal when changed, containment against planted symlinks, limits, retention.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use praxis_snapshot::{Limits, Scope, SnapshotError, Store};

const NOW: u64 = 1_700_000_000;

struct Fixture {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    store: Store,
}

fn fixture(limits: Limits) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(ws.join("src/bin")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(ws.join("src/a.txt"), b"alpha\n").unwrap();
    fs::write(ws.join("src/bin/run.sh"), b"#!/bin/sh\necho run\n").unwrap();
    fs::set_permissions(ws.join("src/bin/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(ws.join("src/a.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    symlink("a.txt", ws.join("src/link")).unwrap();
    fs::write(ws.join("README.md"), b"# readme\nkeep me\n").unwrap();
    let store = Store::open(tmp.path().join("state/snapshots"), limits).unwrap();
    Fixture {
        _tmp: tmp,
        ws,
        outside,
        store,
    }
}

fn paths(ws: &Path, rel: &[&str]) -> Scope {
    let abs: Vec<PathBuf> = rel.iter().map(|r| ws.join(r)).collect();
    Scope::of_paths(ws, &abs)
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn snapshot(f: &Fixture, id: &str, scope: Scope) {
    let plan = f.store.plan(&f.ws, scope, NOW).unwrap();
    f.store.capture(id, &f.ws, &plan, NOW).unwrap();
}

#[test]
fn rm_rf_of_a_tree_is_undone_with_bytes_modes_and_links() {
    let f = fixture(Limits::default());
    snapshot(&f, "r-rm", paths(&f.ws, &["src"]));
    fs::remove_dir_all(f.ws.join("src")).unwrap();
    f.store.seal("r-rm").unwrap();

    let done = f.store.restore("r-rm", false, NOW + 5).unwrap();
    assert_eq!(
        done.restored, 2,
        "src/a.txt and src/bin/run.sh, as the snapshot counts files (dirs and the link come with them)"
    );
    assert_eq!(fs::read(f.ws.join("src/a.txt")).unwrap(), b"alpha\n");
    assert_eq!(
        fs::read(f.ws.join("src/bin/run.sh")).unwrap(),
        b"#!/bin/sh\necho run\n"
    );
    assert_eq!(mode(&f.ws.join("src/bin/run.sh")), 0o755);
    assert_eq!(mode(&f.ws.join("src/a.txt")), 0o640);
    assert_eq!(
        fs::read_link(f.ws.join("src/link")).unwrap(),
        PathBuf::from("a.txt")
    );
    assert!(matches!(
        f.store.restore("r-rm", false, NOW + 6),
        Err(SnapshotError::AlreadyRestored(_))
    ));
}

#[test]
fn the_list_is_newest_first_and_counts_the_files_the_undo_restores() {
    let f = fixture(Limits::default());
    snapshot(&f, "r-0001-old", paths(&f.ws, &["README.md"]));
    let plan = f.store.plan(&f.ws, paths(&f.ws, &["src"]), NOW).unwrap();
    f.store
        .capture("r-0002-new", &f.ws, &plan, NOW + 1)
        .unwrap();
    fs::remove_dir_all(f.ws.join("src")).unwrap();
    f.store.seal("r-0002-new").unwrap();

    let list = f.store.list().unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.request_id.as_str()).collect();
    assert_eq!(ids, ["r-0002-new", "r-0001-old"]);
    let done = f.store.restore("r-0002-new", false, NOW + 5).unwrap();
    assert_eq!(done.restored, list[0].files);
}

#[test]
fn a_forced_undo_never_restores_a_snapshot_twice_over_newer_content() {
    let f = fixture(Limits::default());
    snapshot(&f, "r-twice", paths(&f.ws, &["README.md"]));
    fs::write(f.ws.join("README.md"), b"").unwrap();
    f.store.seal("r-twice").unwrap();
    let first = f.store.restore("r-twice", false, NOW).unwrap();
    assert_eq!(first.restored, 1);
    fs::write(f.ws.join("README.md"), b"written after the undo\n").unwrap();

    let again = f.store.restore("r-twice", true, NOW + 1);
    assert!(
        matches!(again, Err(SnapshotError::AlreadyRestored(_))),
        "{again:?}"
    );
    assert_eq!(
        fs::read(f.ws.join("README.md")).unwrap(),
        b"written after the undo\n"
    );
}

#[test]
fn truncation_is_undone_and_a_later_change_refuses_without_force() {
    let f = fixture(Limits::default());
    snapshot(&f, "r-trunc", paths(&f.ws, &["README.md"]));
    fs::write(f.ws.join("README.md"), b"").unwrap();
    f.store.seal("r-trunc").unwrap();

    fs::write(f.ws.join("README.md"), b"edited after the command\n").unwrap();
    match f.store.restore("r-trunc", false, NOW) {
        Err(SnapshotError::Changed(paths)) => assert_eq!(paths, vec!["README.md".to_string()]),
        other => panic!("expected Changed, got {other:?}"),
    }
    assert_eq!(
        fs::read(f.ws.join("README.md")).unwrap(),
        b"edited after the command\n"
    );
    let done = f.store.restore("r-trunc", true, NOW).unwrap();
    assert_eq!(done.bytes, 17);
    assert_eq!(
        fs::read(f.ws.join("README.md")).unwrap(),
        b"# readme\nkeep me\n"
    );
}

#[test]
fn what_the_command_created_in_scope_is_removed() {
    let f = fixture(Limits::default());
    // `mv src/a.txt out.txt`: the source goes, the destination is new.
    snapshot(&f, "r-mv", paths(&f.ws, &["src/a.txt", "out.txt"]));
    fs::rename(f.ws.join("src/a.txt"), f.ws.join("out.txt")).unwrap();
    f.store.seal("r-mv").unwrap();
    let done = f.store.restore("r-mv", false, NOW).unwrap();
    assert_eq!((done.restored, done.removed), (1, 1));
    assert!(!f.ws.join("out.txt").exists());
    assert_eq!(fs::read(f.ws.join("src/a.txt")).unwrap(), b"alpha\n");
}

#[test]
fn a_symlinked_parent_is_not_followed_at_capture() {
    let f = fixture(Limits::default());
    fs::write(f.outside.join("secret"), b"outside").unwrap();
    symlink(&f.outside, f.ws.join("evil")).unwrap();
    let err = f
        .store
        .plan(&f.ws, paths(&f.ws, &["evil/secret"]), NOW)
        .unwrap_err();
    assert!(
        matches!(err, SnapshotError::Unsnapshottable { .. }),
        "{err}"
    );
}

#[test]
fn a_symlink_planted_in_place_of_a_directory_does_not_redirect_the_restore() {
    let f = fixture(Limits::default());
    snapshot(&f, "r-plant", paths(&f.ws, &["src"]));
    fs::remove_dir_all(f.ws.join("src")).unwrap();
    f.store.seal("r-plant").unwrap();
    // Something plants src -> outside after the command.
    symlink(&f.outside, f.ws.join("src")).unwrap();
    assert!(matches!(
        f.store.restore("r-plant", false, NOW),
        Err(SnapshotError::Changed(_))
    ));
    let done = f.store.restore("r-plant", true, NOW).unwrap();
    assert_eq!(done.restored, 2, "the planted link is replaced by the tree");
    assert!(fs::symlink_metadata(f.ws.join("src")).unwrap().is_dir());
    assert_eq!(
        fs::read_dir(&f.outside).unwrap().count(),
        0,
        "nothing was written outside"
    );
}

#[test]
fn over_the_per_command_and_daily_limits_is_refused() {
    let f = fixture(Limits {
        max_bytes: 10,
        ..Limits::default()
    });
    let err = f
        .store
        .plan(&f.ws, paths(&f.ws, &["src"]), NOW)
        .unwrap_err();
    assert!(
        matches!(err, SnapshotError::OverCommandLimit { bytes: 25, .. }),
        "{err}"
    );

    let f = fixture(Limits {
        max_daily_bytes: 30,
        ..Limits::default()
    });
    snapshot(&f, "r-day-1", paths(&f.ws, &["README.md"]));
    let err = f
        .store
        .plan(&f.ws, paths(&f.ws, &["src"]), NOW + 60)
        .unwrap_err();
    assert!(matches!(err, SnapshotError::OverDailyLimit { .. }), "{err}");
    // A day later the first no longer counts.
    let plan = f
        .store
        .plan(&f.ws, paths(&f.ws, &["src"]), NOW + 86_400)
        .unwrap();
    assert_eq!((plan.files, plan.bytes), (2, 25));
}

#[test]
fn retention_drops_by_age_then_oldest_first_by_size() {
    let f = fixture(Limits {
        keep_for: 100,
        max_total_bytes: 40,
        ..Limits::default()
    });
    for (i, id) in ["r-1", "r-2", "r-3"].iter().enumerate() {
        let plan = f
            .store
            .plan(&f.ws, paths(&f.ws, &["README.md"]), NOW)
            .unwrap();
        f.store
            .capture(id, &f.ws, &plan, NOW + i as u64 * 10)
            .unwrap();
    }
    // 3 x 17 bytes = 51 > 40: the oldest goes for size.
    let gone = f.store.expire(NOW + 25).unwrap();
    assert_eq!(gone.len(), 1);
    assert_eq!(
        (gone[0].request_id.as_str(), gone[0].reason),
        ("r-1", "size")
    );
    let gone = f.store.expire(NOW + 111).unwrap();
    assert_eq!(
        gone.iter().map(|g| g.reason).collect::<Vec<_>>(),
        vec!["age"]
    );
    assert_eq!(f.store.list().unwrap().len(), 1);
}

#[test]
fn a_workspace_checkpoint_skips_ignored_outputs_and_git() {
    let f = fixture(Limits::default());
    fs::create_dir_all(f.ws.join(".git/objects")).unwrap();
    fs::write(f.ws.join(".git/HEAD"), b"ref: refs/heads/main\n").unwrap();
    fs::write(f.ws.join(".gitignore"), b"target/\n").unwrap();
    fs::create_dir_all(f.ws.join("target")).unwrap();
    fs::write(f.ws.join("target/big.o"), vec![0u8; 4096]).unwrap();
    fs::write(f.ws.join("notes.txt"), b"untracked work\n").unwrap();

    let plan = f
        .store
        .plan(&f.ws, Scope::Workspace { ignored: false }, NOW)
        .unwrap();
    let manifest = f.store.capture("r-ckpt", &f.ws, &plan, NOW).unwrap();
    let kept: Vec<&str> = manifest.before.iter().map(|e| e.path.as_str()).collect();
    assert!(
        kept.contains(&"notes.txt") && kept.contains(&"src/a.txt"),
        "{kept:?}"
    );
    assert!(
        !kept
            .iter()
            .any(|p| p.starts_with("target") || p.starts_with(".git/")),
        "{kept:?}"
    );

    // `make clean`-like: an opaque writer removes work and creates output.
    fs::remove_file(f.ws.join("notes.txt")).unwrap();
    fs::remove_dir_all(f.ws.join("src")).unwrap();
    fs::write(f.ws.join("new.log"), b"made by the command").unwrap();
    f.store.seal("r-ckpt").unwrap();
    let done = f.store.restore("r-ckpt", false, NOW).unwrap();
    assert_eq!(done.removed, 1, "new.log");
    assert_eq!(
        fs::read(f.ws.join("notes.txt")).unwrap(),
        b"untracked work\n"
    );
    assert_eq!(fs::read(f.ws.join("src/a.txt")).unwrap(), b"alpha\n");
    assert!(!f.ws.join("new.log").exists());
    assert!(
        f.ws.join("target/big.o").exists(),
        "ignored outputs are left alone"
    );
}

#[test]
fn request_ids_cannot_name_paths() {
    let f = fixture(Limits::default());
    let plan = f
        .store
        .plan(&f.ws, paths(&f.ws, &["README.md"]), NOW)
        .unwrap();
    assert!(f.store.capture("../escape", &f.ws, &plan, NOW).is_err());
    assert!(matches!(
        f.store.restore("../../etc", false, NOW),
        Err(SnapshotError::NotFound(_))
    ));
}

#[test]
fn ignored_build_outputs_are_not_kept_but_a_named_ignored_file_is() {
    let f = fixture(Limits::default());
    fs::write(f.ws.join(".gitignore"), b"target/\n.env\n*.pyc\n").unwrap();
    fs::create_dir_all(f.ws.join("target/debug")).unwrap();
    fs::write(f.ws.join("target/debug/app"), vec![7u8; 1000]).unwrap();
    fs::write(f.ws.join(".env"), b"TOKEN=local\n").unwrap();
    fs::write(f.ws.join("src/cache.pyc"), b"bytecode").unwrap();

    // `rm -rf target`: a build output, nothing to keep.
    let plan = f.store.plan(&f.ws, paths(&f.ws, &["target"]), NOW).unwrap();
    assert_eq!((plan.files, plan.bytes), (0, 0));
    // `rm .env`: named by the command, kept although ignored.
    let plan = f.store.plan(&f.ws, paths(&f.ws, &[".env"]), NOW).unwrap();
    assert_eq!(plan.files, 1);
    // `rm -rf src`: its ignored files are left out.
    let plan = f.store.plan(&f.ws, paths(&f.ws, &["src"]), NOW).unwrap();
    assert_eq!((plan.files, plan.bytes), (2, 25));
}

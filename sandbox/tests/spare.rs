//! Spares: the next command's scratch dir, ruleset and cgroups made ahead
//! are taken only by a command with the same inputs, give it the same
//! sandbox as pieces made on the spot, and are removed when turned off.
//! (A test binary of its own: spares are a per-process setting.)

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Fixture, sh};
use praxis_sandbox::{Network, Profile, Spec, Tracking};

/// The dirs under the scratch root.
fn scratch_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

/// The command cgroups under this process's v2 base, when tracking by cgroup.
fn command_cgroups() -> Vec<PathBuf> {
    match praxis_sandbox::tracking() {
        Tracking::Cgroup(base) => fs::read_dir(&base.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect(),
        Tracking::ProcessGroup(_) => Vec::new(),
    }
}

/// Waits for the spare asked for by the last `prepare` with these inputs:
/// the one scratch dir not in `held`.
fn spare_dir(root: &Path, held: &[&Path]) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let spare: Vec<PathBuf> = scratch_dirs(root)
            .into_iter()
            .filter(|d| !held.contains(&d.as_path()))
            .collect();
        if let [one] = spare.as_slice() {
            // Its ruleset and cgroups follow the dir within moments.
            std::thread::sleep(Duration::from_millis(200));
            return one.clone();
        }
        assert!(spare.len() < 2, "more than one spare: {spare:?}");
        assert!(Instant::now() < deadline, "no spare was made");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A fixture whose directories have settled, so its carve is kept for
/// later commands (a carve of directories changed moments ago is not).
fn settled() -> (Fixture, Spec) {
    let fx = Fixture::new();
    fs::create_dir_all(&fx.scratch_root).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    (fx, spec)
}

#[test]
fn a_spare_serves_only_equal_inputs_gives_the_same_sandbox_and_is_removed_when_off() {
    let cgroups_before = command_cgroups();
    praxis_sandbox::keep_spares();
    let (fx, spec) = settled();
    let root = fx.scratch_root.clone();

    let first = praxis_sandbox::prepare(&spec).unwrap();
    praxis_sandbox::make_spare();
    let spare = spare_dir(&root, &[first.scratch_dir()]);

    // Equal inputs take the spare, with the same rules as made on the spot.
    let second = praxis_sandbox::prepare(&spec).unwrap();
    assert_eq!(second.scratch_dir(), spare);
    assert_eq!(second.restrictions(), first.restrictions());
    praxis_sandbox::make_spare();
    let next = spare_dir(&root, &[first.scratch_dir(), second.scratch_dir()]);
    drop((first, second));

    // Other inputs (a write grant is added after the take, so it is not
    // one of them, nor is the network: every command has a namespace of
    // its own; other limits are) make their own.
    let mut limited = spec.clone();
    limited.limits.pids /= 2;
    let other = praxis_sandbox::prepare(&limited).unwrap();
    assert_ne!(other.scratch_dir(), next);
    assert!(!next.exists(), "a spare for other inputs is dropped");
    drop(other);

    // A command on a spare: its scratch dir is writable, a write grant
    // added after the take works, a secret stays unreadable and what is
    // outside the grants unwritable.
    let granted = fx.outside.join("granted");
    fs::create_dir(&granted).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut with_grant = spec.clone();
    with_grant.write_grants = vec![granted.clone()];
    sh(&with_grant, "true");
    praxis_sandbox::make_spare();
    spare_dir(&root, &[]);
    let ran = sh(
        &with_grant,
        &format!(
            "echo s > \"$TMPDIR/f\" && cat \"$TMPDIR/f\" && echo g > {g}/f && \
             ! cat {home}/.ssh/id_rsa 2>/dev/null && ! touch {out}/f 2>/dev/null && echo ok",
            g = granted.display(),
            home = fx.home.display(),
            out = fx.outside.display(),
        ),
    );
    assert!(ran.ok(), "{}", ran.output);
    assert_eq!(ran.output, "s\nok\n");
    assert_eq!(fs::read_to_string(granted.join("f")).unwrap(), "g\n");

    // Off: the spare's dir and cgroups are removed; nothing of ours stays.
    praxis_sandbox::make_spare();
    spare_dir(&root, &[]);
    praxis_sandbox::discard_spare();
    assert_eq!(scratch_dirs(&root), Vec::<PathBuf>::new());
    assert_eq!(command_cgroups(), cgroups_before);
    drop(praxis_sandbox::prepare(&spec).unwrap());
    praxis_sandbox::make_spare();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(scratch_dirs(&root), Vec::<PathBuf>::new(), "off stays off");
}

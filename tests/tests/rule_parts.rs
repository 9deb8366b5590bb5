//! A rule speaks only for what it matched, end to end against a real
//! praxisd: a download from a service on this machine is allowed by rule
//! `fetch-localhost`, but the same download into a place that runs code
//! later for the user (`~/.local/bin`, `~/.config/autostart`) is held, and
//! nothing is written there nor fetched. A loopback listener stands in for the service.

mod common;

use std::path::{Path, PathBuf};

use common::{Daemon, Host, signal_json};

/// The directories this test created on the way to a path, removed (when
/// empty) on drop; the ones that were there are left alone.
struct MadeDirs(Vec<PathBuf>);

impl MadeDirs {
    fn create(dir: &Path) -> MadeDirs {
        let missing: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|a| !a.exists())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(dir).unwrap();
        MadeDirs(missing)
    }
}

impl Drop for MadeDirs {
    fn drop(&mut self) {
        for dir in &self.0 {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[test]
fn a_local_download_into_a_place_that_runs_later_is_held_and_writes_nothing() {
    let d = Daemon::start_in_git();
    let host = Host::start("#!/bin/sh\necho planted\n", None);
    let port = host.port;
    d.open_loopback(&[port]);
    let url = format!("http://127.0.0.1:{port}/x");
    // The rule allows the local request itself, with a write in the workspace.
    let allowed = d.run(&["--", "curl", "-sS", "-o", "./out.sh", &url]);
    assert_eq!(allowed.status.code(), Some(0), "{allowed:?}");
    assert!(d.work().join("out.sh").is_file());
    let served = host.hits();

    // praxisd judges against the caller's home from the user database, so
    // the targets are there; their names are this test's own, and never
    // left behind.
    let home = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .dir;
    let own = std::process::id();
    for target in [
        format!(".local/bin/praxis-e2e-{own}-git"),
        format!(".config/autostart/praxis-e2e-{own}.desktop"),
    ] {
        let path = home.join(&target);
        // The directory exists, as on a user's machine, so nothing but the
        // decision keeps the file out.
        let _made = MadeDirs::create(path.parent().unwrap());
        let path_text = path.display().to_string();
        let curl = d.run(&["--", "curl", "-sS", "-o", &path_text, &url]);
        let planted = path.exists();
        let _ = std::fs::remove_file(&path);
        assert!(!planted, "{target} was written: {curl:?}");
        assert_eq!(curl.status.code(), Some(125), "{target}: {curl:?}");
        let signal = signal_json(&curl);
        assert_eq!(signal["decision"], "HOLD", "{target}: {signal}");
        assert_eq!(signal["tier"], "high_risk", "{target}: {signal}");
        assert_eq!(
            signal["rule_ids"],
            serde_json::json!(["write-autorun"]),
            "{signal}"
        );
        let wget = d.run(&["--", "wget", "-q", "-O", &path_text, &url]);
        let planted = path.exists();
        let _ = std::fs::remove_file(&path);
        assert!(!planted, "{target} was written by wget: {wget:?}");
        assert_eq!(wget.status.code(), Some(125), "{target}: {wget:?}");
    }
    assert_eq!(host.hits(), served, "a held request ran");
}

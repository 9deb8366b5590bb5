//! A launcher made ahead by a daemon holding `CAP_SYS_ADMIN` mounts the
//! last command's private `/tmp` in its copy of the host's mounts while it
//! waits. A command takes it only when it is the one its own plan mounts
//! now, from the very same directories: a command of another session, or
//! one whose private directory, shown tree or mount point was replaced
//! since, gets its own mounted on its way to exec. (A test binary of its
//! own: spares are a per-process setting.)

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Fixture, start_in};
use praxis_sandbox::{ExitStatus, Network, PrivateTmp, Profile, Spec};

/// A private `/tmp` pair under `root`, its `/tmp` holding a marker that
/// says `name`.
fn private(root: &Path, name: &str) -> PrivateTmp {
    let private = PrivateTmp {
        tmp: root.join(name).join("tmp"),
        var_tmp: root.join(name).join("var-tmp"),
    };
    fs::create_dir_all(&private.tmp).unwrap();
    fs::create_dir_all(&private.var_tmp).unwrap();
    fs::write(private.tmp.join("marker"), name).unwrap();
    private
}

/// What a command started by a launcher found: whether its `/tmp` was
/// mounted ahead, and the marker it read there.
#[derive(Debug, PartialEq)]
struct Found {
    mounted_ahead: bool,
    marker: String,
}

/// Makes a spare, lets `change` act on the host once its launcher has
/// mounted what it mounts, then runs a command that copies `/tmp/marker`
/// into the workspace and leaves a file in `/tmp`; retried (up to 10 s)
/// until a launcher started it.
fn after_the_spare(spec: &Spec, change: impl Fn()) -> Found {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        praxis_sandbox::make_spare();
        std::thread::sleep(Duration::from_millis(300));
        change();
        let script = "cat /tmp/marker > seen && touch /tmp/left";
        let mut child = start_in(spec, &spec.workspace, &["/bin/sh", "-c", script]);
        let (placed, mounted_ahead) = (child.placed_ahead(), child.tmp_mounted_ahead());
        assert_eq!(child.wait().unwrap(), ExitStatus::Code(0));
        if placed {
            let marker = fs::read_to_string(spec.workspace.join("seen")).unwrap();
            return Found {
                mounted_ahead,
                marker,
            };
        }
        assert!(
            Instant::now() < deadline,
            "no command was started by a launcher"
        );
    }
}

#[test]
fn a_spare_mounts_the_last_private_tmp_ahead_for_a_command_whose_own_it_is() {
    if !common::launchers_copy_mounts_here() {
        return;
    }
    praxis_sandbox::keep_spares();
    let fx = Fixture::new();
    fs::create_dir_all(&fx.scratch_root).unwrap();
    let root = fx.ws.parent().unwrap();
    let (a, b) = (private(root, "a"), private(root, "b"));
    let with = |private: &PrivateTmp| Spec {
        private_tmp: Some(private.clone()),
        ..fx.spec(Profile::WorkspaceWrite, Network::Off)
    };
    let (spec_a, spec_b) = (with(&a), with(&b));
    // The first command wants a spare with its /tmp.
    let mut first = start_in(&spec_a, &fx.ws, &["/bin/true"]);
    assert_eq!(first.wait().unwrap(), ExitStatus::Code(0));

    // The same session's next command: mounted ahead, and it is its own.
    let found = after_the_spare(&spec_a, || {});
    assert_eq!(
        found,
        Found {
            mounted_ahead: true,
            marker: String::from("a")
        }
    );
    assert!(a.tmp.join("left").exists(), "written into its own /tmp");

    // Another session's, on a spare with the first session's /tmp: its own.
    let found = after_the_spare(&spec_b, || {});
    assert_eq!(
        found,
        Found {
            mounted_ahead: false,
            marker: String::from("b")
        }
    );
    assert!(b.tmp.join("left").exists());

    // Its private directory removed and made anew since the spare mounted
    // it: the new one.
    let found = after_the_spare(&spec_b, || {
        fs::remove_dir_all(&b.tmp).unwrap();
        fs::create_dir(&b.tmp).unwrap();
        fs::write(b.tmp.join("marker"), "b, made anew").unwrap();
    });
    assert_eq!(
        found,
        Found {
            mounted_ahead: false,
            marker: String::from("b, made anew")
        }
    );

    // Where the workspace lies under the host's /tmp it is shown again in
    // the private one, on a mount point there. That mount point removed
    // since the spare bound the workspace on it (which unmounts it there):
    // the plan makes it again, and the command finds its workspace.
    let shown = fx
        .ws
        .strip_prefix("/tmp")
        .ok()
        .map(|inside| b.tmp.join(inside));
    if let Some(mount_point) = shown {
        let found = after_the_spare(&spec_b, || {
            fs::remove_dir_all(&mount_point).unwrap();
        });
        assert_eq!(
            found,
            Found {
                mounted_ahead: false,
                marker: String::from("b, made anew")
            }
        );
        // The workspace itself replaced since: the new one is shown.
        let found = after_the_spare(&spec_b, || {
            fs::rename(&fx.ws, root.join("ws-before")).unwrap();
            fs::create_dir(&fx.ws).unwrap();
        });
        assert!(!found.mounted_ahead);
        assert!(
            fx.ws.join("seen").exists(),
            "written into the new workspace"
        );
    } else {
        println!("the workspace is not under /tmp here: its mount point is not tried");
    }

    // And nothing replaced: mounted ahead again.
    let found = after_the_spare(&spec_b, || {});
    assert!(found.mounted_ahead);
    praxis_sandbox::discard_spare();
}

//! A command on a spare is started by a launcher made ahead, already in the
//! command's own cgroups: it runs there with its limits, exactly as a
//! command that joined them itself, and no cgroup move happened on its way
//! to exec, also when it differs from the command the spare was made for
//! in anything but its limits. (A test binary of its own: spares are a
//! per-process setting.)

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Fixture, start_in};
use praxis_sandbox::{Child, Limiting, Network, Profile, Spec, Tracking};

/// Starts `sleep 30` under `spec`.
fn sleeper(spec: &Spec, cwd: &Path) -> Child {
    start_in(spec, cwd, &["/bin/sleep", "30"])
}

/// The cgroup `pid` is in for the hierarchy whose `/proc/PID/cgroup` line
/// has this controller list (`""` for v2): the last component.
fn cgroup_name(pid: i32, controllers: &str) -> String {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let line = text
        .lines()
        .find(|l| l.split(':').nth(1) == Some(controllers))
        .unwrap_or_else(|| panic!("no {controllers:?} line in {text}"));
    line.rsplit('/').next().unwrap().to_owned()
}

fn read(path: PathBuf) -> String {
    fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_owned()
}

/// Checks that `child` sits in cgroups of its own carrying `spec`'s limits.
fn in_own_cgroups_with_limits(child: &Child, spec: &Spec) {
    let pid = child.pid();
    let pids = spec.limits.pids.to_string();
    let memory = spec.limits.memory_bytes.to_string();
    if let Tracking::Cgroup(base) = praxis_sandbox::tracking() {
        let name = cgroup_name(pid, "");
        assert!(name.starts_with("cmd-"), "{name}");
        let dir = base.dir.join(&name);
        assert_eq!(child.cgroup(), Some(dir.as_path()));
        assert_eq!(read(dir.join("cgroup.procs")), pid.to_string());
        if *praxis_sandbox::limiting() == Limiting::CgroupV2 {
            assert_eq!(read(dir.join("pids.max")), pids);
            assert_eq!(read(dir.join("memory.max")), memory);
        }
    }
    if let Limiting::CgroupV1(bases) = praxis_sandbox::limiting() {
        for (controller, base, file, want) in [
            ("pids", &bases.pids, "pids.max", &pids),
            ("memory", &bases.memory, "memory.limit_in_bytes", &memory),
        ] {
            let name = cgroup_name(pid, controller);
            assert!(name.starts_with("cmd-"), "{controller}: {name}");
            let dir = base.join(&name);
            assert_eq!(read(dir.join("cgroup.procs")), pid.to_string());
            assert_eq!(&read(dir.join(file)), want, "{controller}");
        }
    }
}

/// The first command `start` starts that a launcher started, trying for
/// up to 10 s (a spare is made in the background); the last one tried
/// when none was.
fn until_placed(mut start: impl FnMut() -> Child) -> Child {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let child = start();
        if child.placed_ahead() || Instant::now() > deadline {
            return child;
        }
        drop(child);
    }
}

/// Checks that `child` has no capabilities, not even in its bounding set,
/// and every signal at its default, unblocked (`sleep` catches none).
fn starts_clean(child: &Child) {
    let status = fs::read_to_string(format!("/proc/{}/status", child.pid())).unwrap();
    for field in [
        "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "SigBlk", "SigIgn", "SigCgt",
    ] {
        let value = status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(":"))
            .unwrap_or_else(|| panic!("no {field} in {status}"));
        assert_eq!(value.trim(), "0000000000000000", "{field}");
    }
}

/// How many seccomp filters `child` runs under.
fn seccomp_filters(child: &Child) -> String {
    let status = fs::read_to_string(format!("/proc/{}/status", child.pid())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp_filters:"))
        .unwrap_or_else(|| panic!("no Seccomp_filters in {status}"))
        .trim()
        .to_owned()
}

/// Checks that `child` was started by a launcher (`why` says what failed
/// otherwise), sits in its own cgroups with `spec`'s limits, starts clean,
/// runs under the launcher's seccomp program and the closing one, and
/// ends it.
fn ran_placed(mut child: Child, spec: &Spec, why: &str) {
    assert!(child.placed_ahead(), "{why}");
    in_own_cgroups_with_limits(&child, spec);
    starts_clean(&child);
    assert_eq!(seccomp_filters(&child), "2");
    child.terminate_group(Duration::from_secs(1)).unwrap();
}

#[test]
fn a_command_on_a_spare_is_started_by_a_launcher_in_its_own_cgroups() {
    if !praxis_sandbox::limiting().by_cgroup() {
        println!(
            "skipping: no cgroup per command here ({})",
            praxis_sandbox::limiting()
        );
        return;
    }
    praxis_sandbox::keep_spares();
    let fx = Fixture::new();
    fs::create_dir_all(&fx.scratch_root).unwrap();
    // Settled directories, so the carve is kept for later commands.
    std::thread::sleep(Duration::from_millis(200));
    let mut spec = fx.spec(Profile::WorkspaceWrite, Network::Off);
    spec.limits.pids = 77;
    spec.limits.memory_bytes = 123 << 20;

    // The first command has no spare: it joins its cgroups itself, and
    // attaches the whole seccomp program.
    let mut first = sleeper(&spec, &fx.ws);
    assert!(!first.placed_ahead());
    in_own_cgroups_with_limits(&first, &spec);
    starts_clean(&first);
    assert_eq!(seccomp_filters(&first), "1");
    first.terminate_group(Duration::from_secs(1)).unwrap();
    drop(first);

    // The spare made after it comes with a launcher; the next command
    // with the same inputs is started by it.
    let second = until_placed(|| {
        praxis_sandbox::make_spare();
        std::thread::sleep(Duration::from_millis(100));
        sleeper(&spec, &fx.ws)
    });
    // It leads its own session and process group, as a fresh child does.
    let stat = fs::read_to_string(format!("/proc/{}/stat", second.pid())).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    assert_eq!(fields[2], second.pid().to_string(), "process group");
    assert_eq!(fields[3], second.pid().to_string(), "session");
    ran_placed(second, &spec, "no command was started by a launcher");

    // A command that differs from the last in all but its limits (another
    // profile, so another carve) takes the spare's launcher and cgroups.
    let mut other_spec = fx.spec(Profile::ReadOnly, Network::Off);
    other_spec.limits = spec.limits;
    let other = until_placed(|| {
        // The spare is made for the last command's inputs: this spec's.
        let mut last = sleeper(&spec, &fx.ws);
        last.terminate_group(Duration::from_secs(1)).unwrap();
        drop(last);
        praxis_sandbox::make_spare();
        std::thread::sleep(Duration::from_millis(300));
        sleeper(&other_spec, &fx.ws)
    });
    ran_placed(
        other,
        &other_spec,
        "a spare with the same limits did not start another command",
    );

    // The launcher attached most of the seccomp filter before the set-up,
    // which still made namespaces and mounts; the closing program on top
    // refuses them to the command as the whole one does. A user namespace
    // needs no privilege, so only the filter refuses it here.
    let mut unshare = until_placed(|| {
        praxis_sandbox::make_spare();
        std::thread::sleep(Duration::from_millis(300));
        start_in(
            &other_spec,
            &fx.ws,
            &["/usr/bin/unshare", "--user", "/bin/true"],
        )
    });
    assert!(unshare.placed_ahead(), "no launcher started unshare");
    assert_eq!(
        unshare.wait().unwrap(),
        praxis_sandbox::ExitStatus::Code(1),
        "unshare --user was not refused"
    );

    // Before any command has run no spare is wanted: cgroups and a
    // launcher placed from the limits alone start the first command.
    praxis_sandbox::discard_spare();
    praxis_sandbox::keep_spares();
    praxis_sandbox::place_ahead(spec.limits);
    ran_placed(
        sleeper(&other_spec, &fx.ws),
        &other_spec,
        "the launcher placed ahead did not start the first command",
    );

    // Turned off, the spare's launcher, and one placed ahead, are killed
    // and reaped with them.
    praxis_sandbox::place_ahead(spec.limits);
    praxis_sandbox::make_spare();
    std::thread::sleep(Duration::from_millis(300));
    praxis_sandbox::discard_spare();
    // Children of any of our threads (the launcher is the spawner thread's).
    let children: String = fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| fs::read_to_string(task.ok()?.path().join("children")).ok())
        .collect();
    assert_eq!(children.trim(), "", "a launcher was left behind");
}

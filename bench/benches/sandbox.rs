//! Sandbox overhead: spawn and wait of `/bin/true`, plain versus sandboxed
//! (workspace-write, network off), with the per-command preparation measured
//! apart, and network off versus proxied (a network namespace of its own
//! with its egress listener handed over). Ends with two summary lines: the
//! time the sandbox adds at spawn and the ratio (goal: at most 0.4 ms
//! added), and what a proxied network adds to a network-off spawn.

use std::ffi::OsString;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group};
use praxis_sandbox::{Limits, Network, Prepared, Profile, Rlimits, Spec, Stdio};

struct Setup {
    _tmp: tempfile::TempDir,
    plain: Spec,
    git: Spec,
    proxied: Spec,
    /// The plain spec reading `/` but what it carves out, as restricted
    /// profiles did before reads were an allow-list: the baseline the
    /// allow-list is paired with.
    whole_root: Spec,
    /// The plain spec with a private /tmp and /var/tmp mounted.
    private_tmp: Spec,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let plain_ws = root.join("ws");
    let git_ws = root.join("repo");
    let home = root.join("home");
    for dir in [&plain_ws, &git_ws.join(".git/hooks"), &home.join(".ssh")] {
        fs::create_dir_all(dir).unwrap();
    }
    fs::write(git_ws.join(".git/config"), "").unwrap();
    // The built-in read allow-list, as praxisd expands it for this home.
    let policy = praxis_policy::Policy::builtin().expect("builtin policy");
    let reads = policy.sandbox_lists().reads_in(&home);
    let spec = |ws: &Path| Spec {
        profile: Profile::WorkspaceWrite,
        network: Network::Off,
        workspace: ws.to_path_buf(),
        home: home.clone(),
        writable_caches: Vec::new(),
        write_grants: Vec::new(),
        read_grants: Vec::new(),
        socket_relays: Vec::new(),
        protected: vec![ws.join(".git/hooks"), ws.join(".git/config")],
        reads: reads.clone(),
        secrets: vec![home.join(".ssh"), PathBuf::from("/etc/shadow")],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        extra_env_allow: Vec::new(),
        rlimits: Rlimits {
            fsize_bytes: 1 << 30,
            nofile: 1024,
            cpu_secs: 60,
        },
        limits: Limits::default(),
        run_as: None,
        scratch_root: root.join("scratch"),
        private_tmp: None,
    };
    let proxied = Spec {
        network: Network::Proxied { port: None },
        ..spec(&plain_ws)
    };
    let whole_root = Spec {
        reads: vec![PathBuf::from("/")],
        ..spec(&plain_ws)
    };
    let private = praxis_sandbox::PrivateTmp {
        tmp: root.join("private/tmp"),
        var_tmp: root.join("private/var-tmp"),
    };
    for dir in [&private.tmp, &private.var_tmp] {
        fs::create_dir_all(dir).unwrap();
    }
    let private_tmp = Spec {
        private_tmp: Some(private),
        ..spec(&plain_ws)
    };
    Setup {
        plain: spec(&plain_ws),
        private_tmp,
        git: spec(&git_ws),
        proxied,
        whole_root,
        _tmp: tmp,
    }
}

fn null_stdio() -> Stdio {
    let null = || {
        File::options()
            .read(true)
            .write(true)
            .open("/dev/null")
            .unwrap()
            .into()
    };
    Stdio {
        stdin: null(),
        stdout: null(),
        stderr: null(),
    }
}

fn plain_true() {
    assert!(Command::new("/bin/true").status().unwrap().success());
}

/// Spawns and waits; a proxied child's listener is taken (and dropped), as
/// the daemon would take it to serve the proxy.
fn sandboxed_true(prepared: Prepared, cwd: &Path) {
    let argv = [OsString::from("/bin/true")];
    let mut child = praxis_sandbox::spawn(prepared, &argv, cwd, null_stdio()).unwrap();
    drop(child.take_egress_listener());
    assert_eq!(child.wait().unwrap(), praxis_sandbox::ExitStatus::Code(0));
}

fn bench_sandbox(c: &mut Criterion) {
    let s = setup();
    let mut group = c.benchmark_group("sandbox");
    group.bench_function("plain_spawn_wait_true", |b| b.iter(plain_true));
    for (name, spec) in [
        ("sandboxed_spawn_wait_true", &s.plain),
        ("sandboxed_spawn_wait_true_git_pins", &s.git),
        ("sandboxed_spawn_wait_true_proxied", &s.proxied),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || praxis_sandbox::prepare(spec).unwrap(),
                |prepared| sandboxed_true(prepared, &spec.workspace),
                BatchSize::PerIteration,
            )
        });
    }
    group.bench_function("prepare_workspace_write", |b| {
        b.iter(|| praxis_sandbox::prepare(&s.plain).unwrap())
    });
    group.finish();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Interleaved runs of both, so machine noise hits them alike.
fn summary() {
    let s = setup();
    let rounds = 300;
    let (mut plain, mut sandboxed, mut prepare) = (Vec::new(), Vec::new(), Vec::new());
    let mut proxied = Vec::new();
    let (mut listed, mut whole_root, mut private_tmp) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (spec, samples) in [
            (&s.plain, &mut listed),
            (&s.whole_root, &mut whole_root),
            (&s.private_tmp, &mut private_tmp),
        ] {
            let start = Instant::now();
            let prepared = praxis_sandbox::prepare(spec).unwrap();
            sandboxed_true(prepared, &spec.workspace);
            samples.push(start.elapsed());
        }
        let start = Instant::now();
        plain_true();
        plain.push(start.elapsed());
        let start = Instant::now();
        let prepared = praxis_sandbox::prepare(&s.plain).unwrap();
        prepare.push(start.elapsed());
        let start = Instant::now();
        sandboxed_true(prepared, &s.plain.workspace);
        sandboxed.push(start.elapsed());
        let start = Instant::now();
        let prepared = praxis_sandbox::prepare(&s.proxied).unwrap();
        sandboxed_true(prepared, &s.proxied.workspace);
        proxied.push(start.elapsed());
    }
    let off_total = median(
        sandboxed
            .iter()
            .zip(&prepare)
            .map(|(spawn, prep)| *spawn + *prep)
            .collect(),
    );
    let proxied = median(proxied);
    let (listed, whole_root, private_tmp) =
        (median(listed), median(whole_root), median(private_tmp));
    let (plain, sandboxed, prepare) = (median(plain), median(sandboxed), median(prepare));
    let added = sandboxed.saturating_sub(plain);
    println!(
        "sandbox summary (median of {rounds}): plain {plain:?}, sandboxed spawn {sandboxed:?}, \
         added {added:?} ({:.2}x, goal <= 400us added); prepare in the parent {prepare:?}",
        sandboxed.as_secs_f64() / plain.as_secs_f64()
    );
    println!(
        "network summary (median of {rounds}, prepare and spawn): off {off_total:?}, \
         proxied {proxied:?}, added by the namespace and listener handoff {:?}",
        proxied.saturating_sub(off_total)
    );
    println!(
        "read allow-list summary (median of {rounds}, prepare and spawn): allow-list {listed:?}, \
         reading / {whole_root:?}, added by the allow-list {:?} ({:.2}x, goal <= 200us added)",
        listed.saturating_sub(whole_root),
        listed.as_secs_f64() / whole_root.as_secs_f64()
    );
    println!(
        "private /tmp summary (median of {rounds}, prepare and spawn): without {listed:?}, \
         with {private_tmp:?}, added {:?} ({:.2}x)",
        private_tmp.saturating_sub(listed),
        private_tmp.as_secs_f64() / listed.as_secs_f64()
    );
}

criterion_group!(benches, bench_sandbox);

fn main() {
    benches();
    summary();
    Criterion::default().configure_from_args().final_summary();
}

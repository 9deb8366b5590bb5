//! Shared fixture for the sandbox tests: a workspace, a fake home with a
//! secret, a directory outside both, and a runner for real children.

#![allow(dead_code)] // each test file uses its own subset

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use praxis_sandbox::{ExitStatus, Limits, Network, Profile, Rlimits, RunAs, Spec, Stdio, Waited};

/// A network namespace of its own, the sandbox picking the listener's port.
pub const PROXIED: Network = Network::Proxied { port: None };

/// The name the probe helper reads its instruction from.
pub const PROBE_VAR: &str = "SANDBOX_TEST_PROBE";

pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
    pub scratch_root: PathBuf,
}

/// The system trees the fixture's commands may read (the daemon takes its
/// list from `patterns.toml`).
pub const SYSTEM_READS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/sys",
];

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        let ws = root.join("ws");
        let home = root.join("home");
        let outside = root.join("outside");
        for dir in [&ws, &home, &outside, &home.join(".ssh")] {
            fs::create_dir_all(dir).unwrap();
        }
        fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
        fs::write(home.join("notes"), "public\n").unwrap();
        // On no list at all: unreadable because nothing grants it.
        fs::create_dir_all(home.join(".config/app")).unwrap();
        fs::write(home.join(".config/app/token"), "UNLISTED TOKEN\n").unwrap();
        Fixture {
            _tmp: tmp,
            ws,
            home,
            outside,
            scratch_root: root.join("scratch"),
        }
    }

    pub fn spec(&self, profile: Profile, network: Network) -> Spec {
        Spec {
            profile,
            network,
            workspace: self.ws.clone(),
            home: self.home.clone(),
            writable_caches: Vec::new(),
            write_grants: Vec::new(),
            read_grants: Vec::new(),
            socket_relays: Vec::new(),
            protected: [".git/hooks", ".git/config", ".mcp.json"]
                .iter()
                .map(|p| self.ws.join(p))
                .collect(),
            reads: SYSTEM_READS
                .iter()
                .map(PathBuf::from)
                .chain([self.home.join("notes"), self.outside.clone()])
                .collect(),
            secrets: vec![self.home.join(".ssh"), self.home.join(".aws")],
            env: std::env::vars_os().collect(),
            extra_env_allow: vec![PROBE_VAR.to_owned()],
            rlimits: Rlimits {
                fsize_bytes: 1 << 20,
                nofile: 64,
                cpu_secs: 7,
            },
            limits: Limits::default(),
            run_as: None,
            scratch_root: self.scratch_root.clone(),
            private_tmp: None,
        }
    }
}

/// The result of one sandboxed command.
pub struct Ran {
    pub waited: Waited,
    pub output: String,
    pub scratch: PathBuf,
}

impl Ran {
    pub fn code(&self) -> i32 {
        self.waited.status.shell_code()
    }

    pub fn ok(&self) -> bool {
        self.waited.status == ExitStatus::Code(0)
    }
}

fn dev_null() -> OwnedFd {
    fs::File::open("/dev/null").unwrap().into()
}

/// Whether spare launchers here copy the host's mounts ahead: commands
/// get cgroups (so spares have launchers) and this process may copy
/// mounts (root). Says why not when they do not.
pub fn launchers_copy_mounts_here() -> bool {
    if !praxis_sandbox::limiting().by_cgroup() {
        println!(
            "skipping: no cgroup per command here ({})",
            praxis_sandbox::limiting()
        );
        return false;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipping: only a daemon with CAP_SYS_ADMIN copies the mounts ahead");
        return false;
    }
    true
}

/// Starts `argv` in `cwd` under `spec`, its stdio on `/dev/null`.
pub fn start_in(spec: &Spec, cwd: &Path, argv: &[&str]) -> praxis_sandbox::Child {
    let stdio = Stdio {
        stdin: dev_null(),
        stdout: dev_null(),
        stderr: dev_null(),
    };
    let prepared = praxis_sandbox::prepare(spec).unwrap();
    let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
    praxis_sandbox::spawn(prepared, &argv, cwd, stdio).unwrap()
}

/// Runs `argv` in `cwd` under `spec`, stdout and stderr captured together.
pub fn run_in(spec: &Spec, cwd: &Path, argv: &[&str]) -> Ran {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let writer: OwnedFd = writer.into();
    let stdio = Stdio {
        stdin: dev_null(),
        stdout: writer.try_clone().unwrap(),
        stderr: writer,
    };
    let prepared = praxis_sandbox::prepare(spec).unwrap();
    let scratch = prepared.scratch_dir().to_path_buf();
    let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
    let mut child = praxis_sandbox::spawn(prepared, &argv, cwd, stdio).unwrap();
    let collector = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = reader.read_to_string(&mut out);
        out
    });
    let waited = child
        .wait_timeout(Duration::from_secs(60), Duration::from_secs(1))
        .unwrap();
    drop(child);
    Ran {
        waited,
        output: collector.join().unwrap(),
        scratch,
    }
}

/// Runs `sh -c script` in the workspace.
pub fn sh(spec: &Spec, script: &str) -> Ran {
    run_in(spec, &spec.workspace, &["/bin/sh", "-c", script])
}

/// Runs this test binary's probe helper with `probe` in the environment.
pub fn probe(spec: &Spec, probe: &str) -> Ran {
    let mut spec = spec.clone();
    spec.env.push((PROBE_VAR.into(), probe.into()));
    let exe = std::env::current_exe().unwrap();
    spec.reads.push(exe.clone());
    run_in(
        &spec,
        &spec.workspace.clone(),
        &[
            exe.to_str().unwrap(),
            "--exact",
            "probe_helper",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ],
    )
}

/// Whether a command may run as another user here: switching needs root.
/// Says so when it may not.
pub fn may_switch_user() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        println!("skipping: running a command as another user needs root");
    }
    root
}

pub fn nobody() -> RunAs {
    RunAs {
        uid: 65534,
        gid: 65534,
        groups: Vec::new(),
    }
}

pub fn have(tool: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
    if !found {
        println!("skipping: {tool} is not installed");
    }
    found
}

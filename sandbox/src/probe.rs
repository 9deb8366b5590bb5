//! What the kernel offers ([`support`]) and whether the sandbox really holds
//! ([`self_test`]: escapes tried from a sandboxed child).

use std::ffi::CString;
use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::child::{Stage, Then};
use crate::escape_probes::{PROBES, ProbeArgs};
use crate::fs_rules::landlock_abi;
use crate::process::{self, Child};
use crate::scratch::ScratchDir;
use crate::{Limits, Network, Profile, Rlimits, SandboxError, Spec, Stdio};

/// What the sandbox can rely on here, for `praxis status`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Support {
    /// Landlock ABI version (0: none).
    pub landlock_abi: i32,
    /// Whether seccomp filters are available.
    pub seccomp: bool,
    /// Whether protected paths are pinned with mounts (CAP_SYS_ADMIN, or an
    /// unprivileged user namespace), rather than carved with Landlock alone.
    pub mount_pins: bool,
    /// Whether the capability bounding set can be dropped (CAP_SETPCAP).
    /// Without it the set stays, but no_new_privs keeps it from being used.
    pub bounding_drop: bool,
    /// Whether Landlock logs denials after exec (ABI 7).
    pub audit_denials: bool,
    /// Whether a command can get a network namespace of its own (directly
    /// with CAP_SYS_ADMIN, else inside a user namespace). Without it,
    /// [`crate::Network::Proxied`] is refused and only network-off commands run.
    pub net_namespace: bool,
}

impl Support {
    /// Reasons the sandbox cannot be enforced; empty when it can.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.landlock_abi < crate::MIN_LANDLOCK_ABI {
            problems.push(format!(
                "Landlock ABI {} found, {} required",
                self.landlock_abi,
                crate::MIN_LANDLOCK_ABI
            ));
        }
        if !self.seccomp {
            problems.push("seccomp filters unavailable".to_owned());
        }
        problems
    }
}

/// Inspects the kernel and this process's privileges.
pub fn support() -> Support {
    let has = |cap| caps::has_cap(None, caps::CapSet::Effective, cap).unwrap_or(false);
    let landlock_abi = landlock_abi();
    Support {
        landlock_abi,
        // SAFETY: PR_GET_SECCOMP only reads the mode; EINVAL means no seccomp.
        seccomp: unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } >= 0,
        mount_pins: has(caps::Capability::CAP_SYS_ADMIN) || crate::pins::user_namespaces_work(),
        bounding_drop: has(caps::Capability::CAP_SETPCAP),
        audit_denials: landlock_abi >= 7,
        net_namespace: crate::pins::net_namespaces_work(!has(caps::Capability::CAP_SYS_ADMIN))
            .is_ok(),
    }
}

/// What the self-test found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct SelfTestReport {
    /// Each probe that gave the wrong answer; empty when the sandbox holds.
    pub failures: Vec<String>,
    /// The restrictions the probe child ran under.
    pub restrictions: String,
}

impl SelfTestReport {
    /// Whether every escape failed and the allowed write worked.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    process::c_string(path.as_os_str().as_bytes(), "self-test path")
}

fn dev_null() -> Result<OwnedFd, SandboxError> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map(OwnedFd::from)
        .map_err(|e| SandboxError::os("opening /dev/null", e))
}

/// Spawns a child under the default command profile (workspace-write,
/// network off) and tries, from inside it: a write in its workspace (must
/// work), a write outside it, a write into its `.git/hooks`, reading a
/// secret, a TCP connect to a loopback listener, a UDP socket, a signal to pid 1 and `io_uring_setup` (must all
/// fail). An error means the self-test could not run at all.
pub fn self_test(scratch_root: &Path) -> Result<SelfTestReport, SandboxError> {
    let base = ScratchDir::create(scratch_root, None)?;
    let workspace = base.0.join("workspace");
    let outside = base.0.join("outside");
    let hooks = workspace.join(".git/hooks");
    // A subdirectory: without mounts, the root of a workspace holding a
    // protected path is read-only by design.
    let src = workspace.join("src");
    for dir in [&hooks, &src, &outside] {
        fs::create_dir_all(dir).map_err(|e| SandboxError::os("creating self-test dirs", e))?;
    }
    let secret = outside.join("secret");
    fs::write(&secret, "s").map_err(|e| SandboxError::os("creating the self-test secret", e))?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| SandboxError::os("binding a loopback listener", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| SandboxError::os("reading the listener address", e))?
        .port();

    let spec = Spec {
        profile: Profile::WorkspaceWrite,
        network: Network::Off,
        workspace: workspace.clone(),
        home: workspace.clone(),
        writable_caches: Vec::new(),
        write_grants: Vec::new(),
        read_grants: Vec::new(),
        socket_relays: Vec::new(),
        protected: vec![hooks.clone()],
        // The secret lies in a read tree: the carve must take it out.
        reads: vec![outside.clone()],
        secrets: vec![secret.clone()],
        env: Vec::new(),
        extra_env_allow: Vec::new(),
        rlimits: Rlimits {
            fsize_bytes: 1 << 20,
            nofile: 64,
            cpu_secs: 5,
        },
        limits: Limits::default(),
        run_as: None,
        scratch_root: base.0.clone(),
        private_tmp: None,
    };
    let mut prepared = process::prepare(&spec)?;
    let restrictions = prepared.restrictions();
    let args = ProbeArgs {
        inside: c_path(&src.join("probe"))?,
        outside: c_path(&outside.join("probe"))?,
        secret: c_path(&secret)?,
        hook: c_path(&hooks.join("pre-commit"))?,
        tcp: process::loopback(port),
    };
    let stdio = Stdio {
        stdin: dev_null()?,
        stdout: dev_null()?,
        stderr: dev_null()?,
    };
    let launched = process::launch(&mut prepared, &workspace, &stdio, Then::Probe(&args))?;
    let mut child = Child::adopt(launched.pid);
    let mut buf = [0u8; 8];
    let filled = process::read_report(&launched.report, &mut buf)?;
    child.wait()?;
    drop(listener);
    if filled != buf.len() {
        return Err(SandboxError::Invalid(
            "self-test child sent a truncated report".into(),
        ));
    }
    if u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) != Stage::Probe as u32 {
        return Err(process::report_error(buf));
    }
    let bits = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let failures = PROBES
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, what)| (*what).to_owned())
        .collect();
    Ok(SelfTestReport {
        failures,
        restrictions,
    })
}

//! The one path into `praxis_sandbox`: every process praxisd starts, an
//! allowed command or a credential's `from_command`, is prepared and spawned
//! here, and the sandbox's start-up self-test runs from here too.

use std::ffi::OsString;
use std::future::Future;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use nix::sys::signal::Signal;
use praxis_proto::Layout;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, Interest};
use tokio::net::unix::pipe;
use zeroize::Zeroizing;

use crate::children::signal_group;
use crate::errors;
use crate::paths::DEFAULT_PATH;

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot create output pipe: {0}")]
    Pipe(nix::Error),
    #[error("sandbox: {0}")]
    Sandbox(#[from] praxis_sandbox::SandboxError),
}

/// Exit of the sandboxed child as the waiter saw it: code, or signal.
pub type Waited = Result<(Option<i32>, Option<i32>), String>;

/// A spawned command: its process group, its exit (a future that reaps it
/// in the task that awaits it), and, for a command with network grants, the
/// listener inside its network namespace that the egress proxy serves, and
/// one listener there per socket relay, in the spec's order.
pub struct Running {
    pub pgid: i32,
    pub exited: Pin<Box<dyn Future<Output = Waited> + Send>>,
    pub egress: Option<std::net::TcpListener>,
    pub sockets: Vec<std::net::TcpListener>,
}

/// A pipe whose ends close on exec.
pub fn cloexec_pipe() -> Result<(OwnedFd, OwnedFd), SpawnError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(SpawnError::Pipe)
}

/// Prepares the sandbox and spawns: the codebase's one call into the spawn
/// site.
pub fn sandboxed(
    spec: &praxis_sandbox::Spec,
    argv: &[OsString],
    cwd: &Path,
    stdio: praxis_sandbox::Stdio,
) -> Result<Running, SpawnError> {
    let prepared = praxis_sandbox::prepare(spec)?;
    let mut child = praxis_sandbox::spawn(prepared, argv, cwd, stdio)?;
    let egress = child.take_egress_listener();
    let sockets = child.take_socket_listeners();
    let pgid = child.pid();
    Ok(Running {
        pgid,
        exited: Box::pin(reaped(child)),
        egress,
        sockets,
    })
}

/// Waits for the command's first process to exit and reaps it; the
/// sandbox's `wait_leaving` also kills what is left of its group and
/// cgroups. The exit is watched on the child's pidfd by the task that
/// awaits this, so no thread stands between the exit and its report. The
/// leader is reaped, and its cgroups, scratch dir and namespaces removed,
/// once the client is gone (the server says so, and the next command's
/// spare is made then too).
async fn reaped(child: praxis_sandbox::Child) -> Waited {
    let (waited, leftovers) = match leader_exit(&child).await {
        Ok(()) => child.wait_leaving(),
        Err(e) => {
            // Not expected (a spawned child always has a pidfd): wait on a
            // blocking thread instead.
            tracing::warn!("waiting on a command's pidfd: {e}");
            match tokio::task::spawn_blocking(move || child.wait_leaving()).await {
                Ok(done) => done,
                Err(e) => return Err(format!("waiter lost: {e}")),
            }
        }
    };
    let waited = match waited {
        Ok(praxis_sandbox::ExitStatus::Code(code)) => Ok((Some(code), None)),
        Ok(praxis_sandbox::ExitStatus::Signal(sig)) => Ok((None, Some(sig))),
        Err(e) => Err(errors::one_line(&e)),
    };
    leftovers.remove_later(|e| tracing::warn!("after a command: {}", errors::one_line(&e)));
    waited
}

/// Resolves once the child's pidfd is readable: its first process exited.
async fn leader_exit(child: &praxis_sandbox::Child) -> std::io::Result<()> {
    let pidfd = child
        .pidfd()
        .ok_or_else(|| std::io::Error::other("no pidfd"))?;
    // SAFETY: the descriptor is borrowed from `child`, which keeps it open
    // for as long as `watch` lives (it is dropped, deregistered, here,
    // before the reap closes the pidfd).
    let watch = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) }
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    watch.readable().await.map(drop)
}

/// How long a credential's `from_command` may take.
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a credential's `from_command`: the broker's resolution exec, through
/// the same sandbox spawn as every command (`full` profile, no network, the
/// daemon's own identity and `PATH`, stdin and stderr on /dev/null). Returns
/// its standard output, at most `max` bytes; a non-zero exit is an error.
pub async fn capture(
    shell: &Path,
    layout: &Layout,
    command: &str,
    max: u64,
) -> Result<Zeroizing<Vec<u8>>, String> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
        .unwrap_or_else(|| PathBuf::from("/"));
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    let spec = praxis_sandbox::Spec {
        profile: praxis_sandbox::Profile::Full,
        network: praxis_sandbox::Network::Off,
        workspace: home.clone(),
        home: home.clone(),
        writable_caches: Vec::new(),
        write_grants: Vec::new(),
        read_grants: Vec::new(),
        socket_relays: Vec::new(),
        protected: Vec::new(),
        reads: Vec::new(),
        secrets: Vec::new(),
        env: vec![(OsString::from("PATH"), path)],
        extra_env_allow: Vec::new(),
        rlimits: praxis_sandbox::Rlimits {
            fsize_bytes: 1 << 26,
            nofile: 1024,
            cpu_secs: CAPTURE_TIMEOUT.as_secs(),
        },
        limits: praxis_sandbox::Limits::default(),
        run_as: None,
        scratch_root: layout.scratch_root(),
        private_tmp: None,
    };
    let argv = [
        shell.as_os_str().to_owned(),
        OsString::from("-c"),
        OsString::from(command),
    ];
    let null = |write: bool| {
        std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .open("/dev/null")
            .map(OwnedFd::from)
            .map_err(|e| format!("/dev/null: {e}"))
    };
    let (out_r, out_w) = cloexec_pipe().map_err(|e| errors::one_line(&e))?;
    let stdio = praxis_sandbox::Stdio {
        stdin: null(false)?,
        stdout: out_w,
        stderr: null(true)?,
    };
    let running = sandboxed(&spec, &argv, &home, stdio).map_err(|e| errors::one_line(&e))?;
    let mut out = pipe::Receiver::from_owned_fd(out_r).map_err(|e| e.to_string())?;
    let mut value = Zeroizing::new(Vec::new());
    let read = async {
        let mut buf = Zeroizing::new([0u8; 4096]);
        loop {
            match out.read(&mut buf[..]).await {
                Ok(0) => return Ok(()),
                Ok(n) if value.len() + n > max as usize => {
                    return Err(format!("printed more than {max} bytes"));
                }
                Ok(n) => value.extend_from_slice(&buf[..n]),
                Err(e) => return Err(e.to_string()),
            }
        }
    };
    let outcome = match tokio::time::timeout(CAPTURE_TIMEOUT, read).await {
        Ok(result) => result,
        Err(_) => Err(format!("timed out after {}s", CAPTURE_TIMEOUT.as_secs())),
    };
    if outcome.is_err() {
        signal_group(running.pgid, Signal::SIGKILL);
    }
    let waited = running.exited.await;
    outcome?;
    match waited? {
        (Some(0), _) => Ok(value),
        (Some(code), _) => Err(format!("exit code {code}")),
        (None, Some(sig)) => Err(format!("killed by signal {sig}")),
        (None, None) => Err(String::from("exit status unknown")),
    }
}

/// Runs the sandbox's start-up self-test: `Ok(restrictions)` when every
/// escape failed, else `Err(what got through)`, and the daemon serves only HOLD.
pub fn self_test(scratch_root: &Path) -> Result<String, String> {
    match praxis_sandbox::self_test(scratch_root) {
        Ok(report) if report.passed() => Ok(report.restrictions),
        Ok(report) => Err(report.failures.join("; ")),
        Err(e) => Err(format!("could not run: {}", errors::one_line(&e))),
    }
}

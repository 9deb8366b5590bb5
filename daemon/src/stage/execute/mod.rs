//! The execute stage: runs a permitted command through the one spawn path
//! (`crate::spawn`). It takes a [`Permit`] by value, streams the command's
//! output through the output stage (`output`), and ends the command's
//! whole process group on cancel, client disconnect, timeout or kill switch;
//! once its first process is reaped, the sandbox kills whatever is left in
//! its cgroup, sessions of their own included (see `praxis_sandbox::tracking`).

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use praxis_egress::ConnectionEvent;
use praxis_policy::redact::Redactor;
use praxis_policy::{CommandJudgment, Decision, Profile};
use praxis_proto::frame::{Frame, MAX_OUTPUT_CHUNK};
use praxis_proto::{ClientMsg, DecisionFrame, ExitFrame, ExitStatus, ServerMsg, Verdict};
use tokio::io::AsyncReadExt;
use tokio::net::unix::OwnedReadHalf;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

use crate::children::{Children, signal_group};
use crate::config::Config;
use crate::conn::{self, Writer};
use crate::egress::{self, EgressHub};
use crate::errors;
use crate::gate::{Brokered, Executed, Permit, Ran, Refusal, Trail, decision_frame};
use crate::paths::expand_home;
use crate::socket_relay;
use crate::spawn::{self, Running, SpawnError, Waited};

mod output;
mod refusals;

use output::Output;
use refusals::{Reach, Refusals};

/// What the execute stage uses of the daemon: its configuration, the
/// egress proxy (or why it is unavailable), and the registry of running
/// children that the kill switch and shutdown reach.
pub struct Resources<'a> {
    pub config: &'a Config,
    pub egress: Result<&'a Arc<EgressHub>, &'a str>,
    pub children: &'a Arc<Children>,
}

/// How long output may keep arriving after the command's group was killed
/// (without a cgroup, a process that left the group can hold a pipe open).
const DRAIN: Duration = Duration::from_millis(200);

/// The variables that point the command's programs at its socket relays
/// (`[[socket]]`), one relay port each, in the order of the grants.
fn socket_env(permit: &Permit, relay_ports: &[u16]) -> Vec<(String, String)> {
    permit
        .decision
        .grants
        .sockets
        .iter()
        .zip(relay_ports)
        .flat_map(|(socket, port)| {
            permit
                .policy
                .socket_env(socket, &format!("127.0.0.1:{port}"))
        })
        .collect()
}

/// The sandbox spec for a permit: profile and network from the decision,
/// path lists from the policy, limits from the policy, identity from the
/// peer; `egress` when the command goes out through the proxy; one relay
/// port per granted socket.
fn spec(config: &Config, permit: &Permit, egress: Option<&EgressHub>) -> praxis_sandbox::Spec {
    // The policy the permit was issued under, even if a reload happened since.
    let lists = permit.policy.sandbox_lists();
    let limits = permit.policy.limits();
    let expand = |list: &[String]| -> Vec<PathBuf> {
        list.iter().map(|p| expand_home(p, &permit.home)).collect()
    };
    let mut protected = expand(&lists.protected);
    protected.push(config.layout.state_dir.clone());
    protected.push(config.layout.config_dir.clone());
    let mut secrets = expand(&lists.secrets);
    secrets.push(config.layout.state_dir.clone());
    let writable_caches = expand(&lists.writable_caches);
    // The allow-list of reads: the policy's trees, and the caches a
    // read-only command may still read from.
    let mut reads = lists.reads_in(&permit.home);
    reads.extend(writable_caches.iter().cloned());
    reads.extend(config.sandbox_reads.iter().cloned());
    // What a command going out through the proxy reads to trust it.
    reads.extend(
        egress
            .into_iter()
            .flat_map(|hub| [hub.bundle.clone(), hub.ca_cert.clone()]),
    );
    let run_as = (nix::unistd::geteuid().is_root() && permit.peer.uid != 0).then(|| {
        let groups = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(permit.peer.uid))
            .ok()
            .flatten()
            .and_then(|u| {
                let name = std::ffi::CString::new(u.name).ok()?;
                nix::unistd::getgrouplist(&name, u.gid).ok()
            })
            .map(|gs| gs.into_iter().map(|g| g.as_raw()).collect())
            .unwrap_or_default();
        praxis_sandbox::RunAs {
            uid: permit.peer.uid,
            gid: permit.peer.gid,
            groups,
        }
    });
    let socket_relays = praxis_sandbox::relay_ports(permit.decision.grants.sockets.len());
    let socket_env = socket_env(permit, &socket_relays);
    praxis_sandbox::Spec {
        profile: permit.decision.profile,
        network: if permit.decision.network() {
            praxis_sandbox::Network::Proxied { port: None }
        } else {
            praxis_sandbox::Network::Off
        },
        workspace: permit.workspace.clone(),
        home: permit.home.clone(),
        writable_caches,
        write_grants: permit.decision.grants.write.clone(),
        read_grants: permit.decision.grants.read.clone(),
        socket_relays,
        protected,
        reads,
        secrets,
        env: permit
            .env
            .iter()
            .cloned()
            .chain(Brokered::env_entries(&permit.brokered))
            .chain(egress.map(EgressHub::child_env).unwrap_or_default())
            .chain(
                socket_env
                    .iter()
                    .map(|(n, v)| (OsString::from(n), OsString::from(v))),
            )
            .collect(),
        extra_env_allow: permit
            .brokered
            .iter()
            .map(|b| b.env.clone())
            .chain(
                egress
                    .map(|_| EgressHub::child_env_names())
                    .unwrap_or_default(),
            )
            .chain(socket_env.into_iter().map(|(name, _)| name))
            .collect(),
        rlimits: praxis_sandbox::Rlimits {
            fsize_bytes: limits.rlimit_fsize_bytes,
            nofile: limits.rlimit_nofile,
            cpu_secs: limits.rlimit_cpu_secs,
        },
        limits: config.command_limits,
        run_as,
        scratch_root: config.layout.scratch_root(),
        private_tmp: None,
    }
}

/// The session's private `/tmp` and `/var/tmp` (else the workspace's),
/// made for the command's user if missing.
fn private_tmp(
    config: &Config,
    spec: &praxis_sandbox::Spec,
    session: Option<&str>,
) -> Result<praxis_sandbox::PrivateTmp, String> {
    let dir = crate::private_tmp::dir_for(&config.layout, session, &spec.workspace);
    let owner = spec.run_as.as_ref().map(|r| (r.uid, r.gid));
    let (tmp, var_tmp) = crate::private_tmp::make(&dir, owner)
        .map_err(|e| format!("cannot make the private /tmp {}: {e}", dir.display()))?;
    Ok(praxis_sandbox::PrivateTmp { tmp, var_tmp })
}

/// Starts the command in the sandbox with fresh pipes for its output.
fn start(
    spec: &praxis_sandbox::Spec,
    argv: &[OsString],
    cwd: &Path,
    stdin: OwnedFd,
) -> Result<(Running, OwnedFd, OwnedFd), SpawnError> {
    let (out_r, out_w) = spawn::cloexec_pipe()?;
    let (err_r, err_w) = spawn::cloexec_pipe()?;
    let stdio = praxis_sandbox::Stdio {
        stdin,
        stdout: out_w,
        stderr: err_w,
    };
    let running = spawn::sandboxed(spec, argv, cwd, stdio)?;
    Ok((running, out_r, err_r))
}

/// Sends output to the client while it is connected; returns whether it still is.
async fn send(writer: &mut Writer, connected: bool, is_stderr: bool, bytes: Vec<u8>) -> bool {
    if !connected || bytes.is_empty() {
        return connected;
    }
    let frame = if is_stderr {
        Frame::Stderr(bytes)
    } else {
        Frame::Stdout(bytes)
    };
    writer.frame(&frame).await.is_ok()
}

/// Sends what each stream has to deliver, `[stdout, stderr]`.
async fn send_both(writer: &mut Writer, mut connected: bool, bytes: [Vec<u8>; 2]) -> bool {
    for (is_stderr, bytes) in [false, true].into_iter().zip(bytes) {
        connected = send(writer, connected, is_stderr, bytes).await;
    }
    connected
}

/// Watches the client for a cancel or a disconnect; either ends the command.
fn watch_client(mut reader: OwnedReadHalf) -> oneshot::Receiver<&'static str> {
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let why = match conn::read_frame(&mut reader).await {
            Ok(frame) => match frame.parse_message::<ClientMsg>() {
                Ok(ClientMsg::Cancel) => "cancelled by the client",
                // Anything else mid-run is a protocol violation: end the run.
                _ => "protocol violation by the client",
            },
            Err(_) => "client disconnected",
        };
        let _ = tx.send(why);
    });
    rx
}

/// Reads one chunk from a pipe into `buf` (emptied first), up to its
/// capacity; None at end of stream or error. It reads into spare capacity,
/// so a buffer is neither zeroed nor touched beyond what the command wrote.
async fn read_chunk(pipe: &mut Option<pipe::Receiver>, buf: &mut Vec<u8>) -> Option<usize> {
    buf.clear();
    match pipe {
        Some(p) => match p.read_buf(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

/// SIGTERM to the group now; returns when SIGKILL is due. The run loop sends
/// it only while the command is not reaped: after the reap, the group id may
/// belong to another group.
fn terminate(pgid: i32, grace: Duration) -> tokio::time::Instant {
    signal_group(pgid, Signal::SIGTERM);
    tokio::time::Instant::now() + grace
}

/// Answers HOLD for an allowed command that cannot start (`reason`).
pub async fn not_started(
    writer: &mut Writer,
    trail: &Trail,
    decision: &Decision,
    reason: String,
) -> Executed {
    let r = Refusal {
        reason: reason.clone(),
        ..Refusal::of(decision)
    };
    let _ = writer
        .send(&ServerMsg::Decision(decision_frame(
            trail,
            Verdict::Hold,
            &r,
        )))
        .await;
    Executed::NotStarted {
        reason,
        tier: decision.tier,
        profile: decision.profile,
    }
}

/// The output redactor of one command: the policy's secret rules (in their
/// output form) plus its brokered values, whose encoded forms it masks too.
fn redactor(permit: &Permit) -> Result<Redactor, String> {
    // What the agent reads is what it may write back: generic rules mask
    // there only what looks like a real secret; brokered values always.
    let base = permit.policy.redactor().for_output();
    if permit.brokered.is_empty() {
        return Ok(base);
    }
    let values: Vec<(&str, &[u8])> = permit
        .brokered
        .iter()
        .map(|b| (b.name.as_str(), &b.value[..]))
        .collect();
    base.with_known_values(&values)
        .map_err(|e| format!("redactor: {}", errors::one_line(&e)))
}

/// What a granted write path that does not exist yet is made as.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    File,
    Directory,
    /// A directory, for `cp` copying one directory to that new name: cp
    /// then copies into it (`DEST/NAME`), which the agent is told.
    DirectoryCpNests(String),
}

/// How a granted path is made for the commands that name it: a directory
/// for `mkdir`, and for a recursive copy (`cp -r`/`-R`/`-a`, `rsync
/// -r`/`-a`) of a directory or of several sources; else a file.
fn shape(judged: &[CommandJudgment], cwd: &Path, path: &Path) -> Shape {
    for c in judged
        .iter()
        .filter(|c| c.grants.write.iter().any(|w| w == path))
    {
        if c.program == "mkdir" {
            return Shape::Directory;
        }
        let flags = &c.shape.flags;
        let has = |short: &str, long: &str| flags.iter().any(|f| f == short || f == long);
        let recursive = match c.program.as_str() {
            "cp" => has("-r", "--recursive") || has("-R", "--recursive") || has("-a", "--archive"),
            "rsync" => has("-r", "--recursive") || has("-a", "--archive"),
            _ => false,
        };
        // The path arguments in order: the sources, then the destination.
        let paths: Vec<&String> = c.shape.paths.iter().map(|(p, _)| p).collect();
        let Some((_, sources)) = paths.split_last() else {
            continue;
        };
        if !recursive || sources.is_empty() {
            continue;
        }
        let is_dir = |s: &String| std::fs::symlink_metadata(cwd.join(s)).is_ok_and(|m| m.is_dir());
        return match sources {
            [one] if c.program == "cp" && is_dir(one) && !has("-T", "--no-target-directory") => {
                Shape::DirectoryCpNests(String::clone(one))
            }
            [one] if !is_dir(one) => Shape::File,
            _ => Shape::Directory,
        };
    }
    Shape::File
}

/// Whether `path` lies strictly inside a protected path: an absolute entry,
/// or a relative one (`.git/hooks`) that names any of its ancestors. The
/// sandbox keeps those read-only whatever the grant, so nothing is made there.
fn inside_protected(path: &Path, protected: &[PathBuf]) -> bool {
    path.ancestors().skip(1).any(|dir| {
        protected.iter().any(|entry| {
            if entry.is_absolute() {
                dir == entry
            } else {
                dir.ends_with(entry)
            }
        })
    })
}

/// Makes each granted write path that does not exist yet, owned by the
/// caller, so the sandbox can grant exactly that inode (see [`shape`]). An
/// existing path is left as it is (the sandbox refuses a symlink), and so is
/// one inside a protected path, which the sandbox would refuse to write
/// anyway. Returns a line for the agent where the made path changes what a
/// command does.
fn make_write_grants(permit: &Permit, protected: &[PathBuf]) -> Result<Option<String>, String> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let mut note = None;
    for path in &permit.decision.grants.write {
        if std::fs::symlink_metadata(path).is_ok() || inside_protected(path, protected) {
            continue;
        }
        let shape = shape(&permit.decision.commands, &permit.cwd, path);
        if let Shape::DirectoryCpNests(source) = &shape {
            let name = Path::new(source)
                .file_name()
                .map_or_else(|| source.clone(), |n| n.to_string_lossy().into_owned());
            note = Some(format!(
                "praxis: {dest} did not exist, so it was made as an empty directory before the \
                 command (the sandbox grants existing paths only) and cp copied {source} into \
                 {dest}/{name}; `cp -rT {source} {dest}` copies its contents to {dest} itself.\n",
                dest = path.display(),
            ));
        }
        let made = if shape != Shape::File {
            nix::unistd::mkdir(path, Mode::from_bits_truncate(0o755))
        } else {
            nix::fcntl::open(
                path,
                OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_WRONLY
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o644),
            )
            .map(drop)
        };
        made.and_then(|()| give_to_caller(permit, path))
            .map_err(|e| format!("cannot prepare the write grant {}: {e}", path.display()))?;
    }
    Ok(note)
}

/// Hands a path praxisd just made to the caller (a no-op in user mode).
fn give_to_caller(permit: &Permit, path: &Path) -> nix::Result<()> {
    nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        path,
        Some(nix::unistd::Uid::from_raw(permit.peer.uid)),
        Some(nix::unistd::Gid::from_raw(permit.peer.gid)),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
}

/// Makes the caller's `~/.cache` when it is missing, before a command that
/// goes out to a registry: package tools keep their downloads there (uv,
/// pip, go's build cache), and the sandbox can only grant a cache that
/// exists. Only in a home the caller owns; a failure is left for the tool
/// to report.
fn make_cache_home(permit: &Permit) {
    use std::os::unix::fs::MetadataExt;
    if !permit.decision.network() || permit.decision.profile != Profile::WorkspaceWrite {
        return;
    }
    let cache = permit.home.join(".cache");
    let home_is_callers = std::fs::symlink_metadata(&permit.home)
        .is_ok_and(|m| m.is_dir() && m.uid() == permit.peer.uid);
    if !home_is_callers || std::fs::symlink_metadata(&cache).is_ok() {
        return;
    }
    let made = nix::unistd::mkdir(&cache, nix::sys::stat::Mode::from_bits_truncate(0o700))
        .and_then(|()| give_to_caller(permit, &cache));
    if let Err(e) = made {
        tracing::debug!("cannot make {}: {e}", cache.display());
    }
}

/// The proxy a command with network grants goes out through, and its
/// permit: `Ok(None)` for a command without network.
fn egress_for(
    resources: &Resources<'_>,
    permit: &Permit,
) -> Result<Option<(Arc<EgressHub>, praxis_egress::Permit)>, String> {
    if !permit.decision.network() {
        return Ok(None);
    }
    let hub = resources.egress.map_err(|why| {
        format!("the command needs network and the egress proxy is unavailable: {why}")
    })?;
    let bound: Vec<egress::BoundValue<'_>> = permit
        .brokered
        .iter()
        .filter_map(|b| {
            b.bound
                .as_ref()
                .map(|(binding, placeholder)| egress::BoundValue {
                    name: &b.name,
                    value: &b.value,
                    binding,
                    placeholder,
                })
        })
        .collect();
    Ok(Some((
        Arc::clone(hub),
        egress::permit(
            &permit.decision,
            &bound,
            permit.policy.loopback_ports(),
            &resources.config.praxis_ports(),
        )?,
    )))
}

/// Runs the permitted command to its end, streaming its output to the
/// client. `started` hears the child's pid once it runs, `on_egress` each
/// connection its proxy handled; the exit frame is left to [`report_exit`],
/// after the pipeline recorded the outcome.
pub async fn run(
    resources: Resources<'_>,
    mut permit: Permit,
    trail: &Trail,
    reader: OwnedReadHalf,
    writer: &mut Writer,
    started: impl FnOnce(i32),
    on_egress: impl Fn(ConnectionEvent) + Send + Sync + 'static,
) -> Executed {
    let on_egress: socket_relay::Sink = Arc::new(on_egress);
    let began = Instant::now();
    let redactor = match redactor(&permit) {
        Ok(r) => r,
        Err(reason) => return not_started(writer, trail, &permit.decision, reason).await,
    };
    let egress = match egress_for(&resources, &permit) {
        Ok(egress) => egress,
        Err(reason) => return not_started(writer, trail, &permit.decision, reason).await,
    };
    let mut spec = spec(
        resources.config,
        &permit,
        egress.as_ref().map(|(hub, _)| &**hub),
    );
    spec.private_tmp = match private_tmp(resources.config, &spec, trail.session.as_deref()) {
        Ok(private) => Some(private),
        Err(reason) => return not_started(writer, trail, &permit.decision, reason).await,
    };
    let grant_note = match make_write_grants(&permit, &spec.protected) {
        Ok(note) => note,
        Err(reason) => return not_started(writer, trail, &permit.decision, reason).await,
    };
    make_cache_home(&permit);
    let mut refusals = Refusals::new(Reach::of(&spec, &permit.cwd));
    let spawned = start(&spec, &permit.argv, &permit.cwd, permit.stdin);
    // The child has its copy; ours go now, not when the command ends.
    let names: Vec<String> = permit.brokered.iter().map(|b| b.env.clone()).collect();
    Brokered::wipe(&mut spec.env, &names);
    // Kept for the output's guard against a value split between streams.
    let brokered: Vec<(String, zeroize::Zeroizing<Vec<u8>>)> = permit
        .brokered
        .iter()
        .map(|b| (b.name.clone(), zeroize::Zeroizing::new(b.value.to_vec())))
        .collect();
    permit.brokered.clear();
    let (mut running, out_r, err_r) = match spawned {
        Ok(started) => started,
        Err(e) => {
            return not_started(writer, trail, &permit.decision, errors::one_line(&e)).await;
        }
    };
    // The proxy serves the listener inside the command's namespace until the
    // command ends; what it refused is told to the agent at the end.
    let refused = Arc::new(Mutex::new(Vec::<String>::new()));
    let proxy = match (egress, running.egress.take()) {
        (Some((hub, egress_permit)), Some(listener)) => {
            let refused = Arc::clone(&refused);
            let on_egress = Arc::clone(&on_egress);
            let sink = move |event: ConnectionEvent| {
                if matches!(event.verdict, praxis_egress::Disposition::Refused(_)) {
                    let mut refused = refused.lock().unwrap_or_else(|p| p.into_inner());
                    if !refused.contains(&event.destination) && refused.len() < MAX_NAMED {
                        refused.push(event.destination.clone());
                    }
                }
                on_egress(event);
            };
            Some(tokio::spawn(async move {
                hub.proxy.serve(listener, egress_permit, sink).await
            }))
        }
        _ => None,
    };
    // Each granted socket is relayed from its listener until the command ends.
    let relays: Vec<tokio::task::JoinHandle<()>> = std::mem::take(&mut running.sockets)
        .into_iter()
        .zip(permit.decision.grants.sockets.iter().cloned())
        .map(|(listener, socket)| {
            tokio::spawn(socket_relay::serve(
                listener,
                socket,
                Arc::clone(&on_egress),
            ))
        })
        .collect();
    let network = proxy.is_some();
    let mut closed_at_cap: Vec<&str> = Vec::new();
    let registration = resources.children.register(running.pgid);
    let allow = Refusal {
        reason: permit.decision.reason.clone(),
        tier: permit.decision.tier,
        rule_ids: permit.decision.rule_ids.clone(),
        profile: permit.decision.profile,
        approvable: false,
    };
    let mut connected = writer
        .send(&ServerMsg::Decision(DecisionFrame {
            steer: permit.steer.clone(),
            ..decision_frame(trail, Verdict::Allow, &allow)
        }))
        .await
        .is_ok();
    started(running.pgid);

    if let Some(advisory) = &permit.advisory
        && connected
    {
        let line = format!("{advisory}\n").into_bytes();
        connected = writer.frame(&Frame::Stderr(line)).await.is_ok();
    }

    let mut output = Output::new(permit.output_cap, &redactor, brokered);
    let mut stdout = pipe::Receiver::from_owned_fd(out_r).ok();
    let mut stderr = pipe::Receiver::from_owned_fd(err_r).ok();
    let mut client = watch_client(reader);
    let mut exited = running.exited;
    let deadline = tokio::time::sleep(permit.timeout);
    tokio::pin!(deadline);
    let grace = resources.config.kill_grace;
    let mut waited: Option<Waited> = None;
    let mut ended_because: Option<String> = None;
    let mut timed_out = false;
    let mut drain_until: Option<tokio::time::Instant> = None;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let mut out_buf = Vec::with_capacity(MAX_OUTPUT_CHUNK);
    let mut err_buf = Vec::with_capacity(MAX_OUTPUT_CHUNK);

    loop {
        if waited.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        if drain_until.is_some_and(|t| tokio::time::Instant::now() >= t) {
            break;
        }
        tokio::select! {
            n = read_chunk(&mut stdout, &mut out_buf) => match n {
                Some(n) => {
                    let deliver = output.chunk(false, &out_buf[..n]);
                    connected = send(writer, connected, false, deliver).await;
                    if output.stdout.past_cap() {
                        // Past the cap: stop reading (closing the pipe), so
                        // a writer that goes on gets SIGPIPE, not our CPU.
                        stdout = None;
                        closed_at_cap.push("stdout");
                        connected = send_both(writer, connected, output.finish(false)).await;
                    }
                }
                None => {
                    stdout = None;
                    connected = send_both(writer, connected, output.finish(false)).await;
                }
            },
            n = read_chunk(&mut stderr, &mut err_buf) => match n {
                Some(n) => {
                    refusals.chunk(&err_buf[..n]);
                    let deliver = output.chunk(true, &err_buf[..n]);
                    connected = send(writer, connected, true, deliver).await;
                    if output.stderr.past_cap() {
                        stderr = None;
                        closed_at_cap.push("stderr");
                        connected = send_both(writer, connected, output.finish(true)).await;
                    }
                }
                None => {
                    stderr = None;
                    connected = send_both(writer, connected, output.finish(true)).await;
                }
            },
            why = &mut client, if ended_because.is_none() && waited.is_none() => {
                let why = why.unwrap_or("client disconnected");
                if why != "cancelled by the client" {
                    connected = false;
                }
                ended_because = Some(why.to_owned());
                let due = terminate(running.pgid, grace);
                kill_at = Some(kill_at.map_or(due, |t| t.min(due)));
            },
            () = &mut deadline, if !timed_out && waited.is_none() => {
                timed_out = true;
                ended_because = Some(format!("timed out after {}s", permit.timeout.as_secs()));
                let due = terminate(running.pgid, grace);
                kill_at = Some(kill_at.map_or(due, |t| t.min(due)));
            },
            () = async {
                match kill_at {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            }, if waited.is_none() => {
                // Still not reaped after the grace.
                signal_group(running.pgid, Signal::SIGKILL);
                kill_at = None;
            },
            result = &mut exited, if waited.is_none() => {
                // The reap killed what the command left in its group and
                // cgroups while its zombie still held the group id; a kill
                // by that id now could reach a group that reused it.
                waited = Some(result);
                drain_until = Some(tokio::time::Instant::now() + DRAIN);
            },
            () = async {
                match drain_until {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            } => {},
        }
    }
    // What is already in a pipe still open after the drain is taken without
    // waiting: a loaded daemon may first look at the pipe after the deadline.
    for (is_stderr, pipe, buf) in [
        (false, &mut stdout, &mut out_buf),
        (true, &mut stderr, &mut err_buf),
    ] {
        while let Some(p) = pipe.as_ref() {
            buf.clear();
            match p.try_read_buf(buf) {
                Ok(n) if n > 0 => {
                    let deliver = output.chunk(is_stderr, &buf[..n]);
                    connected = send(writer, connected, is_stderr, deliver).await;
                }
                _ => *pipe = None,
            }
        }
    }
    if ended_because.is_none() {
        ended_because = registration.slot().ended_because().map(str::to_owned);
    }
    drop(registration);
    if let Some(proxy) = proxy {
        // Ends every tunnel the command still had; each reports its event.
        proxy.abort();
    }
    for relay in relays {
        relay.abort();
    }
    let failed = !matches!(waited, Some(Ok((Some(0), _))));
    let refused = std::mem::take(&mut *refused.lock().unwrap_or_else(|p| p.into_inner()));
    let offline_failure = failed && !network && refusals.offline();
    let refusal_note = refusals
        .note()
        .map(|line| redactor.redact_str(&line).into_owned());
    let cap_note = (!closed_at_cap.is_empty()).then(|| {
        format!(
            "praxis: {} passed the {}-byte output cap; praxisd stopped reading it and closed \
             the pipe, so the command's further writes there failed (SIGPIPE). Send long output \
             to a file in the workspace and read the part you need.\n",
            closed_at_cap.join(" and "),
            permit.output_cap
        )
    });
    for line in [
        network_note(&refused, offline_failure),
        refusal_note,
        cap_note,
        grant_note,
    ]
    .into_iter()
    .flatten()
    {
        connected = send(writer, connected, true, line.into_bytes()).await;
    }

    // A stream still open after the drain: flush what was held back.
    let mut held = [Vec::new(), Vec::new()];
    for is_stderr in [false, true] {
        for (all, more) in held.iter_mut().zip(output.finish(is_stderr)) {
            all.extend(more);
        }
    }
    for (is_stderr, held) in [false, true].into_iter().zip(held) {
        connected = send(writer, connected, is_stderr, held).await;
        let (name, stream) = if is_stderr {
            ("stderr", &output.stderr)
        } else {
            ("stdout", &output.stdout)
        };
        if let Some(marker) = stream.marker(name) {
            connected = send(writer, connected, is_stderr, marker.into_bytes()).await;
        }
    }

    let (exit_code, signal, failure) = match waited {
        Some(Ok((code, signal))) => (code, signal, None),
        Some(Err(e)) => (None, None, Some(e)),
        None => (
            None,
            None,
            Some(String::from(
                "output stayed open after the command was killed",
            )),
        ),
    };
    let status = match (&failure, timed_out, exit_code, signal) {
        (Some(e), _, _, _) => ExitStatus::Failed(e.clone()),
        (None, true, _, _) => ExitStatus::TimedOut,
        (None, false, Some(code), _) => ExitStatus::Code(code),
        (None, false, None, Some(sig)) => ExitStatus::Signal(sig),
        (None, false, None, None) => ExitStatus::Failed(String::from("exit status unknown")),
    };
    Executed::Ran(Ran {
        exit_code,
        signal,
        status,
        timed_out,
        ended_because,
        duration_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
        stdout_bytes: output.stdout.produced(),
        stderr_bytes: output.stderr.produced(),
        output_digest: output.digest(),
        truncated: output.truncated(),
        profile: permit.decision.profile,
        connected,
    })
}

/// Most refused destinations one note names.
const MAX_NAMED: usize = 8;

/// The one line the agent gets when the network it was not granted is why
/// it failed: the destinations the proxy refused, or that it ran without
/// network at all.
fn network_note(refused: &[String], offline_failure: bool) -> Option<String> {
    if !refused.is_empty() {
        return Some(format!(
            "praxis: the egress proxy refused {}: not granted to this command. \
             An operator can grant a destination with a policy rule (`connect = [\"host:port\"]`) \
             or approve a command that names it.\n",
            refused.join(", ")
        ));
    }
    offline_failure.then(|| {
        String::from(
            "praxis: this command ran without network: its decision granted no destination \
             (`praxis explain` shows grants). An operator can grant one with a policy rule \
             (`connect = [\"host:port\"]`), or run the fetch step on its own (`cargo fetch`, \
             `npm ci`), which has its registry granted.\n",
        )
    })
}

/// Tells a still-connected client how the command ended, with the steer
/// its end reached.
pub async fn report_exit(writer: &mut Writer, ran: &Ran, steer: Option<String>) {
    if !ran.connected {
        return;
    }
    let exit = ExitFrame {
        status: ran.status.clone(),
        duration_ms: ran.duration_ms,
        stdout_bytes: ran.stdout_bytes,
        stderr_bytes: ran.stderr_bytes,
        truncated: ran.truncated,
        killed_because: ran.ended_because.clone(),
        steer,
    };
    let _ = writer.send(&ServerMsg::Exit(exit)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_made_inside_a_protected_path() {
        let protected = [
            PathBuf::from(".git/hooks"),
            PathBuf::from("/var/lib/praxis"),
        ];
        let inside = |p: &str| inside_protected(Path::new(p), &protected);
        assert!(inside("/w/.git/hooks/pre-commit"));
        assert!(inside("/var/lib/praxis/audit.db"));
        assert!(
            !inside("/w/.git/hooks"),
            "the protected path itself is for the sandbox"
        );
        assert!(!inside("/w/.git/config"));
        assert!(!inside("/tmp/hooks/pre-commit"));
        assert!(!inside("/var/lib/praxis-other/x"));
    }
}

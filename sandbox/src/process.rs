//! Preparing a sandbox in the parent, the one spawn site, and the spawned child.

use std::ffi::{CString, OsString, c_char};
use std::fs;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::cgroup::CommandCgroup;
use crate::child::{Identity, NetNs, Plan, Stage, Then};
use crate::env::{self, EnvBlock};
use crate::filter::{self, Sockets};
use crate::fs_rules::{self, Exclusion, Grant};
use crate::launcher::{self, Launcher, MountCopy};
use crate::mounts;
use crate::own_caps;
use crate::pins::{self, PinPlan, UserNsMaps};
use crate::private_tmp;
use crate::scratch::ScratchDir;
use crate::spawner::{self, namespace_of, pidfd_open, pipe_cloexec};
use crate::{Network, Profile, SandboxError, Spec, Stdio, carve_cache, spare};

/// `LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON` (ABI 7): denials after exec are audited.
const LOG_NEW_EXEC_ON: u32 = 2;

/// The devices every restricted profile may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// A sandbox made ready in the parent for one command: the Landlock ruleset,
/// compiled seccomp filter, the environment block, mounts to make, the
/// scratch dir. Consumed by [`spawn`].
#[derive(Debug)]
#[must_use]
pub struct Prepared {
    profile: Profile,
    /// The egress listener's port in the command's network namespace;
    /// `None` with the network off.
    egress_port: Option<u16>,
    /// The socket relays' listener ports there, in the spec's order.
    relay_ports: Vec<u16>,
    /// Whether the command runs in a network namespace of its own (with
    /// `lo` up, and its listeners if any).
    private_net: bool,
    /// That namespace, made ahead, for the child to join.
    netns: Option<OwnedFd>,
    ruleset: OwnedFd,
    landlock_flags: u32,
    /// Which sockets its seccomp filter lets the command open.
    sockets: Sockets,
    filter: &'static [libc::sock_filter],
    env: EnvBlock,
    rlimits: Vec<(libc::c_int, u64)>,
    run_as: Option<crate::RunAs>,
    userns: Option<UserNsMaps>,
    drop_bounding: bool,
    last_cap: libc::c_ulong,
    pins: PinPlan,
    /// The private `/tmp` and what is shown again in it.
    tmp: Option<private_tmp::TmpPlan>,
    rule_count: usize,
    /// A process already in the command's cgroups, to start it with; it
    /// goes (killed) before the cgroups do.
    launcher: Option<Launcher>,
    scratch: ScratchDir,
    cgroup: Option<CommandCgroup>,
}

impl Prepared {
    /// The private `TMPDIR` of this command.
    pub fn scratch_dir(&self) -> &Path {
        &self.scratch.0
    }

    /// Protected paths that do not exist directly under a writable root: the
    /// command could create them (guarding them would make the root read-only).
    pub fn unguarded(&self) -> &[PathBuf] {
        &self.pins.unguarded
    }

    /// A one-line account of the restrictions in force, for outcomes and logs.
    pub fn restrictions(&self) -> String {
        let read_only = self.pins.pins.iter().filter(|p| p.read_only).count();
        format!(
            "profile {}, {}{}, landlock {} rules{}, {} protected paths mounted read-only, \
             {} paths covered, seccomp on, capabilities dropped, no_new_privs",
            self.profile.as_str(),
            match self.egress_port {
                None if self.private_net => String::from("network off (a loopback of its own)"),
                None => String::from("network off"),
                Some(port) => format!(
                    "network through the egress proxy only (private namespace, \
                     listener 127.0.0.1:{port})"
                ),
            },
            match self.relay_ports.len() {
                0 => String::new(),
                n => format!(", {n} unix sockets relayed from 127.0.0.1"),
            },
            self.rule_count,
            if self.landlock_flags & LOG_NEW_EXEC_ON != 0 {
                " (denials audited)"
            } else {
                ""
            },
            read_only,
            self.pins.masks.len(),
        )
    }
}

fn absolute(path: &Path, what: &str) -> Result<(), SandboxError> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(SandboxError::Invalid(format!(
            "{what} must be an absolute path: {}",
            path.display()
        )))
    }
}

/// The value itself, or the daemon's own hard limit when that is lower (an
/// unprivileged process cannot raise it, and lower is stricter).
fn clamp_limit(resource: libc::c_int, value: u64) -> Result<u64, SandboxError> {
    let mut current = libc::rlimit64 {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let null: *const libc::rlimit64 = std::ptr::null();
    // SAFETY: prlimit64 on ourselves with a valid out pointer.
    let rc = unsafe { libc::syscall(libc::SYS_prlimit64, 0, resource, null, &mut current) };
    if rc != 0 {
        return Err(SandboxError::last_os("getrlimit"));
    }
    Ok(value.min(current.rlim_max))
}

/// Expands path entries as policy files write them: a relative entry applies
/// under each of `bases`; a final component ending in `*` matches the
/// existing entries of its directory by prefix (that directory is pushed to
/// `listed`).
fn expand_entries(
    entries: &[PathBuf],
    bases: &[PathBuf],
    listed: &mut Vec<PathBuf>,
) -> Result<Vec<PathBuf>, SandboxError> {
    let mut out = Vec::new();
    for entry in entries {
        let rooted: Vec<PathBuf> = if entry.is_absolute() {
            vec![entry.clone()]
        } else {
            bases.iter().map(|b| b.join(entry)).collect()
        };
        for path in rooted {
            let name = path
                .file_name()
                .map(|n| n.as_bytes().to_vec())
                .unwrap_or_default();
            let (Some(prefix), Some(dir)) = (name.strip_suffix(b"*"), path.parent()) else {
                out.push(path);
                continue;
            };
            listed.push(dir.to_path_buf());
            let listing = match fs::read_dir(dir) {
                Ok(listing) => listing,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(SandboxError::os("listing a path pattern's directory", e)),
            };
            for item in listing {
                let item =
                    item.map_err(|e| SandboxError::os("listing a path pattern's directory", e))?;
                if item.file_name().as_bytes().starts_with(prefix) {
                    out.push(item.path());
                }
            }
        }
    }
    Ok(out)
}

/// The guarded paths the decision did not grant: a protected path that a
/// write grant names exactly is left unpinned (and uncarved) for this
/// command, so the write it was allowed or approved for can happen, and a
/// secret that a read grant names exactly is left unmasked; every other
/// one, those inside or around a granted path included, stays guarded.
fn unless_granted(guarded: Vec<PathBuf>, grants: &[PathBuf]) -> Vec<PathBuf> {
    guarded
        .into_iter()
        .filter(|path| !grants.contains(path))
        .collect()
}

/// The rules of a decision's read grants: each existing path that is no
/// symlink, with the secrets below it carved out (a secret it names itself
/// is granted: `secrets` holds the others).
fn read_grant_rules(
    read_grants: &[PathBuf],
    secrets: &[PathBuf],
) -> Result<Vec<fs_rules::Rule>, SandboxError> {
    let mut grants = Vec::new();
    for path in read_grants {
        absolute(path, "read grant")?;
        if fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink()) {
            grants.push(Grant {
                path: path.clone(),
                access: fs_rules::read_rights(),
            });
        }
    }
    let exclusions: Vec<Exclusion> = secrets
        .iter()
        .map(|path| Exclusion {
            path: path.clone(),
            withheld: fs_rules::secret_withheld(),
        })
        .collect();
    Ok(fs_rules::carve(&grants, &exclusions, &mut Vec::new())?)
}

/// Carves the filesystem grants of `key` (the scratch dir aside: it is
/// per command), recording what the carve depended on.
fn carve(key: &carve_cache::Key) -> Result<carve_cache::Carved, SandboxError> {
    let mut deps = carve_cache::Deps::default();
    let mut secrets = Vec::new();
    if key.restricted {
        let mut listed = Vec::new();
        let expanded = expand_entries(&key.secrets, std::slice::from_ref(&key.home), &mut listed)?;
        for dir in &listed {
            deps.listed(dir);
        }
        for secret in expanded {
            // A process's own /proc entries hold only what it was given, and
            // other processes' are closed by Landlock's ptrace scoping; carving
            // /proc would also hide the entries of processes started later.
            if !secret.starts_with("/proc") {
                secrets.push(deps.resolve(&secret)?);
            }
        }
    }
    // Each excluded tree is taken out wherever another mount shows it too.
    let mounts = if key.restricted {
        mounts::parse(&deps.mount_table())
    } else {
        Vec::new()
    };
    let excluded = |path: &PathBuf, withheld| {
        std::iter::once(path.clone())
            .chain(mounts::aliases(&mounts, path))
            .map(move |path| Exclusion { path, withheld })
    };
    let secret_exclusions: Vec<Exclusion> = secrets
        .iter()
        .flat_map(|path| excluded(path, fs_rules::secret_withheld()))
        .collect();
    let mut write_exclusions = Vec::new();
    if !key.can_mount {
        write_exclusions.clone_from(&secret_exclusions);
        for path in &key.carved_protected {
            write_exclusions.push(Exclusion {
                path: deps.resolve(path)?,
                withheld: fs_rules::protected_withheld(),
            });
        }
    }
    let mut read_grants = Vec::new();
    let mut write_grants = Vec::new();
    if key.restricted {
        for root in &key.reads {
            absolute(root, "read tree")?;
            // A missing tree gets no rule, and neither does a symlink (its
            // target is granted where it lies in a read tree): the listing of
            // the parent makes a tree that appears later redo the carve.
            match fs::symlink_metadata(root) {
                Ok(meta) if !meta.file_type().is_symlink() => read_grants.push(Grant {
                    path: root.clone(),
                    access: fs_rules::read_rights(),
                }),
                _ => {
                    if let Some(parent) = root.parent() {
                        deps.listed(parent);
                    }
                }
            }
        }
        read_grants.extend(DEVICES.iter().map(|d| Grant {
            path: PathBuf::from(d),
            access: fs_rules::device_rights(),
        }));
        write_grants.extend(key.writable_roots.iter().map(|r| Grant {
            path: r.clone(),
            access: fs_rules::write_rights(),
        }));
    }
    // The home is read only where a read tree names a part of it (or the
    // workspace lies in it): a tree that holds the whole home, as `/tmp`
    // holds a scratch home, does not open the rest of it.
    let mut read_exclusions = secret_exclusions.clone();
    if key.restricted && key.home.parent().is_some() {
        let home = deps.resolve(&key.home)?;
        read_exclusions.extend(excluded(&home, fs_rules::read_rights()));
    }
    let mut rules = fs_rules::carve(&read_grants, &read_exclusions, deps.dirs_mut())?;
    rules.extend(fs_rules::carve(
        &write_grants,
        &write_exclusions,
        deps.dirs_mut(),
    )?);
    Ok(deps.seal(rules, secrets, write_exclusions))
}

/// `count` distinct ports for [`crate::Spec::socket_relays`], from the
/// ephemeral range like the egress listener's.
pub fn relay_ports(count: usize) -> Vec<u16> {
    let mut ports = Vec::with_capacity(count);
    while ports.len() < count {
        let port = ephemeral_port();
        if !ports.contains(&port) {
            ports.push(port);
        }
    }
    ports
}

/// The socket relays' ports, checked: none is 0 and none repeats.
fn checked_relay_ports(ports: &[u16]) -> Result<Vec<u16>, SandboxError> {
    for (i, port) in ports.iter().enumerate() {
        if *port == 0 || ports[..i].contains(port) {
            return Err(SandboxError::Invalid(format!(
                "socket relay port {port} is 0 or given twice"
            )));
        }
    }
    Ok(ports.to_vec())
}

/// A port for the egress listener. The namespace is fresh, so every port is
/// free in it; one from the ephemeral range keeps clear of the fixed ports a
/// command's own servers tend to use.
fn ephemeral_port() -> u16 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    const FIRST: u64 = 49152;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    let spread = nanos ^ COUNTER.fetch_add(7919, Ordering::Relaxed);
    u16::try_from(FIRST + spread % (65536 - FIRST)).unwrap_or(u16::MAX)
}

/// Prepares the sandbox for one command. Everything that allocates or can
/// fail slowly happens here, in the parent; any inability to enforce `spec`
/// in full is an error naming the reason.
pub fn prepare(spec: &Spec) -> Result<Prepared, SandboxError> {
    for (path, what) in [
        (&spec.workspace, "workspace"),
        (&spec.home, "home"),
        (&spec.scratch_root, "scratch root"),
    ] {
        absolute(path, what)?;
    }
    let abi = fs_rules::landlock_abi();
    if abi < crate::MIN_LANDLOCK_ABI {
        return Err(SandboxError::Unsupported(format!(
            "Landlock ABI {abi} found, {} required (scopes for signals and abstract unix sockets)",
            crate::MIN_LANDLOCK_ABI
        )));
    }
    let privileged = own_caps::effective(caps::Capability::CAP_SYS_ADMIN)?;
    let relay_ports = checked_relay_ports(&spec.socket_relays)?;
    let needs_net = !spec.network.is_off() || !relay_ports.is_empty();
    // Without CAP_SYS_ADMIN the namespace needs a user namespace of its own.
    let net_works = pins::net_namespaces_work(!privileged);
    // Every command gets a loopback of its own where the host allows one:
    // test servers bind and connect there, and nothing leaves it. Where it
    // does not, a command without network gets no sockets at all.
    let private_net = needs_net || net_works.is_ok();
    if needs_net {
        net_works.map_err(|errno| {
            SandboxError::Unsupported(format!(
                "a private network namespace cannot be made here (unshare {} refused: {}); \
                 the command could only run with raw network",
                if privileged {
                    "CLONE_NEWNET"
                } else {
                    "CLONE_NEWUSER|CLONE_NEWNET"
                },
                crate::errno_name(errno)
            ))
        })?;
    }
    let egress_port = match spec.network {
        Network::Off => None,
        Network::Proxied { port: Some(port) } if relay_ports.contains(&port) => {
            return Err(SandboxError::Invalid(format!(
                "egress port {port} is also a socket relay's"
            )));
        }
        Network::Proxied { port: Some(port) } => Some(port),
        Network::Proxied { port: None } => Some(loop {
            let port = ephemeral_port();
            if !relay_ports.contains(&port) {
                break port;
            }
        }),
    };
    let owner = spec.run_as.as_ref().map(|r| (r.uid, r.gid));
    let restricted = spec.profile != Profile::Full;
    // Without CAP_SYS_ADMIN, mounts need a user namespace of our own.
    let can_mount = privileged || pins::user_namespaces_work();
    let mut writable_roots = Vec::new();
    if spec.profile == Profile::WorkspaceWrite {
        writable_roots.push(spec.workspace.clone());
        for cache in &spec.writable_caches {
            absolute(cache, "cache dir")?;
            // Only real directories: a symlinked cache would grant its target.
            if fs::symlink_metadata(cache).is_ok_and(|m| m.is_dir()) {
                writable_roots.push(cache.clone());
            }
        }
    }

    let protected = unless_granted(
        expand_entries(&spec.protected, &writable_roots, &mut Vec::new())?,
        &spec.write_grants,
    );
    let mut reads = vec![spec.workspace.clone()];
    reads.extend(spec.reads.iter().cloned());
    let key = carve_cache::Key {
        restricted,
        reads,
        home: spec.home.clone(),
        writable_roots: writable_roots.clone(),
        secrets: spec.secrets.clone(),
        carved_protected: if can_mount || !restricted {
            Vec::new()
        } else {
            protected.clone()
        },
        can_mount,
    };
    let carved = carve_cache::carve(&key, || carve(&key))?;
    // With mounts, secrets inside writable trees are covered and protected
    // paths pinned (writable trees are granted whole); without, the carve
    // took both out of them.
    // A secret the decision granted to read is no secret for this command:
    // neither carved out of its grant nor masked.
    let granted_reads: Vec<PathBuf> = spec
        .read_grants
        .iter()
        .map(|p| fs_rules::resolve_lenient(p))
        .collect::<Result<_, _>>()?;
    let kept_secrets = unless_granted(carved.secrets.clone(), &granted_reads);
    let pin_plan = if can_mount {
        pins::plan(&writable_roots, &protected, &kept_secrets)?
    } else {
        PinPlan::default()
    };
    // Without a mount namespace there is no private /tmp: the host's stays
    // out of reach and `TMPDIR` is the command's scratch dir.
    let tmp_plan = match (&spec.private_tmp, can_mount) {
        (Some(private), true) => {
            let keep: Vec<PathBuf> = [&spec.workspace]
                .into_iter()
                .chain(&spec.reads)
                .chain(&spec.read_grants)
                .chain(&spec.write_grants)
                .chain(&writable_roots)
                .cloned()
                .collect();
            Some(private_tmp::plan(private, &keep, owner)?)
        }
        _ => None,
    };
    // The scratch dir, the ruleset with the carve's rules and the scratch
    // dir's grant, and the cgroups: made ahead when they can be (see
    // `spare`); the command's own write grants are added here.
    ScratchDir::make_root(&spec.scratch_root)?;
    let inputs = spare::Inputs {
        carve: key,
        scratch_root: spec.scratch_root.clone(),
        owner,
        network_off: !private_net,
        netns_ahead: private_net && privileged,
        limits: spec.limits,
    };
    let made = spare::take_or_make(&inputs, &carved, tmp_plan.as_ref())?;
    let mut rule_count = made.rule_count;
    if restricted {
        let mut grants = Vec::new();
        for path in &spec.write_grants {
            absolute(path, "write grant")?;
            grants.push(Grant {
                path: path.clone(),
                access: fs_rules::write_rights(),
            });
        }
        if let (Some(private), Some(_)) = (&spec.private_tmp, &tmp_plan) {
            for dir in [&private.tmp, &private.var_tmp] {
                grants.push(Grant {
                    path: dir.clone(),
                    access: fs_rules::write_rights(),
                });
            }
        }
        let mut grant_rules = fs_rules::carve(&grants, &carved.write_exclusions, &mut Vec::new())?;
        grant_rules.extend(read_grant_rules(&spec.read_grants, &kept_secrets)?);
        fs_rules::add_rules(&made.ruleset, &grant_rules)?;
        rule_count += grant_rules.len();
    }
    let tmpdir = match tmp_plan {
        Some(_) => Path::new("/tmp"),
        None => made.scratch.0.as_path(),
    };
    let env = env::build(
        &spec.env,
        &spec.extra_env_allow,
        &spec.home,
        tmpdir,
        spec.profile,
        egress_port,
        &relay_ports,
    )?;

    let limits_by_rlimit = !crate::limiting().by_cgroup();
    let namespaces = !pin_plan.is_empty() || tmp_plan.is_some() || private_net;
    // RLIMIT_NPROC counts a user's processes per user namespace: in one of
    // its own, the command's processes count alone, not the user's others.
    let own_nproc_count = limits_by_rlimit && pins::user_namespaces_work();
    let userns = (!privileged && (namespaces || own_nproc_count)).then(UserNsMaps::current);
    let sockets = if private_net {
        Sockets::PrivateNet
    } else {
        Sockets::None
    };
    let filter = filter::program(sockets)?;

    let mut wanted = vec![
        (libc::RLIMIT_FSIZE, spec.rlimits.fsize_bytes),
        (libc::RLIMIT_NOFILE, spec.rlimits.nofile),
        (libc::RLIMIT_CPU, spec.rlimits.cpu_secs),
    ];
    if limits_by_rlimit {
        wanted.push((libc::RLIMIT_NPROC, spec.limits.pids));
        wanted.push((libc::RLIMIT_AS, spec.limits.memory_bytes));
    }
    let rlimits = wanted
        .into_iter()
        .map(|(resource, value)| {
            let resource = resource as libc::c_int;
            clamp_limit(resource, value).map(|v| (resource, v))
        })
        .collect::<Result<_, _>>()?;

    Ok(Prepared {
        profile: spec.profile,
        egress_port,
        relay_ports,
        private_net,
        ruleset: made.ruleset,
        landlock_flags: if abi >= 7 { LOG_NEW_EXEC_ON } else { 0 },
        sockets,
        filter,
        env,
        rlimits,
        run_as: spec.run_as.clone(),
        // Inside its own user namespace the child holds CAP_SETPCAP.
        drop_bounding: userns.is_some() || own_caps::effective(caps::Capability::CAP_SETPCAP)?,
        userns,
        last_cap: own_caps::last()?,
        pins: pin_plan,
        tmp: tmp_plan,
        rule_count,
        launcher: made.launcher,
        scratch: made.scratch,
        cgroup: made.cgroup,
        netns: made.netns,
    })
}

pub(crate) fn c_string(bytes: &[u8], what: &str) -> Result<CString, SandboxError> {
    CString::new(bytes).map_err(|_| SandboxError::Invalid(format!("{what} holds a NUL byte")))
}

/// The way of the listeners (egress, socket relays) from the child's
/// network namespace to us: a close-on-exec unix socketpair, our end and
/// the child's.
fn handoff_pair() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| SandboxError::os("socketpair for the listeners", e.into()))
}

/// Takes the next listener the child sent before it exec'd (already
/// queued, one per message).
fn receive_listener(ours: &OwnedFd) -> Result<TcpListener, SandboxError> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut byte = [0u8; 1];
    let mut iov = [io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!(RawFd);
    let msg = recvmsg::<()>(
        ours.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(|e| SandboxError::os("receiving a listener", e.into()))?;
    let mut received = Vec::new();
    for cmsg in msg
        .cmsgs()
        .map_err(|e| SandboxError::os("receiving a listener", e.into()))?
    {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            received.extend(fds);
        }
    }
    // SAFETY: descriptors just received are ours alone.
    let mut owned = received
        .into_iter()
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    match (owned.next(), owned.next()) {
        (Some(listener), None) => Ok(TcpListener::from(listener)),
        _ => Err(SandboxError::Invalid(
            "the child did not hand over one listener per message".into(),
        )),
    }
}

/// `127.0.0.1:port` for raw socket calls.
pub(crate) fn loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// A child started by [`launch`]: its pid, the read end of its report pipe,
/// whether a launcher made ahead started it and, with a proxied network,
/// our end of the listener handoff.
pub(crate) struct Launched {
    pub(crate) pid: libc::pid_t,
    pub(crate) report: OwnedFd,
    placed_ahead: bool,
    mounts_copied_ahead: bool,
    tmp_mounted_ahead: bool,
    /// The launcher's copy of the mounts, held since it was made: the
    /// command's mount namespace when `mounts_copied_ahead`, else one it
    /// left (freed with the leftovers, not here).
    mount_copy: Option<OwnedFd>,
    handoff: Option<OwnedFd>,
}

/// Starts a child that applies `prepared` and then does `then`: the
/// launcher made ahead in its cgroups when there is one, else a fresh
/// clone that joins them itself. Returns once the child has exec'd (or,
/// for probes, once it has exited).
pub(crate) fn launch(
    prepared: &mut Prepared,
    cwd: &Path,
    stdio: &Stdio,
    then: Then<'_>,
) -> Result<Launched, SandboxError> {
    absolute(cwd, "cwd")?;
    let cwd = c_string(cwd.as_os_str().as_bytes(), "cwd")?;
    let (report_read, report_write) = pipe_cloexec()?;
    // The egress listener first, then one per socket relay.
    let listeners: Vec<libc::sockaddr_in> = prepared
        .egress_port
        .iter()
        .chain(&prepared.relay_ports)
        .map(|port| loopback(*port))
        .collect();
    let handoff = (!listeners.is_empty()).then(handoff_pair).transpose()?;
    let net = prepared.private_net.then(|| NetNs {
        listeners: &listeners,
        handoff_fd: handoff
            .as_ref()
            .map_or(-1, |(_, theirs)| theirs.as_raw_fd()),
    });
    let groups: Vec<libc::gid_t> = prepared
        .run_as
        .as_ref()
        .map(|r| r.groups.clone())
        .unwrap_or_default();
    let mut launcher = prepared.launcher.take();
    // Held past the command's last exit, whether or not the plan uses it.
    let mount_copy = launcher.as_mut().and_then(Launcher::take_mount_copy);
    // A launcher holds the filter's large part already; the whole program
    // for a fresh clone.
    let filter = match &launcher {
        Some(launcher) if launcher.filtered_ahead() => filter::closing(prepared.sockets)?,
        _ => prepared.filter,
    };
    // The launcher's copy of the host's mounts is the command's mount
    // namespace while it is current (its private /tmp too, when the copy
    // has that one mounted); otherwise the launcher goes back into ours
    // first, and the plan copies them now (or not at all).
    let mount_ns = !prepared.pins.is_empty() || prepared.tmp.is_some();
    let copy_state = launcher.as_ref().map_or(MountCopy::None, |launcher| {
        launcher.mount_copy(prepared.tmp.as_ref())
    });
    let mounts_copied_ahead = mount_ns && matches!(copy_state, MountCopy::Current { .. });
    let tmp_mounted_ahead =
        mounts_copied_ahead && copy_state == MountCopy::Current { tmp_mounted: true };
    let host_mount_ns = if copy_state == MountCopy::None || mounts_copied_ahead {
        -1
    } else {
        launcher::host_mount_ns()?
    };
    let cgroup_procs = match (&launcher, &prepared.cgroup) {
        (None, Some(cgroup)) => cgroup.procs_fds(),
        (Some(_), _) | (None, None) => Vec::new(),
    };
    let plan = Plan {
        stdio: [
            stdio.stdin.as_raw_fd(),
            stdio.stdout.as_raw_fd(),
            stdio.stderr.as_raw_fd(),
        ],
        report_fd: report_write.as_raw_fd(),
        cgroup_procs: &cgroup_procs,
        placed_ahead: launcher.is_some(),
        // SAFETY: getpid has no preconditions.
        parent_pid: unsafe { libc::getpid() },
        rlimits: &prepared.rlimits,
        mount_ns,
        mounts_copied_ahead,
        host_mount_ns,
        netns_fd: prepared.netns.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        tmp: prepared.tmp.as_ref().filter(|_| !tmp_mounted_ahead),
        net: net.as_ref(),
        userns: prepared.userns.as_ref(),
        pins: &prepared.pins.pins,
        masks: &prepared.pins.masks,
        cwd: &cwd,
        // A launcher made ahead dropped it in our user namespace; a new
        // one starts with a full bounding set again.
        drop_bounding: prepared.drop_bounding
            && !(prepared.userns.is_none()
                && launcher.as_ref().is_some_and(Launcher::bounding_dropped)),
        last_cap: prepared.last_cap,
        identity: prepared.run_as.as_ref().map(|r| Identity {
            uid: r.uid,
            gid: r.gid,
            groups: &groups,
        }),
        ruleset_fd: prepared.ruleset.as_raw_fd(),
        landlock_flags: prepared.landlock_flags,
        filter,
        then,
    };
    let placed_ahead = launcher.is_some();
    let pid = match launcher {
        Some(launcher) => launcher.start(&plan, report_write, &report_read)?,
        None => {
            let pid = spawner::clone_child(&plan)?;
            drop(report_write);
            pid
        }
    };
    Ok(Launched {
        pid,
        report: report_read,
        placed_ahead,
        mounts_copied_ahead,
        tmp_mounted_ahead,
        mount_copy,
        handoff: handoff.map(|(ours, _)| ours),
    })
}

/// Reads the child's report into `buf`, returning how many bytes came
/// before end of file: 0 means the child reached exec (the pipe closed on it).
pub(crate) fn read_report(fd: &OwnedFd, buf: &mut [u8]) -> Result<usize, SandboxError> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: reading into a live buffer of the given length.
        let n = unsafe { libc::read(fd.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len()) };
        match n {
            0 => break,
            n if n > 0 => filled += n as usize,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            _ => return Err(SandboxError::last_os("reading the child's report")),
        }
    }
    Ok(filled)
}

/// Turns an 8-byte failure report into the error it names.
pub(crate) fn report_error(buf: [u8; 8]) -> SandboxError {
    let code = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let errno = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let stage = Stage::from_code(code).map_or("child set-up", Stage::name);
    SandboxError::Child { stage, errno }
}

fn program_path(
    argv0: &OsString,
    path_var: &OsString,
    cwd: &Path,
) -> Result<CString, SandboxError> {
    let bytes = argv0.as_bytes();
    if bytes.contains(&b'/') {
        return c_string(bytes, "program");
    }
    let found = crate::host::resolve_program(&argv0.to_string_lossy(), path_var, cwd)
        .filter(|_| argv0.to_str().is_some())
        .ok_or_else(|| SandboxError::NotFound(argv0.to_string_lossy().into_owned()))?;
    c_string(found.as_os_str().as_bytes(), "program")
}

/// Spawns `argv` in `cwd` under `prepared`: the codebase's one spawn site.
/// Returns once the program has been exec'd; a failure in any sandbox step
/// is an error and the program never ran.
pub fn spawn(
    mut prepared: Prepared,
    argv: &[OsString],
    cwd: &Path,
    stdio: Stdio,
) -> Result<Child, SandboxError> {
    let argv0 = argv
        .first()
        .ok_or_else(|| SandboxError::Invalid("empty argv".into()))?;
    let program = program_path(argv0, &prepared.env.path, cwd)?;
    let args: Vec<CString> = argv
        .iter()
        .map(|a| c_string(a.as_bytes(), "argument"))
        .collect::<Result<_, _>>()?;
    let arg_ptrs: Vec<*const c_char> = args
        .iter()
        .map(|a| a.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let env_ptrs: Vec<*const c_char> = prepared
        .env
        .entries
        .iter()
        .map(|e| e.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let then = Then::Exec {
        program: &program,
        argv: &arg_ptrs,
        envp: &env_ptrs,
    };
    let launched = launch(&mut prepared, cwd, &stdio, then)?;
    let (prepared_egress, relays) = (prepared.egress_port.is_some(), prepared.relay_ports.len());
    let pid = launched.pid;
    let mut buf = [0u8; 8];
    let filled = read_report(&launched.report, &mut buf)?;
    let mut child = Child::adopt(pid);
    child.restrictions = prepared.restrictions();
    child.placed_ahead = launched.placed_ahead;
    child.mounts_copied_ahead = launched.mounts_copied_ahead;
    child.tmp_mounted_ahead = launched.tmp_mounted_ahead;
    child.scratch = Some(prepared.scratch);
    child.cgroup = prepared.cgroup;
    child.ruleset = Some(prepared.ruleset);
    if filled != 0 {
        // The child exits on its own after reporting; reap it.
        let _ = child.wait();
        return Err(if filled == 8 {
            report_error(buf)
        } else {
            SandboxError::Invalid("truncated child report".into())
        });
    }
    let pidfd = pidfd_open(pid)?;
    // Its own network namespace: made ahead, or by the child.
    let netns = match prepared.netns.take() {
        Some(made) => Some(made),
        None if prepared.private_net => namespace_of(pidfd.as_fd(), libc::PIDFD_GET_NET_NAMESPACE),
        None => None,
    };
    child.namespaces.extend(netns);
    // The launcher's copy of the mounts is held from before the command
    // started: its last exit does not free it (and wait out the RCU grace
    // period that takes) before we hear of the exit.
    child.namespaces.extend(launched.mount_copy);
    if !launched.mounts_copied_ahead {
        child
            .namespaces
            .extend(namespace_of(pidfd.as_fd(), libc::PIDFD_GET_MNT_NAMESPACE));
    }
    child.pidfd = Some(pidfd);
    crate::guardian::watch(pid);
    if let Some(ours) = &launched.handoff {
        if prepared_egress {
            child.egress_listener = Some(receive_listener(ours)?);
        }
        for _ in 0..relays {
            child.socket_listeners.push(receive_listener(ours)?);
        }
    }
    Ok(child)
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

impl ExitStatus {
    /// The shell convention: the code, or 128 + the signal number.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

/// The end of a wait with a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Waited {
    /// How the command's first process ended.
    pub status: ExitStatus,
    /// Whether the timeout fired (the group was terminated; report exit 124).
    pub timed_out: bool,
}

/// A running sandboxed command: the leader of its own session and process
/// group (pgid == pid), in a cgroup of its own when [`crate::tracking`] is
/// by cgroup. Dropping it kills the group and reaps the leader, and removes
/// the scratch dir.
///
/// Processes that start a new session themselves leave the group but not
/// the cgroup: a SIGKILL through [`Child::signal_group`], and reaping the
/// leader, kill everything in the cgroup and remove it. Without a cgroup
/// those processes are not reached.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    status: Option<ExitStatus>,
    scratch: Option<ScratchDir>,
    cgroup: Option<CommandCgroup>,
    /// The Landlock ruleset the child restricted itself with, closed with
    /// the leftovers: freeing its rules need not delay the command's start.
    ruleset: Option<OwnedFd>,
    /// Its mount and network namespaces, held until its leftovers are
    /// removed: a namespace is freed when its last holder lets go, and
    /// freeing one waits for RCU grace periods (a mount namespace inside
    /// the exit of the command's last process, before its parent hears of
    /// it).
    namespaces: Vec<OwnedFd>,
    restrictions: String,
    placed_ahead: bool,
    mounts_copied_ahead: bool,
    tmp_mounted_ahead: bool,
    egress_listener: Option<TcpListener>,
    socket_listeners: Vec<TcpListener>,
}

impl Child {
    /// Takes charge of a freshly forked, unreaped child.
    pub(crate) fn adopt(pid: libc::pid_t) -> Child {
        Child {
            pid,
            pidfd: None,
            status: None,
            scratch: None,
            cgroup: None,
            ruleset: None,
            namespaces: Vec::new(),
            restrictions: String::new(),
            placed_ahead: false,
            mounts_copied_ahead: false,
            tmp_mounted_ahead: false,
            egress_listener: None,
            socket_listeners: Vec::new(),
        }
    }

    /// With [`Network::Proxied`], the listening socket on `127.0.0.1` inside
    /// the command's network namespace, its only way out: serve the egress
    /// proxy on it (connections accepted here come from the command; the
    /// proxy's own outgoing connections are made in the daemon's namespace).
    /// Dropping it leaves the command with no network at all. `None` once
    /// taken, and with the network off.
    pub fn take_egress_listener(&mut self) -> Option<TcpListener> {
        self.egress_listener.take()
    }

    /// The listeners of [`crate::Spec::socket_relays`] inside the command's
    /// network namespace, in the spec's order: relay each connection
    /// accepted on one to its unix socket. Empty once taken.
    pub fn take_socket_listeners(&mut self) -> Vec<TcpListener> {
        std::mem::take(&mut self.socket_listeners)
    }

    /// The process id (also the process group and session id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// A pidfd that becomes readable when the leader exits, for async waiting
    /// (then call [`Child::try_wait`]).
    pub fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(AsFd::as_fd)
    }

    /// The restrictions the command runs under (see [`Prepared::restrictions`]).
    pub fn restrictions(&self) -> &str {
        &self.restrictions
    }

    /// Whether a launcher made ahead, already in the command's cgroups,
    /// started it (no cgroup move happened on its way to exec).
    pub fn placed_ahead(&self) -> bool {
        self.placed_ahead
    }

    /// Whether its mount namespace is the copy of the host's mounts its
    /// launcher made while it waited (the host's mounts had not changed
    /// since), rather than one copied on its way to exec.
    pub fn mounts_copied_ahead(&self) -> bool {
        self.mounts_copied_ahead
    }

    /// Whether its private `/tmp` was mounted in that copy while the
    /// launcher waited (the same one, from the same directories, as its
    /// plan would have mounted), rather than on its way to exec.
    pub fn tmp_mounted_ahead(&self) -> bool {
        self.tmp_mounted_ahead
    }

    /// The command's private `TMPDIR`.
    pub fn scratch_dir(&self) -> Option<&Path> {
        self.scratch.as_ref().map(|s| s.0.as_path())
    }

    /// The command's cgroup directory, when it has one.
    pub fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_ref().and_then(CommandCgroup::dir)
    }

    /// Sends `signal` to the whole process group; a SIGKILL also kills
    /// everything in the command's cgroup. Refused once the leader has been
    /// reaped, when its pid could belong to someone else.
    pub fn signal_group(&self, signal: i32) -> Result<(), SandboxError> {
        if self.status.is_some() {
            return Err(SandboxError::os(
                "signalling the group",
                io::Error::from_raw_os_error(libc::ESRCH),
            ));
        }
        // SAFETY: killpg with our own unreaped child's group id.
        if unsafe { libc::killpg(self.pid, signal) } != 0 {
            let err = io::Error::last_os_error();
            // ESRCH: the group is already empty.
            if err.raw_os_error() != Some(libc::ESRCH) {
                return Err(SandboxError::os("signalling the group", err));
            }
        }
        if signal == libc::SIGKILL
            && let Some(cgroup) = &self.cgroup
        {
            cgroup.kill()?;
        }
        Ok(())
    }

    /// Waits for the leader to exit (without reaping it); with `block` false,
    /// returns whether it has.
    fn exited(&self, block: bool) -> Result<bool, SandboxError> {
        self.unreaped_exit(block).map(|status| status.is_some())
    }

    /// How the leader ended, read without reaping it (`WNOWAIT`): it stays a
    /// zombie, so its pid (the group's id) cannot be reused. With `block`
    /// false, `None` while it runs.
    fn unreaped_exit(&self, block: bool) -> Result<Option<ExitStatus>, SandboxError> {
        loop {
            // SAFETY: siginfo_t is plain data; waitid fills it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let flags = libc::WEXITED | libc::WNOWAIT | if block { 0 } else { libc::WNOHANG };
            // SAFETY: waitid on our own child with a valid out pointer.
            let rc = unsafe { libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, flags) };
            if rc == 0 {
                // SAFETY: waitid filled the union's child fields (all zero
                // when WNOHANG found the child running).
                let (pid, code) = unsafe { (info.si_pid(), info.si_status()) };
                let status = match info.si_code {
                    libc::CLD_EXITED => ExitStatus::Code(code),
                    _ => ExitStatus::Signal(code),
                };
                return Ok((pid != 0).then_some(status));
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(SandboxError::os("waitid", err));
            }
        }
    }

    /// Kills what is left of the group and the cgroup, reaps the exited
    /// leader, then removes the cgroup once empty. A failed kill is an error
    /// (after the reap, so the leader never stays a zombie).
    fn reap(&mut self) -> Result<ExitStatus, SandboxError> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        // The leader is a zombie, so its pid (the pgid) cannot be reused yet.
        let killed = self.signal_group(libc::SIGKILL);
        let status = Zombie::reap(self.pid)?;
        self.status = Some(status);
        self.pidfd = None;
        let removed = self.cgroup.take().map_or(Ok(()), CommandCgroup::remove);
        killed?;
        removed?;
        Ok(status)
    }

    /// Blocks until the leader exits; leftover group members are killed.
    pub fn wait(&mut self) -> Result<ExitStatus, SandboxError> {
        if self.status.is_none() {
            self.exited(true)?;
        }
        self.reap()
    }

    /// Like [`Child::wait`], but what is left to tidy (the command's
    /// cgroups, whose processes are killed before this returns, its scratch
    /// dir, and the leader itself, a zombie until then) comes back as
    /// [`Leftovers`] instead of being removed here: the caller can report
    /// the exit first and tidy after. Reaping is left too: releasing a
    /// sandboxed process (its `/proc` entries, its Landlock domain, its
    /// seccomp filter) costs the kernel far more than reading its status.
    pub fn wait_leaving(mut self) -> (Result<ExitStatus, SandboxError>, Leftovers) {
        let cgroup = self.cgroup.take();
        let unreaped = match self.status {
            None => self.unreaped_exit(true).ok().flatten(),
            Some(_) => None,
        };
        let (waited, leader) = match unreaped {
            Some(status) => {
                // The leader is a zombie, so its pid (the pgid) cannot be
                // reused yet: the rest of its group is killed by that id.
                let killed = self.signal_group(libc::SIGKILL);
                self.status = Some(status);
                let leader = Zombie {
                    pid: self.pid,
                    _pidfd: self.pidfd.take(),
                };
                (killed.map(|()| status), Some(leader))
            }
            // Reaped already, or its exit unreadable: the plain wait.
            None => (self.wait(), None),
        };
        let killed = cgroup
            .as_ref()
            .map_or(Ok(()), CommandCgroup::kill_remaining);
        let waited = waited.and_then(|status| killed.map(|()| status).map_err(Into::into));
        let leftovers = Leftovers {
            leader,
            cgroup,
            scratch: self.scratch.take(),
            ruleset: self.ruleset.take(),
            namespaces: std::mem::take(&mut self.namespaces),
        };
        (waited, leftovers)
    }

    /// The status if the leader has exited (leftover group members are then
    /// killed), else `None`.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, SandboxError> {
        if self.status.is_none() && !self.exited(false)? {
            return Ok(None);
        }
        self.reap().map(Some)
    }

    /// Polls the pidfd until the leader exits or `within` passes.
    fn exits_within(&self, within: Duration) -> Result<bool, SandboxError> {
        let Some(pidfd) = &self.pidfd else {
            return self.exited(false);
        };
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ms = i32::try_from(left.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX);
            let mut pfd = libc::pollfd {
                fd: pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc > 0 {
                return Ok(true);
            }
            if rc == 0 && left.is_zero() {
                return Ok(false);
            }
            if rc < 0 {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    return Err(SandboxError::os("poll on pidfd", err));
                }
            }
        }
    }

    /// Terminates the group: SIGTERM, then SIGKILL after `grace` if the
    /// leader has not exited; returns the leader's status.
    pub fn terminate_group(&mut self, grace: Duration) -> Result<ExitStatus, SandboxError> {
        if self.status.is_none() {
            self.signal_group(libc::SIGTERM)?;
            self.exits_within(grace)?;
        }
        self.reap()
    }

    /// Waits up to `timeout`; past it, terminates the group as
    /// [`Child::terminate_group`] does with `grace`.
    pub fn wait_timeout(
        &mut self,
        timeout: Duration,
        grace: Duration,
    ) -> Result<Waited, SandboxError> {
        if self.status.is_some() || self.exits_within(timeout)? {
            return Ok(Waited {
                status: self.wait()?,
                timed_out: false,
            });
        }
        Ok(Waited {
            status: self.terminate_group(grace)?,
            timed_out: true,
        })
    }
}

/// A finished command's leader (exited, not yet reaped), cgroups (its
/// processes already killed), scratch dir, Landlock ruleset and namespaces,
/// removed on drop: reaping the leader, waiting for the cgroups to empty and
/// removing them, and freeing the namespaces take kernel work that need not
/// delay the exit's report.
#[derive(Debug)]
#[must_use = "dropping it removes the command's cgroups and scratch dir"]
pub struct Leftovers {
    leader: Option<Zombie>,
    cgroup: Option<CommandCgroup>,
    scratch: Option<ScratchDir>,
    ruleset: Option<OwnedFd>,
    namespaces: Vec<OwnedFd>,
}

impl Leftovers {
    /// Reaps the leader, removes the cgroups once empty, then the scratch
    /// dir; closes the ruleset and lets go of the namespaces.
    pub fn remove(mut self) -> Result<(), SandboxError> {
        let reaped = self.leader.take().map_or(Ok(()), |leader| leader.release());
        let removed = self.cgroup.take().map_or(Ok(()), CommandCgroup::remove);
        // Only now can no process of the command still write there.
        drop(self.scratch.take());
        drop(self.ruleset.take());
        self.namespaces.clear();
        reaped.and(removed.map_err(Into::into))
    }

    /// Removes them once a client has gone ([`crate::client_gone`]), on a
    /// thread of their own; `failed` hears why a removal failed.
    pub fn remove_later(self, failed: impl FnOnce(SandboxError) + Send + 'static) {
        crate::tidy::later(Box::new(move || {
            if let Err(e) = self.remove() {
                failed(e);
            }
        }));
    }
}

/// An exited leader whose status was read but which is not reaped yet.
/// Dropped, it is reaped.
#[derive(Debug)]
struct Zombie {
    pid: libc::pid_t,
    /// Its pidfd, closed with it.
    _pidfd: Option<OwnedFd>,
}

impl Zombie {
    /// Reaps the exited child `pid` and tells the guardian it is gone.
    fn reap(pid: libc::pid_t) -> Result<ExitStatus, SandboxError> {
        let mut raw = 0;
        loop {
            // SAFETY: waitpid on our own child with a valid out pointer.
            let rc = unsafe { libc::waitpid(pid, &mut raw, 0) };
            if rc == pid {
                break;
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(SandboxError::os("waitpid", err));
            }
        }
        crate::guardian::forget(pid);
        Ok(if libc::WIFSIGNALED(raw) {
            ExitStatus::Signal(libc::WTERMSIG(raw))
        } else {
            ExitStatus::Code(libc::WEXITSTATUS(raw))
        })
    }

    fn release(mut self) -> Result<(), SandboxError> {
        let pid = std::mem::replace(&mut self.pid, 0);
        Zombie::reap(pid).map(drop)
    }
}

impl Drop for Zombie {
    fn drop(&mut self) {
        if self.pid > 0 {
            let _ = Zombie::reap(self.pid);
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_none() {
            // No orphans: kill the group and reap the leader.
            let _ = self.signal_group(libc::SIGKILL);
            let _ = self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_decodes_stage_and_errno() {
        let mut buf = [0u8; 8];
        buf[..4].copy_from_slice(&(Stage::Landlock as u32).to_ne_bytes());
        buf[4..].copy_from_slice(&libc::EPERM.to_ne_bytes());
        assert_eq!(
            report_error(buf).to_string(),
            "landlock_restrict_self failed: EPERM"
        );
    }

    #[test]
    fn program_lookup_uses_the_child_path() {
        let path = OsString::from("/usr/bin:/bin");
        let found = program_path(&OsString::from("sh"), &path, Path::new("/")).unwrap();
        assert!(found.to_bytes().ends_with(b"/sh"));
        assert!(matches!(
            program_path(
                &OsString::from("no-such-praxis-tool"),
                &path,
                Path::new("/")
            ),
            Err(SandboxError::NotFound(_))
        ));
        assert_eq!(
            program_path(&OsString::from("./x"), &path, Path::new("/"))
                .unwrap()
                .as_bytes(),
            b"./x"
        );
    }

    #[test]
    fn entries_expand_relative_names_and_prefix_patterns() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        for dir in [&a, &b] {
            fs::create_dir(dir).unwrap();
        }
        for key in ["ssh_host_rsa_key", "ssh_host_ed25519_key", "sshd_config"] {
            fs::write(a.join(key), "").unwrap();
        }
        let entries = [
            PathBuf::from(".git/hooks"),
            a.join("ssh_host_*"),
            tmp.path().join("none/x*"),
        ];
        let mut listed = Vec::new();
        let mut got = expand_entries(&entries, &[a.clone(), b.clone()], &mut listed).unwrap();
        got.sort();
        let mut want = vec![
            a.join(".git/hooks"),
            b.join(".git/hooks"),
            a.join("ssh_host_ed25519_key"),
            a.join("ssh_host_rsa_key"),
        ];
        want.sort();
        assert_eq!(got, want);
        assert_eq!(listed, [a.clone(), tmp.path().join("none")]);
    }

    #[test]
    fn only_protected_paths_a_grant_names_exactly_are_released() {
        let ws = PathBuf::from("/w");
        let protected = vec![
            ws.join(".git/hooks"),
            ws.join(".git/config"),
            ws.join(".bashrc"),
        ];
        let grants = [
            ws.join(".git/config"),
            ws.join(".git/hooks/pre-commit"),
            ws.join(".git"),
        ];
        assert_eq!(
            unless_granted(protected.clone(), &grants),
            [ws.join(".git/hooks"), ws.join(".bashrc")]
        );
        assert_eq!(unless_granted(protected.clone(), &[]), protected);
    }

    #[test]
    fn exit_status_shell_codes() {
        assert_eq!(ExitStatus::Code(3).shell_code(), 3);
        assert_eq!(ExitStatus::Signal(9).shell_code(), 137);
    }
}

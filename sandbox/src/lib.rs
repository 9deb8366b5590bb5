//! Praxis sandbox: what is applied to a command's process between fork and
//! exec (Landlock, seccomp, capabilities, rlimits, environment), and the one
//! place a host process is spawned.
//!
//! # Use
//!
//! ```text
//! let prepared = praxis_sandbox::prepare(&spec)?;           // parent: rulesets, BPF, env, scratch dir
//! let mut child = praxis_sandbox::spawn(prepared, &argv, &cwd, stdio)?;
//! let egress = child.take_egress_listener();                // Network::Proxied: serve the proxy on it
//! let waited = child.wait_timeout(timeout, grace)?;        // or poll `child.pidfd()` from async code
//! ```
//!
//! [`prepare`] does everything that allocates or can fail slowly: it opens the
//! Landlock ruleset, walks the grant trees, takes the seccomp filter (compiled
//! once per socket setting), picks the egress port, builds the environment
//! block and creates the private scratch `TMPDIR`.
//! [`spawn`] clones on a dedicated, never-exiting spawner thread (so the
//! parent-death signal follows the daemon's life, not a worker thread's),
//! with `CLONE_VM | CLONE_VFORK` as `posix_spawn` does: the child shares the
//! daemon's memory until it execs, so no page tables are copied or torn
//! down per command. It then makes only raw system calls on prepared data,
//! on its own stack, in this order:
//!
//! 1. `setsid` (new session and process group, no controlling terminal),
//!    then, when tracking by cgroup, `0` written to the command's
//!    `cgroup.procs` to move into it;
//! 2. stdio onto 0, 1, 2; close-on-exec for every other descriptor;
//! 3. dispositions reset, then the signal mask (every handled signal blocked
//!    until here) cleared;
//! 4. namespaces of its own, in one `unshare` (inside a user namespace of its
//!    own when the daemon lacks CAP_SYS_ADMIN, its id maps written next): a
//!    network namespace with [`Network::Proxied`], where `lo` is brought up
//!    and the egress listener bound on 127.0.0.1 and sent to the parent; a
//!    mount namespace when there is something to mount: protected paths
//!    bind-mounted read-only with their ancestors pinned, secrets inside
//!    writable trees and denied sockets covered (a launcher made ahead has
//!    copied the mounts already, used only while the host's are unchanged:
//!    see `launcher`);
//! 5. `chdir`;
//! 6. the capability bounding set dropped (when the parent may), then
//!    `setgroups`, `setresgid`, `setresuid` for [`RunAs`];
//! 7. parent-death signal, then a check that the parent is still there;
//! 8. ambient, inheritable, permitted and effective capabilities cleared and
//!    verified zero with `capget`;
//! 9. rlimits (core 0, fsize, nofile, cpu, and nproc and address space when
//!    [`Limits`] are not carried by the cgroup), once no more descriptors
//!    are opened;
//! 10. `no_new_privs`; `landlock_restrict_self`; the seccomp filter; `execve`.
//!
//! A failing step is reported to the parent over a close-on-exec pipe (stage
//! and errno) and the child exits without exec: [`spawn`] returns
//! [`SandboxError::Child`]. Nothing degrades silently: a kernel without
//! Landlock ABI 6, a rule that cannot be added, a too-large tree to carve, all
//! are errors the daemon turns into HOLD.
//!
//! # Filesystem model
//!
//! Landlock grants are additive and inherited by a whole subtree, so a path is
//! carved out of a granted tree by granting the tree's other children one by
//! one, down the path (see [`Spec::secrets`] and [`Spec::protected`]). When the
//! child can have a mount namespace (the daemon is root, or unprivileged
//! user namespaces work), writable trees are granted whole and instead:
//! protected paths are bind-mounted read-only on themselves (the copy made
//! read-only, nosuid and nodev before it is attached), with their
//! ancestors pinned as mount points so they cannot be renamed away; secrets
//! inside writable trees are covered by an empty read-only mount. Tools can
//! then create files at the workspace root. Without mounts, protected paths
//! and secrets are carved out of writable trees too, so their ancestors (the
//! workspace root included) keep read rights only.
//!
//! Restricted profiles read only an allow-list ([`Spec::reads`], the
//! workspace and the writable trees) with secrets carved out of it, and
//! write only their grants plus `/dev/null`, `/dev/zero`, `/dev/full`,
//! `/dev/random` and `/dev/urandom`. Landlock rules hold opened inodes, so a
//! file outside the list stays unreadable through every path to it: a
//! symlink, `/proc/self/root`, or another mount of the same tree. Terminals (`/dev/tty`, `/dev/pts/*`, `/dev/ptmx`) and
//! `/dev/shm` are not granted: a command talks through the descriptors it
//! was given, and shared memory would be a channel out of the sandbox.
//!
//! A protected path that a write grant names exactly (`.git/config` for a
//! `git config user.email …` the policy allowed, or a `>> .git/config` an
//! operator approved) is neither pinned nor carved for that command; its
//! parent stays writable, so a tool may replace it through a lock file
//! beside it as git does. Every other protected path stays guarded in the
//! same command.
//!
//! A protected path that does not exist yet cannot be pinned: its deepest
//! existing ancestor is made read-only, unless that ancestor is the writable
//! root itself (which must stay writable); [`Prepared::unguarded`] lists
//! those. A secret that does not exist inside a writable tree is not hidden
//! (there is nothing to read yet).
//!
//! # Sockets and network
//!
//! No command gets raw network. [`Network::Off`]: Landlock handles TCP
//! bind/connect with no rule allowing any, and seccomp refuses `socket()` for
//! every family, AF_UNIX included (below Landlock ABI 9 nothing else keeps
//! path-named sockets such as praxisd's, docker's or systemd's out of reach);
//! AF_UNIX `socketpair` stays allowed for streams and packets, not for
//! datagrams, whose ends can still send to any path.
//!
//! Socket relays ([`Spec::socket_relays`]): a decision that grants a
//! path-named unix socket does not open `socket(AF_UNIX)`. The command runs
//! in a private network namespace (with the network off too), where the
//! child binds one more TCP listener on `127.0.0.1:<port>` per granted
//! socket and hands them to the parent with the egress listener;
//! [`Child::take_socket_listeners`] gives them to the daemon, which relays
//! each connection to its socket. seccomp keeps refusing AF_UNIX.
//!
//! [`Network::Proxied`]: the command runs in a network namespace of its own
//! that holds only `lo`. Before exec the child binds a TCP listener on
//! `127.0.0.1:<port>` there and passes it to the parent over a close-on-exec
//! unix socketpair (SCM_RIGHTS: raw `sendmsg` on stack data, safe between
//! clone and exec; the parent takes it once the child has exec'd, from the
//! socket's queue). [`Child::take_egress_listener`] hands it to the daemon,
//! whose egress proxy accepts the command's connections on it and makes its
//! own in the host's namespace. The proxy variables (`http_proxy`,
//! `https_proxy`, `ALL_PROXY`, upper and lower case) point at it and
//! `no_proxy` is empty. A program that ignores them, connects straight to an
//! address or sends UDP (DNS included) reaches nothing: there is no route
//! out of the namespace. seccomp there allows inet and inet6 sockets, route
//! netlink (`getaddrinfo` uses it) and unix sockets, and refuses raw inet
//! sockets, packet sockets, vsock and every other family; denied unix
//! sockets are covered by mounts or, without mounts, `socket(AF_UNIX)` is
//! refused. Where no network namespace can be made (no CAP_SYS_ADMIN and no
//! unprivileged user namespaces, or a host that refuses `CLONE_NEWNET`),
//! [`prepare`] fails with [`SandboxError::Unsupported`] naming the refusal:
//! the command does not run with raw network instead.
//!
//! Abstract unix sockets and signals never leave the sandbox (Landlock
//! scopes, every profile; a private network namespace has its own abstract
//! socket space too). Landlock's own unix-socket right (ABI 9) is not used
//! yet.
//!
//! # Set-id bits
//!
//! seccomp refuses a mode holding `S_ISUID` or `S_ISGID` in `chmod`,
//! `fchmod`, `fchmodat`, `fchmodat2`, `mknod(at)`, `creat` and `open(at)`
//! with `O_CREAT` or `O_TMPFILE`; `openat2` answers ENOSYS (its mode sits in a
//! struct the filter cannot read) so callers fall back to `openat`. A file
//! the command leaves behind can thus never run with its owner's identity
//! later, outside the sandbox. Inside it, `no_new_privs` already makes set-id
//! bits inert, and the mounts the child makes with new flags (read-only pins,
//! covering tmpfs) are `nosuid`.
//!
//! # Process groups
//!
//! The command leads its own session and process group. [`Child::wait`] and
//! friends kill what is left of the group once the leader has exited, and
//! the timeout path signals the whole group. A descendant that starts a
//! session of its own leaves the group, but not the command's cgroup: where
//! the host allows one ([`tracking`]), each command runs in a cgroup v2 of
//! its own, joined by the child right after `setsid`, and everything left in
//! it is killed when the leader has been reaped or the group is killed.
//! Without one, tracking is by process group only.
//!
//! # Limits
//!
//! [`Spec::limits`] caps the whole command's processes and memory: as the
//! command cgroup's `pids.max` and `memory.max` where its base can pass the
//! controllers down; where the host keeps those controllers in cgroup v1,
//! as `pids.max` and `memory.limit_in_bytes` of a cgroup per command in the
//! v1 `pids` and `memory` hierarchies; else as `RLIMIT_NPROC` and
//! `RLIMIT_AS` in the child (weaker; see [`Limits`]). [`limiting`] says
//! which, and [`process_control`] says both, for `praxis status`.

pub mod dir_watch;
pub mod guardian;
pub mod host;

mod carve_cache;
mod cgroup;
mod child;
mod env;
mod escape_probes;
mod filter;
mod fs_rules;
mod launcher;
mod mounts;
mod netns;
mod own_caps;
mod pins;
mod private_tmp;
mod probe;
mod process;
mod scratch;
mod spare;
mod spawner;
mod tidy;

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

pub use cgroup::{
    CgroupBase, CgroupError, Limiting, Tracking, V1Bases, limiting, process_control, tracking,
};
pub use env::{BASE_ENV_ALLOW, PROXY_ENV};

/// `PRAXIS_SOCKET_<n>`: the sandbox sets it to `127.0.0.1:<port>` of the
/// n-th socket relay (from 1), like the proxy variables, and no caller can.
pub const SOCKET_ENV_PREFIX: &str = "PRAXIS_SOCKET_";
pub use filter::FilterError;
pub use fs_rules::RulesError;
pub use pins::PinError;
pub use praxis_proto::Profile;
pub use private_tmp::PrivateTmp;
pub use probe::{SelfTestReport, Support, self_test, support};
pub use process::{Child, ExitStatus, Leftovers, Prepared, Waited, prepare, relay_ports, spawn};
pub use scratch::sweep_scratch;
pub use spare::{discard_spare, keep_spares, make_spare, place_ahead};
pub use tidy::{client_gone, tidy_now};

/// Minimum Landlock ABI: 6 brings the abstract-unix-socket and signal scopes.
pub const MIN_LANDLOCK_ABI: i32 = 6;

/// Resource limits applied to the child (soft and hard). Core dumps are always
/// disabled. A value above the daemon's own hard limit is lowered to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimits {
    /// Largest file the command may write, in bytes.
    pub fsize_bytes: u64,
    /// Open file descriptors.
    pub nofile: u64,
    /// CPU seconds.
    pub cpu_secs: u64,
}

/// How a command reaches the network. There is no raw network: a command
/// either has no sockets, or lives in a network namespace of its own whose
/// only way out is the egress proxy the daemon serves on a listener made
/// inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// No network: seccomp refuses `socket()` for every family (unix
    /// included) and Landlock refuses TCP bind and connect.
    Off,
    /// A private network namespace holding only `lo`, with a TCP listener on
    /// `127.0.0.1:port` handed to the parent ([`Child::take_egress_listener`])
    /// and the proxy variables pointing at it. Whatever the command does,
    /// every other address, TCP or UDP, DNS included, reaches nothing.
    Proxied {
        /// The listener's port inside the namespace; `None` lets the sandbox
        /// pick one from the ephemeral range.
        port: Option<u16>,
    },
}

impl Network {
    /// Whether the command has no network at all.
    pub fn is_off(self) -> bool {
        self == Network::Off
    }
}

/// A command's default ceiling on processes and threads (its whole tree).
pub const DEFAULT_PIDS_MAX: u64 = 1024;

/// A command's default memory ceiling, in bytes.
pub const DEFAULT_MEMORY_MAX_BYTES: u64 = 8 << 30;

/// Per-command ceilings on processes and memory, for the whole command: the
/// cgroup's `pids.max` and `memory.max` (v2) or `pids.max` and
/// `memory.limit_in_bytes` (v1) where [`Limiting::by_cgroup`], else
/// `RLIMIT_NPROC` and `RLIMIT_AS` in the child. The rlimits are weaker:
/// `RLIMIT_NPROC` counts a user's processes per user namespace (an
/// unprivileged daemon therefore gives each command one of its own; under a
/// root daemon it counts all of the target user's processes and binds no
/// command running as root), and `RLIMIT_AS` caps each process's address
/// space, not the command's memory (runtimes that reserve large virtual
/// regions need a higher figure there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads.
    pub pids: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            pids: DEFAULT_PIDS_MAX,
            memory_bytes: DEFAULT_MEMORY_MAX_BYTES,
        }
    }
}

/// The identity a command runs as when the daemon is root and serves another user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// User id (real, effective and saved).
    pub uid: u32,
    /// Group id (real, effective and saved).
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// Everything the sandbox needs to know about one command.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Filesystem profile.
    pub profile: Profile,
    /// Whether and how the command reaches the network.
    pub network: Network,
    /// Writable under [`Profile::WorkspaceWrite`].
    pub workspace: PathBuf,
    /// The user's home; becomes `HOME`.
    pub home: PathBuf,
    /// Absolute tool cache dirs, writable under [`Profile::WorkspaceWrite`]; only
    /// those that exist are granted.
    pub writable_caches: Vec<PathBuf>,
    /// Exact paths that this command may write beyond its profile, as its
    /// decision granted them, in every restricted profile: outside the
    /// writable trees, or a protected path inside one. Each must exist and
    /// not be a symlink (the daemon creates a new one for the caller before
    /// the spawn): Landlock grants inodes, not names.
    pub write_grants: Vec<PathBuf>,
    /// Exact paths that this command may read beyond its read trees, as its
    /// decision granted them, in every restricted profile. A secret granted
    /// here is readable for this command (secrets inside a granted directory
    /// are not). One that is absent or a symlink gets no rule.
    pub read_grants: Vec<PathBuf>,
    /// Ports (from [`relay_ports`]) of the TCP listeners on `127.0.0.1`
    /// made inside the command's private network namespace, one per unix
    /// socket its decision granted, handed to the parent in this order
    /// ([`Child::take_socket_listeners`]), which relays each connection to
    /// its socket. Any makes the namespace, with the network off too; the
    /// command still cannot make a unix socket itself. The n-th (from 1) is
    /// named by `PRAXIS_SOCKET_<n>=127.0.0.1:<port>` ([`SOCKET_ENV_PREFIX`]).
    pub socket_relays: Vec<u16>,
    /// Paths kept unwritable inside writable trees: absolute, or relative
    /// names (`.git/hooks`) applied under every writable tree. A final
    /// component ending in `*` matches by prefix. One that a write grant
    /// names exactly is left writable for this command; the others stay
    /// guarded.
    pub protected: Vec<PathBuf>,
    /// Trees a restricted profile may read besides the workspace, the
    /// writable trees and the write grants: the system trees programs need,
    /// the tool dirs of the home. Absolute. One that is absent or a symlink gets no rule (its target is
    /// readable only where it lies in a read tree itself). Nothing else is
    /// readable: the rules name inodes, so another path or mount to an
    /// unlisted file reaches nothing.
    pub reads: Vec<PathBuf>,
    /// Paths unreadable in restricted profiles even inside a read tree:
    /// absolute, or relative to `home`; a final `*` matches by prefix. Names
    /// inside a secret directory stay listable, contents do not. Entries
    /// under `/proc` are left to Landlock's ptrace scoping (another
    /// process's `environ` is closed).
    pub secrets: Vec<PathBuf>,
    /// Candidate environment; the sandbox applies its own allowlist.
    pub env: Vec<(OsString, OsString)>,
    /// Names added to the allowlist (brokered credential variables, for
    /// instance); names the policy's environment table strips
    /// (`praxis_policy::env::stripped`) and [`PROXY_ENV`] stay out
    /// regardless.
    pub extra_env_allow: Vec<String>,
    /// Resource limits.
    pub rlimits: Rlimits,
    /// Process and memory ceilings.
    pub limits: Limits,
    /// Identity to switch to, when the daemon is root.
    pub run_as: Option<RunAs>,
    /// Parent dir of the per-command private `TMPDIR` (created 0700, removed
    /// when the [`Child`] or [`Prepared`] is dropped).
    pub scratch_root: PathBuf,
    /// The session's private `/tmp` and `/var/tmp`, mounted over the host's
    /// (where the host allows a mount namespace); `TMPDIR` is then `/tmp`.
    pub private_tmp: Option<PrivateTmp>,
}

/// The child's standard descriptors.
#[derive(Debug)]
pub struct Stdio {
    /// Becomes fd 0.
    pub stdin: OwnedFd,
    /// Becomes fd 1.
    pub stdout: OwnedFd,
    /// Becomes fd 2.
    pub stderr: OwnedFd,
}

/// Why a command could not be sandboxed or spawned. Every variant means
/// "do not run it"; the message names the exact reason.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The Landlock ruleset could not be built as required.
    #[error("landlock: {0}")]
    Rules(#[from] RulesError),
    /// The seccomp filter could not be compiled.
    #[error("seccomp: {0}")]
    Filter(#[from] FilterError),
    /// Protected paths could not be pinned.
    #[error("protected paths: {0}")]
    Pins(#[from] PinError),
    /// A value handed to the sandbox is unusable (NUL byte, empty argv, relative path).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The kernel lacks something the sandbox requires.
    #[error("sandbox unsupported: {0}")]
    Unsupported(String),
    /// The program is not found on the child's `PATH`.
    #[error("program not found on PATH: {0}")]
    NotFound(String),
    /// A step in the child failed before exec; the command did not run.
    #[error("{stage} failed: {}", errno_name(*.errno))]
    Child {
        /// The step that failed, named after its system call.
        stage: &'static str,
        /// The errno it returned.
        errno: i32,
    },
    /// The command's cgroup could not be created, joined or killed.
    #[error("cgroup: {0}")]
    Cgroup(#[from] CgroupError),
    /// A system call in the parent failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    fn os(what: &'static str, source: std::io::Error) -> Self {
        SandboxError::Os { what, source }
    }

    fn last_os(what: &'static str) -> Self {
        SandboxError::os(what, std::io::Error::last_os_error())
    }
}

/// The symbolic name of an errno ("EPERM"), or its number.
fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EINVAL => "EINVAL",
        libc::ENOSYS => "ENOSYS",
        libc::EBADF => "EBADF",
        libc::ENOMEM => "ENOMEM",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBUSY => "EBUSY",
        libc::ENOTDIR => "ENOTDIR",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ESRCH => "ESRCH",
        libc::ELOOP => "ELOOP",
        libc::EMFILE => "EMFILE",
        libc::EROFS => "EROFS",
        _ => return format!("errno {errno}"),
    };
    name.to_owned()
}

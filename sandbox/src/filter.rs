//! The seccomp filter, compiled in the parent once per socket setting.
//!
//! It is one program in two parts. The guard, written by hand because it
//! needs comparisons seccompiler cannot express, comes first: x32 system call
//! numbers are refused (they would bypass number-keyed rules), and `clone3`
//! and `openat2` return ENOSYS so that callers fall back to `clone` and
//! `openat`, whose flags and mode the rules can inspect (the newer calls take
//! them in a struct the filter cannot read). Whatever the guard lets through falls into the rules
//! (seccompiler), which return EPERM for the kernel attack surface and escape
//! hatches a command never needs, for a set-uid or set-gid bit in a mode
//! (`chmod` and friends, and file creation), and for sockets the network
//! setting forbids. Both parts kill the process on a foreign architecture.
//!
//! One program instead of two stacked filters gives the same verdicts (the
//! guard's refusals are KILL, or an errno where the rules allow or refuse
//! with EPERM, and a later-installed filter's errno won ties) while the
//! kernel verifies, translates and caches one program per command, not two:
//! each attach costs tens of microseconds.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// Why a filter could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// seccompiler rejected a rule or the filter.
    #[error("{0}")]
    Compile(#[from] seccompiler::BackendError),
}

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// System calls refused whatever their arguments.
const ALWAYS_DENIED: &[libc::c_long] = &[
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_setns,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
];

/// Namespace-creating flags refused in `clone` and `unshare`.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// The mode bits that make a file run with its owner's or group's identity.
/// A file the command leaves with one of them could lift whoever runs it
/// later, outside the sandbox, to the command's identity.
const SET_ID_BITS: [u32; 2] = [libc::S_ISUID, libc::S_ISGID];

/// `__O_TMPFILE`: the bit `O_TMPFILE` adds to `O_DIRECTORY` (an unnamed file
/// that `linkat` can name later).
const O_TMPFILE_BIT: u64 = 0o2000_0000;

/// Calls that set a mode, and the argument holding it: refused when the mode
/// carries a set-id bit.
#[cfg(target_arch = "x86_64")]
const MODE_SETTERS: &[(libc::c_long, u8)] = &[
    (libc::SYS_chmod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (libc::SYS_fchmodat2, 2),
    (libc::SYS_creat, 1),
    (libc::SYS_mknod, 1),
    (libc::SYS_mknodat, 2),
];
#[cfg(target_arch = "aarch64")]
const MODE_SETTERS: &[(libc::c_long, u8)] = &[
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (libc::SYS_fchmodat2, 2),
    (libc::SYS_mknodat, 2),
];

/// Calls that create a file with a mode only when their flags say so: the
/// call, its flags argument and its mode argument.
#[cfg(target_arch = "x86_64")]
const CREATING_OPENS: &[(libc::c_long, u8, u8)] =
    &[(libc::SYS_open, 1, 2), (libc::SYS_openat, 2, 3)];
#[cfg(target_arch = "aarch64")]
const CREATING_OPENS: &[(libc::c_long, u8, u8)] = &[(libc::SYS_openat, 2, 3)];

/// Which sockets a command may create. `socketpair(AF_UNIX)` is always
/// allowed: its two ends reach nothing outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Sockets {
    /// Network off: `socket()` refused for every family, AF_UNIX included,
    /// because below Landlock ABI 9 nothing else keeps path-named sockets
    /// (praxisd's own, docker's, systemd's) out of reach.
    None,
    /// In a private network namespace, but unix sockets refused (denied
    /// sockets cannot be masked without mounts).
    PrivateNetNoUnix,
    /// In a private network namespace: TCP and UDP over IPv4 and IPv6,
    /// route netlink (`getaddrinfo` asks it which addresses exist) and unix
    /// sockets; raw and packet sockets, vsock and every other family refused.
    PrivateNet,
}

/// The families a command in a private network namespace may open.
const PRIVATE_NET_FAMILIES: [libc::c_int; 4] = [
    libc::AF_UNIX,
    libc::AF_INET,
    libc::AF_INET6,
    libc::AF_NETLINK,
];

/// `SOCK_TYPE_MASK`: the type without `SOCK_NONBLOCK` and `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u64 = 0xf;

/// The program for `sockets`, ready for `seccomp(SECCOMP_SET_MODE_FILTER)`:
/// compiled on first use and kept, since it depends on nothing else.
pub(crate) fn program(sockets: Sockets) -> Result<&'static [libc::sock_filter], FilterError> {
    static PROGRAMS: [OnceLock<Vec<libc::sock_filter>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let cell = &PROGRAMS[sockets as usize];
    if let Some(program) = cell.get() {
        return Ok(program);
    }
    let compiled = combine(&rules_program(sockets)?);
    Ok(cell.get_or_init(|| compiled))
}

/// The guard, then the rules: the guard's jumps past its last check land on
/// the rules' first instruction.
fn combine(rules: &[sock_filter]) -> Vec<libc::sock_filter> {
    guard()
        .iter()
        .chain(rules)
        .map(|f| libc::sock_filter {
            code: f.code,
            jt: f.jt,
            jf: f.jf,
            k: f.k,
        })
        .collect()
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, FilterError> {
    // Dword: compare the low 32 bits only, as the kernel sees an int argument.
    Ok(SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, FilterError> {
    Ok(SeccompRule::new(conditions)?)
}

fn flag_rules(arg: u8) -> Result<Vec<SeccompRule>, FilterError> {
    NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag as u32);
            rule(vec![cond(arg, SeccompCmpOp::MaskedEq(flag), flag)?])
        })
        .collect()
}

/// Rules matching a set-id bit in argument `mode_arg`, each also requiring
/// one of `flags` (argument, bit) when given.
fn set_id_rules(mode_arg: u8, flags: &[(u8, u64)]) -> Result<Vec<SeccompRule>, FilterError> {
    let mut rules = Vec::new();
    for bit in SET_ID_BITS {
        let bit = u64::from(bit);
        let mode = || cond(mode_arg, SeccompCmpOp::MaskedEq(bit), bit);
        if flags.is_empty() {
            rules.push(rule(vec![mode()?])?);
        }
        for &(arg, flag) in flags {
            let created = cond(arg, SeccompCmpOp::MaskedEq(flag), flag)?;
            rules.push(rule(vec![created, mode()?])?);
        }
    }
    Ok(rules)
}

/// The `socket()` calls refused in a private network namespace: a family
/// outside [`PRIVATE_NET_FAMILIES`], a raw inet socket, and netlink other
/// than route.
fn private_net_socket_rules() -> Result<Vec<SeccompRule>, FilterError> {
    let other_family = PRIVATE_NET_FAMILIES
        .iter()
        .map(|&family| cond(0, SeccompCmpOp::Ne, family as u64))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rules = vec![rule(other_family)?];
    for family in [libc::AF_INET, libc::AF_INET6] {
        rules.push(rule(vec![
            cond(0, SeccompCmpOp::Eq, family as u64)?,
            cond(
                1,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                libc::SOCK_RAW as u64,
            )?,
        ])?);
    }
    rules.push(rule(vec![
        cond(0, SeccompCmpOp::Eq, libc::AF_NETLINK as u64)?,
        cond(2, SeccompCmpOp::Ne, libc::NETLINK_ROUTE as u64)?,
    ])?);
    Ok(rules)
}

/// Compiles the rules part for one socket setting.
fn rules_program(sockets: Sockets) -> Result<BpfProgram, FilterError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALWAYS_DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![cond(1, SeccompCmpOp::Eq, libc::TIOCSTI)?])?,
            rule(vec![cond(1, SeccompCmpOp::Eq, libc::TIOCLINUX)?])?,
        ],
    );
    for &(nr, mode_arg) in MODE_SETTERS {
        rules.insert(nr, set_id_rules(mode_arg, &[])?);
    }
    for &(nr, flags_arg, mode_arg) in CREATING_OPENS {
        let creates = [
            (flags_arg, libc::O_CREAT as u64),
            (flags_arg, O_TMPFILE_BIT),
        ];
        rules.insert(nr, set_id_rules(mode_arg, &creates)?);
    }
    rules.insert(libc::SYS_clone, flag_rules(0)?);
    rules.insert(libc::SYS_unshare, flag_rules(0)?);
    let af_unix = libc::AF_UNIX as u64;
    let socket_rules = match sockets {
        // An empty rule list matches unconditionally.
        Sockets::None => Vec::new(),
        Sockets::PrivateNet => private_net_socket_rules()?,
        Sockets::PrivateNetNoUnix => {
            let mut rules = private_net_socket_rules()?;
            rules.push(rule(vec![cond(0, SeccompCmpOp::Eq, af_unix)?])?);
            rules
        }
    };
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(
        libc::SYS_socketpair,
        vec![rule(vec![cond(0, SeccompCmpOp::Ne, af_unix)?])?],
    );
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        ARCH,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}

const fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// Offsets in `struct seccomp_data`.
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
/// The bit x32 system call numbers carry.
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;
/// aarch64 has no x32-like alias numbering; the comparison never matches.
#[cfg(target_arch = "aarch64")]
const X32_BIT: u32 = u32::MAX;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// The guard: it returns only to refuse, and falls through past its end
/// (into the rules) for everything else.
fn guard() -> [sock_filter; 10] {
    [
        stmt(LD_W_ABS, DATA_ARCH),
        jump(JEQ, AUDIT_ARCH, 1, 0),
        stmt(RET, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(LD_W_ABS, DATA_NR),
        jump(JGE, X32_BIT, 0, 1),
        stmt(RET, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        jump(JEQ, libc::SYS_clone3 as u32, 0, 1),
        stmt(RET, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        jump(JEQ, libc::SYS_openat2 as u32, 0, 1),
        stmt(RET, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_socket_setting_compiles_to_a_distinct_program() {
        let lens: Vec<usize> = [
            Sockets::None,
            Sockets::PrivateNetNoUnix,
            Sockets::PrivateNet,
        ]
        .into_iter()
        .map(|sockets| program(sockets).unwrap().len())
        .collect();
        assert!(lens.iter().all(|&l| l > ALWAYS_DENIED.len()));
        assert!(lens[0] != lens[1] && lens[1] != lens[2], "{lens:?}");
    }

    #[test]
    fn the_guard_falls_through_into_the_rules() {
        let guard = guard();
        let rules = rules_program(Sockets::None).unwrap();
        let combined = program(Sockets::None).unwrap();
        let same = |a: &libc::sock_filter, b: &sock_filter| {
            (a.code, a.jt, a.jf, a.k) == (b.code, b.jt, b.jf, b.k)
        };
        assert_eq!(combined.len(), guard.len() + rules.len());
        assert!(
            combined
                .iter()
                .zip(guard.iter().chain(rules.iter()))
                .all(|(a, b)| same(a, b))
        );
        // No guard jump leaves it except onto the rules' first instruction,
        // and no guard return lets a call through.
        for (i, f) in guard.iter().enumerate() {
            if f.code & 0x07 == libc::BPF_JMP as u16 {
                for off in [f.jt, f.jf] {
                    assert!(i + 1 + usize::from(off) <= guard.len(), "jump at {i}");
                }
            }
            if f.code == RET {
                assert_ne!(f.k, libc::SECCOMP_RET_ALLOW, "return at {i}");
            }
        }
        // The last check's fall-through is the rules' start.
        assert_eq!(guard[guard.len() - 2].jf, 1);
    }

    fn errno_of(rc: libc::c_long) -> i32 {
        if rc == -1 {
            // SAFETY: reads this thread's errno.
            unsafe { *libc::__errno_location() }
        } else {
            0
        }
    }

    /// `socket(family, kind, protocol)`'s errno, 0 when it worked (the
    /// socket is closed again).
    fn socket_errno(family: libc::c_int, kind: libc::c_int, protocol: libc::c_int) -> i32 {
        // SAFETY: a raw socket call; a descriptor it returns is closed here.
        let fd = unsafe { libc::syscall(libc::SYS_socket, family, kind, protocol) };
        if fd >= 0 {
            // SAFETY: our own fresh descriptor.
            unsafe { libc::close(fd as libc::c_int) };
        }
        errno_of(fd)
    }

    /// Installs the program for `sockets` in a forked child and runs
    /// `checks` there; fails with the number of the first check that failed.
    fn checks_under<const N: usize>(sockets: Sockets, checks: fn() -> [bool; N]) {
        let program = program(sockets).unwrap();
        // SAFETY: the child makes only raw system calls on data prepared
        // before the fork, then exits without unwinding.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: as above; every pointer is to live, prepared data.
            unsafe {
                let prog = libc::sock_fprog {
                    len: program.len() as libc::c_ushort,
                    filter: program.as_ptr().cast_mut(),
                };
                let installed = libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                    && libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog)
                        == 0;
                if !installed {
                    libc::_exit(100);
                }
                let failed = checks().iter().position(|ok| !ok).map_or(0, |i| i + 1);
                libc::_exit(failed as libc::c_int);
            }
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "status {status}");
        assert_eq!(libc::WEXITSTATUS(status), 0, "check number that failed");
    }

    /// What the guard and the rules each refuse, and that other calls pass.
    #[test]
    fn the_program_refuses_in_the_kernel() {
        checks_under(Sockets::None, || {
            let missing = c"/nonexistent-praxis-dir/file".as_ptr();
            let create = libc::O_CREAT | libc::O_WRONLY;
            // SAFETY: raw system calls on constants and a static C string.
            unsafe {
                [
                    errno_of(libc::syscall(libc::SYS_clone3, 0, 0)) == libc::ENOSYS,
                    errno_of(libc::syscall(
                        libc::c_long::from(X32_BIT) | libc::SYS_getpid,
                    )) == libc::EPERM,
                    socket_errno(libc::AF_INET, libc::SOCK_STREAM, 0) == libc::EPERM,
                    socket_errno(libc::AF_UNIX, libc::SOCK_STREAM, 0) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_unshare, libc::CLONE_NEWNS)) == libc::EPERM,
                    libc::syscall(libc::SYS_getpid) > 0,
                    errno_of(libc::syscall(libc::SYS_openat2, 0, 0, 0, 0)) == libc::ENOSYS,
                    // The rules answer before the kernel sees the bad
                    // descriptor or path; without a set-id bit it does.
                    errno_of(libc::syscall(libc::SYS_fchmod, -1, 0o4755)) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_fchmod, -1, 0o2755)) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_fchmod, -1, 0o1755)) == libc::EBADF,
                    errno_of(libc::syscall(libc::SYS_fchmodat, -1, missing, 0o4700, 0))
                        == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_openat, -1, missing, create, 0o2644))
                        == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_openat, -1, missing, create, 0o644))
                        == libc::ENOENT,
                    errno_of(libc::syscall(
                        libc::SYS_openat,
                        -1,
                        missing,
                        libc::O_RDONLY,
                        0o4644,
                    )) == libc::ENOENT,
                ]
            }
        });
    }

    /// In a private network namespace: inet, route netlink and unix open;
    /// raw, packet, vsock and other netlink refused.
    #[test]
    fn private_net_sockets_are_inet_route_and_unix_only() {
        checks_under(Sockets::PrivateNet, || {
            let nonblock = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
            [
                socket_errno(libc::AF_INET, nonblock, 0) == 0,
                socket_errno(libc::AF_INET6, libc::SOCK_DGRAM, 0) == 0,
                socket_errno(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE) == 0,
                socket_errno(libc::AF_UNIX, libc::SOCK_STREAM, 0) == 0,
                socket_errno(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 1) == libc::EPERM,
                socket_errno(libc::AF_INET6, libc::SOCK_RAW, 58) == libc::EPERM,
                socket_errno(libc::AF_PACKET, libc::SOCK_RAW, 0) == libc::EPERM,
                socket_errno(libc::AF_VSOCK, libc::SOCK_STREAM, 0) == libc::EPERM,
                socket_errno(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_AUDIT) == libc::EPERM,
                socket_errno(libc::AF_ALG, libc::SOCK_SEQPACKET, 0) == libc::EPERM,
            ]
        });
        checks_under(Sockets::PrivateNetNoUnix, || {
            [
                socket_errno(libc::AF_UNIX, libc::SOCK_STREAM, 0) == libc::EPERM,
                socket_errno(libc::AF_INET, libc::SOCK_STREAM, 0) == 0,
            ]
        });
    }
}

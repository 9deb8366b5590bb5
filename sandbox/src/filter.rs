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
//! Between the two, a comparison tree on the call number lets every call the
//! rules do not name through after a few comparisons and sends the others
//! to the rules. When a filter is attached the kernel runs it once for every
//! call number to find the calls it can let through without running it;
//! through the rules' linear chain that walk took about a fifth of a
//! millisecond per command, through the tree it is a few comparisons.
//!
//! One program instead of two stacked filters gives the same verdicts (the
//! guard's refusals are KILL, or an errno where the rules allow or refuse
//! with EPERM, and a later-installed filter's errno won ties) while the
//! kernel verifies, translates and caches one program per command, not two:
//! each attach costs tens of microseconds.
//!
//! A launcher made ahead is where two filters pay: it attaches the program
//! without the rules for the four calls its set-up still makes
//! ([`ahead`]) while it waits, off the command's path, and the plan then
//! attaches those rules alone ([`closing`]), a program a sixth the size.
//! The pair refuses exactly what the whole program does.

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

/// Which sockets a command may create. `socket(AF_UNIX)` is refused in
/// every setting: a unix socket made with `socket()` could connect to any
/// path-named socket it can resolve (praxisd's own, gpg-agent's, docker's,
/// systemd's), and below Landlock ABI 9 nothing else keeps those out of
/// reach. `socketpair(AF_UNIX)` is allowed for streams and packets, whose
/// ends are bound to each other for good; a datagram pair is refused,
/// because either end can still `sendto` or `connect` any path-named
/// datagram socket (systemd's notify and journal sockets, `/dev/log`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Sockets {
    /// Network off: `socket()` refused for every family.
    None,
    /// In a private network namespace: TCP and UDP over IPv4 and IPv6, and
    /// route netlink (`getaddrinfo` asks it which addresses exist); unix,
    /// raw and packet sockets, vsock and every other family refused.
    PrivateNet,
}

/// The families a command in a private network namespace may open.
const PRIVATE_NET_FAMILIES: [libc::c_int; 3] = [libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// `SOCK_TYPE_MASK`: the type without `SOCK_NONBLOCK` and `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u64 = 0xf;

/// The calls a launcher's set-up still makes after it attached
/// [`ahead`] (joining and making namespaces, mounting, opening its
/// listeners), whose rules [`closing`] holds instead.
const SET_UP_CALLS: [libc::c_long; 7] = [
    libc::SYS_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_move_mount,
    libc::SYS_setns,
    libc::SYS_unshare,
    libc::SYS_socket,
];

/// Which of the rules a program holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// All of them: a command's whole filter.
    Whole(Sockets),
    /// All but the rules for [`SET_UP_CALLS`].
    Ahead,
    /// Only those.
    Closing(Sockets),
}

impl Part {
    fn holds(self, nr: libc::c_long) -> bool {
        match self {
            Part::Whole(_) => true,
            Part::Ahead => !SET_UP_CALLS.contains(&nr),
            Part::Closing(_) => SET_UP_CALLS.contains(&nr),
        }
    }

    /// Its place in the table of compiled programs.
    fn index(self) -> usize {
        match self {
            Part::Whole(sockets) => sockets as usize,
            Part::Ahead => 2,
            Part::Closing(sockets) => 3 + sockets as usize,
        }
    }
}

/// The program for `sockets`, ready for `seccomp(SECCOMP_SET_MODE_FILTER)`:
/// compiled on first use and kept, since it depends on nothing else.
pub(crate) fn program(sockets: Sockets) -> Result<&'static [libc::sock_filter], FilterError> {
    compiled(Part::Whole(sockets))
}

/// The program a launcher attaches while it waits for a command: the
/// whole filter but the rules for the calls its set-up still makes. The
/// kernel runs every attached filter and takes the strictest verdict, so
/// [`closing`] attached on top after the set-up makes the pair refuse
/// exactly what [`program`] does, and the costly attach of the large
/// program (its translation and compilation) is off the command's path.
pub(crate) fn ahead() -> Result<&'static [libc::sock_filter], FilterError> {
    compiled(Part::Ahead)
}

/// The rules for the set-up's calls, for `sockets`: attached after
/// [`ahead`], the pair is [`program`]'s filter.
pub(crate) fn closing(sockets: Sockets) -> Result<&'static [libc::sock_filter], FilterError> {
    compiled(Part::Closing(sockets))
}

fn compiled(part: Part) -> Result<&'static [libc::sock_filter], FilterError> {
    static PROGRAMS: [OnceLock<Vec<libc::sock_filter>>; 5] = [const { OnceLock::new() }; 5];
    let cell = &PROGRAMS[part.index()];
    if let Some(program) = cell.get() {
        return Ok(program);
    }
    let rules = rules_program(part)?;
    let compiled = match part {
        // A handful of calls: the rules' own chain is short enough.
        Part::Closing(_) => rules.program.iter().map(to_libc).collect(),
        Part::Whole(_) | Part::Ahead => combine(&dispatch(&rules.named), &rules.program),
    };
    Ok(cell.get_or_init(|| compiled))
}

fn to_libc(f: &sock_filter) -> libc::sock_filter {
    libc::sock_filter {
        code: f.code,
        jt: f.jt,
        jf: f.jf,
        k: f.k,
    }
}

/// The guard, the dispatch, then the rules: the guard's jumps past its last
/// check land on the dispatch, whose jumps past its end land on the rules'
/// first instruction.
fn combine(dispatch: &[sock_filter], rules: &[sock_filter]) -> Vec<libc::sock_filter> {
    guard()
        .iter()
        .chain(dispatch)
        .chain(rules)
        .map(to_libc)
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

/// The rules part for one socket setting, and the calls it names.
struct Rules {
    program: BpfProgram,
    /// Ascending call numbers: every other call passes the rules.
    named: Vec<u32>,
}

/// Compiles the rules `part` holds.
fn rules_program(part: Part) -> Result<Rules, FilterError> {
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
    // The launcher's program holds no socket rule: a whole filter or a
    // closing one has the rule for its socket setting.
    if let Part::Whole(sockets) | Part::Closing(sockets) = part {
        let socket_rules = match sockets {
            // An empty rule list matches unconditionally.
            Sockets::None => Vec::new(),
            Sockets::PrivateNet => private_net_socket_rules()?,
        };
        rules.insert(libc::SYS_socket, socket_rules);
    }
    rules.insert(
        libc::SYS_socketpair,
        vec![
            rule(vec![cond(0, SeccompCmpOp::Ne, af_unix)?])?,
            rule(vec![cond(
                1,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                libc::SOCK_DGRAM as u64,
            )?])?,
        ],
    );
    rules.retain(|&nr, _| part.holds(nr));
    // Call numbers are small and non-negative, so they fit the 32-bit
    // `nr` field the dispatch compares.
    let named = rules.keys().map(|&nr| nr as u32).collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        ARCH,
    )?;
    Ok(Rules {
        program: BpfProgram::try_from(filter)?,
        named,
    })
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
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;

/// Most names a dispatch leaf compares one after the other.
const LEAF: usize = 4;

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

/// The dispatch for `named` (ascending call numbers), run with the call
/// number in the accumulator: a call not named returns ALLOW, a named one
/// jumps just past the dispatch's end. It halves the names at each `JGE`
/// (a `JA` reaches the lower half, whatever its length) down to leaves of
/// at most [`LEAF`] `JEQ`s, so every conditional jump is short.
fn dispatch(named: &[u32]) -> Vec<sock_filter> {
    /// An instruction, or a `JA` to the rules whose offset is known last.
    enum Step {
        Insn(sock_filter),
        ToRules,
    }
    fn tree(named: &[u32], out: &mut Vec<Step>) {
        if named.len() <= LEAF {
            // Each JEQ jumps over the rest and the ALLOW onto the JA.
            let n = named.len();
            for (i, &nr) in named.iter().enumerate() {
                out.push(Step::Insn(jump(JEQ, nr, (n - i) as u8, 0)));
            }
            out.push(Step::Insn(stmt(RET, libc::SECCOMP_RET_ALLOW)));
            out.push(Step::ToRules);
            return;
        }
        let (lower, upper) = named.split_at(named.len() / 2);
        out.push(Step::Insn(jump(JGE, upper[0], 1, 0)));
        let to_lower = out.len();
        out.push(Step::Insn(stmt(JA, 0)));
        tree(upper, out);
        let skip = (out.len() - to_lower - 1) as u32;
        out[to_lower] = Step::Insn(stmt(JA, skip));
        tree(lower, out);
    }
    let mut steps = Vec::new();
    tree(named, &mut steps);
    let end = steps.len();
    steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| match step {
            Step::Insn(insn) => insn,
            Step::ToRules => stmt(JA, (end - i - 1) as u32),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_socket_setting_compiles_to_a_distinct_program() {
        let lens: Vec<usize> = [Sockets::None, Sockets::PrivateNet]
            .into_iter()
            .map(|sockets| program(sockets).unwrap().len())
            .collect();
        assert!(lens.iter().all(|&l| l > ALWAYS_DENIED.len()));
        assert!(lens[0] != lens[1], "{lens:?}");
    }

    #[test]
    fn the_guard_falls_through_into_the_dispatch_and_it_into_the_rules() {
        let guard = guard();
        let rules = rules_program(Part::Whole(Sockets::None)).unwrap();
        let dispatch = dispatch(&rules.named);
        let combined = program(Sockets::None).unwrap();
        let same = |a: &libc::sock_filter, b: &sock_filter| {
            (a.code, a.jt, a.jf, a.k) == (b.code, b.jt, b.jf, b.k)
        };
        assert_eq!(
            combined.len(),
            guard.len() + dispatch.len() + rules.program.len()
        );
        assert!(
            combined
                .iter()
                .zip(guard.iter().chain(&dispatch).chain(&rules.program))
                .all(|(a, b)| same(a, b))
        );
        // No jump of either part leaves it except onto the next part's
        // first instruction; the guard lets no call through, the dispatch
        // only calls the rules do not name.
        for (part, allows) in [(&guard[..], false), (&dispatch[..], true)] {
            for (i, f) in part.iter().enumerate() {
                if f.code == JA {
                    assert!(i + 1 + f.k as usize <= part.len(), "jump at {i}");
                } else if f.code & 0x07 == libc::BPF_JMP as u16 {
                    for off in [f.jt, f.jf] {
                        assert!(i + 1 + usize::from(off) <= part.len(), "jump at {i}");
                    }
                }
                if f.code == RET {
                    assert_eq!(f.k == libc::SECCOMP_RET_ALLOW, allows, "return at {i}");
                }
            }
        }
        // The guard's last check's fall-through is the dispatch's start.
        assert_eq!(guard[guard.len() - 2].jf, 1);
    }

    /// What a classic BPF program returns for one call, and how many
    /// instructions it ran: the subset of opcodes the filter uses.
    fn run(program: &[libc::sock_filter], data: &libc::seccomp_data) -> (u32, usize) {
        let word = |offset: u32| -> u32 {
            // SAFETY: seccomp_data is plain data; offsets are checked in bounds.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    (data as *const libc::seccomp_data).cast::<u8>(),
                    std::mem::size_of::<libc::seccomp_data>(),
                )
            };
            let at = offset as usize;
            u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap())
        };
        let (mut acc, mut pc, mut steps) = (0u32, 0usize, 0usize);
        loop {
            let f = program[pc];
            steps += 1;
            pc += 1;
            let taken = |cond: bool| usize::from(if cond { f.jt } else { f.jf });
            match f.code {
                LD_W_ABS => acc = word(f.k),
                RET => return (f.k, steps),
                JA => pc += f.k as usize,
                JEQ => pc += taken(acc == f.k),
                JGE => pc += taken(acc >= f.k),
                c if c == (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16 => {
                    pc += taken(acc > f.k)
                }
                c if c == (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16 => {
                    pc += taken(acc & f.k != 0)
                }
                c if c == (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16 => acc &= f.k,
                other => panic!("opcode {other:#x} at {}", pc - 1),
            }
        }
    }

    #[test]
    fn the_dispatch_changes_no_verdict_and_lets_unnamed_calls_through_quickly() {
        for sockets in [Sockets::None, Sockets::PrivateNet] {
            let rules = rules_program(Part::Whole(sockets)).unwrap();
            let combined = program(sockets).unwrap();
            let without: Vec<libc::sock_filter> =
                guard().iter().chain(&rules.program).map(to_libc).collect();
            let depth = guard().len() + 2 * (rules.named.len().ilog2() as usize + 1) + LEAF + 1;
            every_call(|data| {
                let (verdict, steps) = run(combined, data);
                assert_eq!(
                    verdict,
                    run(&without, data).0,
                    "call {} {:?}",
                    data.nr,
                    data.args
                );
                if data.arch == AUDIT_ARCH && !rules.named.contains(&(data.nr as u32)) {
                    assert!(steps <= depth, "call {}: {steps} steps", data.nr);
                }
            });
        }
    }

    /// Runs `check` on every call number (and an x32 one), each with
    /// arguments that trip each kind of rule (namespace flags, set-id modes
    /// with and without O_CREAT, socket families and types) and harmless
    /// ones, on our architecture and a foreign one.
    fn every_call(mut check: impl FnMut(&libc::seccomp_data)) {
        let samples: [[u64; 6]; 10] = [
            [0; 6],
            [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0],
            [libc::CLONE_NEWNS as u64, 0, 0, 0, 0, 0],
            [libc::CLONE_FILES as u64, 0, 0, 0, 0, 0],
            [0, 0o4755, 0o4755, 0o4755, 0, 0],
            [0, libc::O_CREAT as u64, libc::O_CREAT as u64, 0o2755, 0, 0],
            [libc::AF_INET as u64, libc::SOCK_RAW as u64, 0, 0, 0, 0],
            [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0],
            [libc::AF_UNIX as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0],
            [
                libc::AF_UNIX as u64,
                (libc::SOCK_DGRAM | libc::SOCK_CLOEXEC) as u64,
                0,
                0,
                0,
                0,
            ],
        ];
        for nr in (0..600).chain([libc::SYS_clone3 as i32, X32_BIT as i32 | 1]) {
            for args in samples {
                for arch in [AUDIT_ARCH, 0x4000_0003] {
                    check(&libc::seccomp_data {
                        nr,
                        arch,
                        instruction_pointer: 0,
                        args,
                    });
                }
            }
        }
    }

    /// What the kernel answers with `programs` attached (the last one
    /// attached first): every filter runs, the strictest action wins, and
    /// of equal ones the filter attached last.
    fn stacked(programs: &[&[libc::sock_filter]], data: &libc::seccomp_data) -> u32 {
        let action = |ret: u32| (ret & libc::SECCOMP_RET_ACTION_FULL) as i32;
        let mut ret = libc::SECCOMP_RET_ALLOW;
        for program in programs.iter().rev() {
            let got = run(program, data).0;
            if action(got) < action(ret) {
                ret = got;
            }
        }
        ret
    }

    #[test]
    fn ahead_then_closing_refuses_exactly_what_the_whole_program_does() {
        let ahead = ahead().unwrap();
        // The set-up's calls pass the launcher's program...
        for nr in SET_UP_CALLS {
            let data = libc::seccomp_data {
                nr: nr as i32,
                arch: AUDIT_ARCH,
                instruction_pointer: 0,
                args: [libc::AF_UNIX as u64, libc::CLONE_NEWNS as u64, 0, 0, 0, 0],
            };
            assert_eq!(run(ahead, &data).0, libc::SECCOMP_RET_ALLOW, "call {nr}");
        }
        // ...and with the closing program on top, every call and argument
        // gets the whole program's verdict.
        for sockets in [Sockets::None, Sockets::PrivateNet] {
            let whole = program(sockets).unwrap();
            let pair = [ahead, closing(sockets).unwrap()];
            assert!(pair[1].len() * 4 < whole.len(), "{}", pair[1].len());
            every_call(|data| {
                assert_eq!(
                    stacked(&pair, data),
                    stacked(&[whole], data),
                    "{sockets:?}: call {} {:?} arch {:#x}",
                    data.nr,
                    data.args,
                    data.arch
                );
            });
        }
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

    /// `socketpair(AF_UNIX, kind)`'s errno, 0 when it worked.
    fn socketpair_errno(kind: libc::c_int) -> i32 {
        let mut fds = [-1 as libc::c_int; 2];
        // SAFETY: a raw socketpair call into a live local array; the
        // descriptors it returns are closed here.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_socketpair,
                libc::AF_UNIX,
                kind,
                0,
                fds.as_mut_ptr(),
            )
        };
        for fd in fds.into_iter().filter(|&fd| fd >= 0) {
            // SAFETY: our own fresh descriptors.
            unsafe { libc::close(fd) };
        }
        errno_of(rc)
    }

    /// Attaches `programs` in order in a forked child and runs `checks`
    /// there; fails with the number of the first check that failed.
    fn checks_with<const N: usize>(programs: &[&[libc::sock_filter]], checks: fn() -> [bool; N]) {
        let progs: Vec<libc::sock_fprog> = programs
            .iter()
            .map(|program| libc::sock_fprog {
                len: program.len() as libc::c_ushort,
                filter: program.as_ptr().cast_mut(),
            })
            .collect();
        // SAFETY: the child makes only raw system calls on data prepared
        // before the fork, then exits without unwinding.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: as above; every pointer is to live, prepared data.
            unsafe {
                let installed = libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                    && progs.iter().all(|prog| {
                        libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, prog)
                            == 0
                    });
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

    /// Runs `checks` under the whole program for `sockets`, and under the
    /// launcher's program with the closing one on top.
    fn checks_under<const N: usize>(sockets: Sockets, checks: fn() -> [bool; N]) {
        checks_with(&[program(sockets).unwrap()], checks);
        checks_with(&[ahead().unwrap(), closing(sockets).unwrap()], checks);
    }

    /// The launcher's program alone lets its set-up's calls reach the
    /// kernel (which refuses these bad arguments itself).
    #[test]
    fn the_launchers_program_lets_the_set_up_calls_through() {
        checks_with(&[ahead().unwrap()], || {
            // SAFETY: raw system calls on constants and null pointers.
            unsafe {
                [
                    errno_of(libc::syscall(libc::SYS_setns, -1, 0)) == libc::EBADF,
                    errno_of(libc::syscall(libc::SYS_unshare, -1)) == libc::EINVAL,
                    errno_of(libc::syscall(libc::SYS_mount, 0, 0, 0, 0, 0)) != libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_open_tree, -1, 0, 0)) == libc::EFAULT,
                    errno_of(libc::syscall(libc::SYS_mount_setattr, -1, 0, 0, 0, 0))
                        == libc::EINVAL,
                    errno_of(libc::syscall(libc::SYS_move_mount, -1, 0, -1, 0, 0)) == libc::EFAULT,
                    socket_errno(libc::AF_UNIX, libc::SOCK_STREAM, 0) == 0,
                    errno_of(libc::syscall(libc::SYS_clone3, 0, 0)) == libc::ENOSYS,
                    errno_of(libc::syscall(libc::SYS_bpf, 0, 0, 0)) == libc::EPERM,
                ]
            }
        });
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
                    socketpair_errno(libc::SOCK_STREAM) == 0,
                    socketpair_errno(libc::SOCK_DGRAM | libc::SOCK_CLOEXEC) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_unshare, libc::CLONE_NEWNS)) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_setns, -1, 0)) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_mount, 0, 0, 0, 0, 0)) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_open_tree, -1, 0, 0)) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_mount_setattr, -1, 0, 0, 0, 0)) == libc::EPERM,
                    errno_of(libc::syscall(libc::SYS_move_mount, -1, 0, -1, 0, 0)) == libc::EPERM,
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

    /// In a private network namespace: inet and route netlink open; unix
    /// (but stream and packet `socketpair`), raw, packet, vsock and other
    /// netlink refused.
    #[test]
    fn private_net_sockets_are_inet_and_route_only() {
        checks_under(Sockets::PrivateNet, || {
            let nonblock = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
            [
                socket_errno(libc::AF_INET, nonblock, 0) == 0,
                socket_errno(libc::AF_INET6, libc::SOCK_DGRAM, 0) == 0,
                socket_errno(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE) == 0,
                socket_errno(libc::AF_UNIX, libc::SOCK_STREAM, 0) == libc::EPERM,
                socket_errno(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0)
                    == libc::EPERM,
                socket_errno(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0) == libc::EPERM,
                socketpair_errno(libc::SOCK_STREAM) == 0,
                socketpair_errno(libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC) == 0,
                socketpair_errno(libc::SOCK_DGRAM) == libc::EPERM,
                socketpair_errno(libc::SOCK_DGRAM | libc::SOCK_NONBLOCK) == libc::EPERM,
                socket_errno(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 1) == libc::EPERM,
                socket_errno(libc::AF_INET6, libc::SOCK_RAW, 58) == libc::EPERM,
                socket_errno(libc::AF_PACKET, libc::SOCK_RAW, 0) == libc::EPERM,
                socket_errno(libc::AF_VSOCK, libc::SOCK_STREAM, 0) == libc::EPERM,
                socket_errno(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_AUDIT) == libc::EPERM,
                socket_errno(libc::AF_ALG, libc::SOCK_SEQPACKET, 0) == libc::EPERM,
            ]
        });
    }
}

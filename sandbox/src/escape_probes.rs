//! The escapes the self-test tries, run in the sandboxed child in place of
//! `execve`: raw system calls only, on targets the self-test prepared in the
//! parent. The child reports the result; this module knows nothing above it.

use std::ffi::CString;
use std::os::fd::RawFd;

/// The probes' targets, prepared in the parent.
pub(crate) struct ProbeArgs {
    pub(crate) inside: CString,
    pub(crate) outside: CString,
    pub(crate) secret: CString,
    pub(crate) hook: CString,
    pub(crate) tcp: libc::sockaddr_in,
}

/// One escape (or, for the first, one allowed action) and its bit in the report.
pub(crate) const PROBES: [(i32, &str); 8] = [
    (
        1 << 0,
        "write inside the workspace failed (sandbox unusable)",
    ),
    (1 << 1, "write outside the workspace succeeded"),
    (1 << 2, "read of a secret path succeeded"),
    (1 << 3, "TCP connect to a loopback listener succeeded"),
    (1 << 4, "raw or unix socket creation succeeded"),
    (1 << 5, "signal to pid 1 succeeded"),
    (1 << 6, "io_uring_setup succeeded"),
    (1 << 7, "write into the workspace's .git/hooks succeeded"),
];

/// Runs in the sandboxed child: tries each escape with raw system calls and
/// returns a bit per unexpected result. `report_fd` is the one descriptor
/// above stdio that stays open.
pub(crate) fn run(args: &ProbeArgs, report_fd: RawFd) -> i32 {
    let mut bits = 0;
    // SAFETY: (whole block) raw system calls on stack data and on C strings
    // the parent keeps alive; descriptors opened here are closed here.
    unsafe {
        // The probes run before any exec, so the parent's descriptors (its
        // cached Landlock carve among them) are still open in this copy of
        // the table: close them, or the probes' own opens would hit the
        // command's RLIMIT_NOFILE (EMFILE) instead of the sandbox.
        let report = libc::c_uint::try_from(report_fd).unwrap_or(0);
        if report > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, report - 1, 0u32);
        }
        libc::syscall(
            libc::SYS_close_range,
            report.max(2) + 1,
            libc::c_uint::MAX,
            0u32,
        );
        let opened = |path: &CString, flags: i32| {
            let fd = libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o600);
            if fd >= 0 {
                libc::close(fd);
            }
            fd >= 0
        };
        let write = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        if !opened(&args.inside, write) {
            bits |= PROBES[0].0;
        }
        if opened(&args.outside, write) {
            bits |= PROBES[1].0;
        }
        if opened(&args.secret, libc::O_RDONLY) {
            bits |= PROBES[2].0;
        }
        let tcp = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if tcp >= 0 {
            let addr = (&args.tcp as *const libc::sockaddr_in).cast::<libc::sockaddr>();
            if libc::connect(tcp, addr, size_of::<libc::sockaddr_in>() as libc::socklen_t) == 0 {
                bits |= PROBES[3].0;
            }
            libc::close(tcp);
        }
        // A loopback of its own is allowed (TCP and UDP there reach nothing
        // of the host's, as the connect above shows); raw and unix sockets
        // are not.
        for (family, kind) in [
            (libc::AF_INET, libc::SOCK_RAW),
            (libc::AF_PACKET, libc::SOCK_RAW),
            (libc::AF_UNIX, libc::SOCK_STREAM),
        ] {
            let sock = libc::socket(family, kind | libc::SOCK_CLOEXEC, 0);
            if sock >= 0 {
                bits |= PROBES[4].0;
                libc::close(sock);
            }
        }
        if libc::kill(1, 0) == 0 {
            bits |= PROBES[5].0;
        }
        // struct io_uring_params is 120 bytes.
        let mut params = [0u64; 15];
        let ring = libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr());
        if ring >= 0 {
            bits |= PROBES[6].0;
            libc::close(ring as RawFd);
        }
        if opened(&args.hook, write) {
            bits |= PROBES[7].0;
        }
    }
    bits
}

//! A command's network namespace, made ahead: joining one (`setns`) costs
//! the child little, while making one costs a few hundred microseconds of
//! kernel work that would otherwise sit between a request and its command.
//! Made with the spares, off the request path, where the daemon may make
//! one directly (CAP_SYS_ADMIN); an unprivileged daemon's child makes its
//! own inside its user namespace.

use std::fs::File;
use std::os::fd::OwnedFd;

use crate::SandboxError;

/// A fresh network namespace with `lo` up, held by the returned descriptor.
/// Made on a short-lived thread of its own: namespaces are per thread, and
/// no other work may run in this one.
pub(crate) fn make() -> Result<OwnedFd, SandboxError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: unshare changes only this thread's namespace.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    return Err(SandboxError::last_os("making a network namespace"));
                }
                // SAFETY: raw calls on this thread's own namespace.
                unsafe { loopback_up() }.map_err(|errno| {
                    SandboxError::os("bringing lo up", std::io::Error::from_raw_os_error(errno))
                })?;
                File::open("/proc/thread-self/ns/net")
                    .map(OwnedFd::from)
                    .map_err(|e| SandboxError::os("holding a network namespace", e))
            })
            .join()
            .unwrap_or_else(|_| {
                Err(SandboxError::Invalid(String::from(
                    "the network namespace maker panicked",
                )))
            })
    })
}

/// Brings `lo` up in the calling thread's network namespace; the errno
/// when it could not. Raw system calls on stack data only, so the child
/// may call it between clone and exec.
///
/// # Safety
/// None beyond the calls' own: a socket and two ioctls on a local ifreq.
pub(crate) unsafe fn loopback_up() -> Result<(), i32> {
    // SAFETY: (whole block) a socket and two ioctls on a live local
    // ifreq; the socket is closed before returning.
    unsafe {
        let ctl = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if ctl < 0 {
            return Err(*libc::__errno_location());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        let up = libc::ioctl(ctl, libc::SIOCGIFFLAGS, &mut req) == 0 && {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(ctl, libc::SIOCSIFFLAGS, &req) == 0
        };
        let errno = *libc::__errno_location();
        libc::close(ctl);
        if up { Ok(()) } else { Err(errno) }
    }
}

//! A connection's peer process, pinned by a pidfd (`SO_PEERPIDFD`) and
//! examined at each request, not once at connect.
//!
//! The kernel names the process that called `connect()`. That process may
//! have exited since (its connection kept by its parent or passed on), and
//! its pid may name another process by now. A pidfd refers to the one
//! process that connected: a peer that has exited is refused, and what is
//! read about its pid (`/proc/<pid>/…`) counts only if the pidfd still
//! shows the process running after the reads (a pidfd polls readable once
//! its process has exited), since a pid is not reused while its process
//! is alive or a zombie.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

/// `SO_PEERPIDFD` (Linux 6.5): a pidfd of the socket's peer process. The
/// same number on every architecture praxisd builds for.
const SO_PEERPIDFD: libc::c_int = 77;

/// Why the peer process cannot be examined.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("the kernel names no peer process for this connection ({0})")]
    NoPidfd(io::Error),
    #[error("the process that connected has exited")]
    Exited,
    #[error("the peer process cannot be read: {0}")]
    Unreadable(io::Error),
}

/// The process that connected, pinned.
#[derive(Debug)]
pub struct PinnedPeer {
    pidfd: OwnedFd,
    /// Its pid as the kernel gave it with the connection (`SO_PEERCRED`),
    /// in our pid namespace.
    pid: i32,
}

/// The pinned process as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    /// Its cgroup v2 path (the `0::` line of `/proc/<pid>/cgroup`), when
    /// the host has a v2 hierarchy.
    pub cgroup: Option<PathBuf>,
}

impl PinnedPeer {
    /// Pins the peer process of the connected unix socket `socket`.
    pub fn of(socket: BorrowedFd<'_>) -> Result<PinnedPeer, PinError> {
        let mut fd: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `fd` and `len` are live locals of the size passed; the
        // kernel writes at most `len` bytes into `fd`.
        let got = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_PEERPIDFD,
                (&raw mut fd).cast(),
                &raw mut len,
            )
        };
        if got != 0 {
            let e = io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::ESRCH) {
                PinError::Exited
            } else {
                PinError::NoPidfd(e)
            });
        }
        // SAFETY: the kernel just installed `fd` for us and nothing else owns it.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let credentials = getsockopt(&socket, PeerCredentials)
            .map_err(|e| PinError::NoPidfd(io::Error::from(e)))?;
        // 0: a process in a pid namespace this one cannot see.
        match credentials.pid() {
            pid if pid > 0 => Ok(PinnedPeer { pidfd, pid }),
            _ => Err(PinError::Exited),
        }
    }

    /// Examines the process as it is now: `look` sees its pid and cgroup,
    /// and its answer counts only if the process still runs after it.
    pub fn examine<T>(&self, look: impl FnOnce(&Process) -> T) -> Result<T, PinError> {
        let pid = self.pid;
        let cgroup = read_proc(&format!("/proc/{pid}/cgroup")).map_err(|_| PinError::Exited)?;
        let answer = look(&Process {
            pid,
            cgroup: cgroup_v2(&cgroup),
        });
        self.running()?;
        Ok(answer)
    }

    /// Whether the pinned process (not whatever holds its pid) still runs:
    /// its pidfd is not readable, which it is once the process has exited.
    fn running(&self) -> Result<(), PinError> {
        let mut pfd = libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: poll on one valid pollfd, without waiting.
            match unsafe { libc::poll(&mut pfd, 1, 0) } {
                0 => return Ok(()),
                n if n > 0 => return Err(PinError::Exited),
                _ => match io::Error::last_os_error() {
                    e if e.kind() == io::ErrorKind::Interrupted => {}
                    e => return Err(PinError::Unreadable(e)),
                },
            }
        }
    }
}

/// A `/proc` file's text. These files report no size, so a plain read
/// grows its buffer from 32 bytes, one system call a step; they fit a page,
/// read whole at once (and a longer one is still read to its end).
pub(crate) fn read_proc(path: &str) -> io::Result<String> {
    let mut text = Vec::with_capacity(4096);
    std::fs::File::open(path)?.read_to_end(&mut text)?;
    String::from_utf8(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The cgroup v2 path of a `/proc/<pid>/cgroup` text.
pub fn cgroup_v2(text: &str) -> Option<PathBuf> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    // A peer that connected and exited is refused: that needs a second
    // process, so daemon/tests/pinned_peer.rs tries it (and
    // tests/tests/operator_channel.rs end to end).

    #[test]
    fn a_live_peer_is_examined_as_itself() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let pinned = PinnedPeer::of(ours.as_fd()).unwrap();
        let me = pinned.examine(Clone::clone).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert_eq!(me.cgroup, cgroup_v2(&own));
    }

    #[test]
    fn the_cgroup_v2_line_is_read_strictly() {
        assert_eq!(
            cgroup_v2("12:pids:/x\n0::/system.slice/praxisd-7/cmd-7-1\n"),
            Some(PathBuf::from("/system.slice/praxisd-7/cmd-7-1"))
        );
        assert_eq!(cgroup_v2("12:pids:/x\n"), None);
    }
}

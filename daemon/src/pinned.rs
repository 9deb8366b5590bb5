//! A connection's peer process, pinned by a pidfd (`SO_PEERPIDFD`) and
//! examined at each request, not once at connect.
//!
//! The kernel names the process that called `connect()` (for a socketpair
//! handed in through the door, the process that made it). That process may
//! have exited since (its connection kept by its parent or passed on), and
//! its pid may name another process by now. A pidfd refers to the one
//! process that connected: a peer that has exited is refused, and what is
//! read about its pid (`/proc/<pid>/…`) counts only if the pidfd still
//! shows the process running after the reads (a pidfd polls readable once
//! its process has exited), since a pid is not reused while its process
//! is alive or a zombie.
//!
//! The cgroup is asked of the pidfd (`PIDFD_GET_INFO`, Linux 6.13) as its
//! id, one system call; `/proc/<pid>/cgroup` is read (a few tens of
//! microseconds on every request) only for an id not seen before, and what
//! it names is kept for that id. A cgroup's id is never reused while the
//! host runs, and a cgroup never moves to another parent, so what an id
//! named once it names for good.

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, PoisonError};

use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

/// `SO_PEERPIDFD` (Linux 6.5): a pidfd of the socket's peer process. The
/// same number on every architecture praxisd builds for.
const SO_PEERPIDFD: libc::c_int = 77;

/// `PIDFD_GET_INFO` (Linux 6.13): `_IOWR(0xFF, 11, struct pidfd_info)`.
const PIDFD_GET_INFO: libc::c_ulong =
    (3 << 30) | ((PIDFD_INFO_SIZE as libc::c_ulong) << 16) | (0xFF << 8) | 11;

/// The first published size of `struct pidfd_info`.
const PIDFD_INFO_SIZE: usize = 64;

/// `PIDFD_INFO_CGROUPID`: the answer holds the process's cgroup v2 id.
const PIDFD_INFO_CGROUPID: u64 = 1 << 2;

/// Cgroup ids remembered at most; past that the memory starts over.
const KNOWN_CGROUPS: usize = 1024;

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
        let id = cgroup_id(&self.pidfd);
        let cgroup = match id.and_then(known_cgroup) {
            Some(known) => known,
            None => {
                let text =
                    read_proc(&format!("/proc/{pid}/cgroup")).map_err(|_| PinError::Exited)?;
                let cgroup = cgroup_v2(&text);
                // Kept only if the process was in that cgroup before the
                // read and after it: the text then names that id.
                if let Some(id) = id
                    && cgroup_id(&self.pidfd) == Some(id)
                {
                    remember_cgroup(id, cgroup.clone());
                }
                cgroup
            }
        };
        let answer = look(&Process { pid, cgroup });
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

/// The cgroup v2 id of the process behind `pidfd`; `None` where the kernel
/// cannot say (older than 6.13, no v2 hierarchy, or the process is gone).
fn cgroup_id(pidfd: &OwnedFd) -> Option<u64> {
    let mut info = [0u64; PIDFD_INFO_SIZE / 8];
    info[0] = PIDFD_INFO_CGROUPID;
    // SAFETY: the kernel reads the request mask from and writes at most
    // PIDFD_INFO_SIZE bytes into `info`, a live local of that size.
    let got = unsafe { libc::ioctl(pidfd.as_raw_fd(), PIDFD_GET_INFO, info.as_mut_ptr()) };
    (got == 0 && info[0] & PIDFD_INFO_CGROUPID != 0).then_some(info[1])
}

/// Which cgroups' v2 paths are known, by id.
static CGROUPS: LazyLock<Mutex<HashMap<u64, Option<PathBuf>>>> = LazyLock::new(Mutex::default);

/// The v2 path kept for cgroup `id` (`Some(None)`: the text had no v2 line).
fn known_cgroup(id: u64) -> Option<Option<PathBuf>> {
    let known = CGROUPS.lock().unwrap_or_else(PoisonError::into_inner);
    known.get(&id).cloned()
}

fn remember_cgroup(id: u64, cgroup: Option<PathBuf>) {
    let mut known = CGROUPS.lock().unwrap_or_else(PoisonError::into_inner);
    if known.len() >= KNOWN_CGROUPS {
        known.clear();
    }
    known.insert(id, cgroup);
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
    fn a_cgroup_read_once_is_known_by_its_id() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let pinned = PinnedPeer::of(ours.as_fd()).unwrap();
        let first = pinned.examine(Clone::clone).unwrap();
        // Kernels before 6.13 cannot name the id: every request reads /proc.
        let Some(id) = cgroup_id(&pinned.pidfd) else {
            return;
        };
        assert_eq!(known_cgroup(id), Some(first.cgroup.clone()));
        assert_eq!(pinned.examine(Clone::clone).unwrap(), first);
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

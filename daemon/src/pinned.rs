//! A connection's peer process, pinned by a pidfd (`SO_PEERPIDFD`) and
//! examined at each request, not once at connect.
//!
//! The kernel names the process that called `connect()`. That process may
//! have exited since (its connection kept by its parent or passed on), and
//! its pid may name another process by now. A pidfd refers to the one
//! process that connected: a peer that has exited is refused, and what is
//! read about its pid (`/proc/<pid>/…`) counts only if the pidfd still
//! shows the process alive after the reads, since a pid is not reused
//! while its process is alive or a zombie.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

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
        Ok(PinnedPeer { pidfd })
    }

    /// Examines the process as it is now: `look` sees its pid and cgroup,
    /// and its answer counts only if the process is still alive after it.
    pub fn examine<T>(&self, look: impl FnOnce(&Process) -> T) -> Result<T, PinError> {
        let fdinfo = read_proc(&format!("/proc/self/fdinfo/{}", self.pidfd.as_raw_fd()))
            .map_err(PinError::Unreadable)?;
        let pid = pid_of(&fdinfo).ok_or(PinError::Exited)?;
        let stat = read_proc(&format!("/proc/{pid}/stat")).map_err(|_| PinError::Exited)?;
        if !running(&stat) {
            return Err(PinError::Exited);
        }
        let cgroup = read_proc(&format!("/proc/{pid}/cgroup")).map_err(|_| PinError::Exited)?;
        let answer = look(&Process {
            pid,
            cgroup: cgroup_v2(&cgroup),
        });
        self.alive()?;
        Ok(answer)
    }

    /// Whether the pinned process (not whatever holds its pid) still runs.
    fn alive(&self) -> Result<(), PinError> {
        // SAFETY: pidfd_send_signal with signal 0 checks only; the pidfd is
        // ours and open, the info pointer may be null.
        let sent = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                0,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if sent == 0 {
            Ok(())
        } else {
            match io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::ESRCH) => Err(PinError::Exited),
                e => Err(PinError::Unreadable(e)),
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

/// The pid a pidfd's fdinfo names; none when the process has been reaped
/// (`Pid: -1`) or lives in a pid namespace this one cannot see (`0`).
fn pid_of(fdinfo: &str) -> Option<i32> {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("Pid:"))
        .and_then(|v| v.trim().parse().ok())
        .filter(|&pid| pid > 0)
}

/// Whether `/proc/<pid>/stat` shows a process that runs: not a zombie nor
/// dead (the state follows the parenthesised name, which may hold spaces).
fn running(stat: &str) -> bool {
    stat.rfind(')')
        .and_then(|end| stat[end + 1..].split_whitespace().next())
        .is_some_and(|state| !matches!(state, "Z" | "X" | "x"))
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
    // process, so tests/tests/operator_channel.rs tries it end to end.

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
    fn fdinfo_and_stat_are_read_strictly() {
        assert_eq!(
            pid_of("pos:\t0\nflags:\t02\nPid:\t42\nNSpid:\t42\n"),
            Some(42)
        );
        assert_eq!(pid_of("Pid:\t-1\n"), None);
        assert_eq!(pid_of("Pid:\t0\n"), None);
        assert_eq!(pid_of("flags:\t02\n"), None);
        assert!(running("7 (a) b) S 1 7"));
        assert!(!running("7 (sh) Z 1 7"));
        assert!(!running("garbage"));
        assert_eq!(
            cgroup_v2("12:pids:/x\n0::/system.slice/praxisd-7/cmd-7-1\n"),
            Some(PathBuf::from("/system.slice/praxisd-7/cmd-7-1"))
        );
        assert_eq!(cgroup_v2("12:pids:/x\n"), None);
    }
}

//! The door: a datagram socket beside the request socket, through which a
//! client hands praxisd a connection it made itself.
//!
//! A connection to the request socket wakes praxisd twice: at `connect()`,
//! before the client has sent anything, and again when the request comes.
//! On a host that runs the client and praxisd on one core, each wake is a
//! pair of context switches on the request's path. Through the door the
//! client makes a stream socketpair, writes its first frame into its own
//! end, and sends the other end here in one datagram (`SCM_RIGHTS`): one
//! wake, and the request is already waiting on the connection. From there
//! the connection is served exactly as an accepted one.
//!
//! `praxis-run` knocks as soon as it starts, before its request is built
//! (a hook still reads its event, a command opens its directory): praxisd
//! takes the connection in, checks it and waits on it for the first frame
//! while the client works, so that work is off the request's path. The
//! frame then wakes praxisd once more, as a connection's request would.
//!
//! What the door takes: exactly one descriptor, a connected unix stream
//! socket, made by the process that sent it. The kernel vouches for the sender
//! (`SCM_CREDENTIALS`, asked with `SO_PASSCRED`) and for the maker of the
//! pair (`SO_PEERCRED`, which a socketpair records for the process that
//! made it); the two must be the same process. So a connection someone
//! else made (to another service, or to praxisd's own socket, whose peer
//! is praxisd) is never served under its maker's name. Anything else is
//! dropped: the datagram carries no way to answer, and a client of ours
//! that is refused reads its connection closed and holds.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use nix::sys::socket::{UnixAddr, getpeername, getsockname, getsockopt, setsockopt, sockopt};
use tokio::io::Interest;
use tokio::net::{UnixDatagram, UnixStream};

use crate::conn::{self, Received};

/// Why a datagram at the door was not taken.
#[derive(Debug, thiserror::Error)]
pub enum DoorError {
    #[error("the door socket failed: {0}")]
    Io(#[from] io::Error),
    #[error("a datagram came with {0} descriptors, not one")]
    Descriptors(usize),
    #[error("a datagram came without the kernel's word on its sender")]
    NoSender,
    #[error("the descriptor is not a connected unix stream socket")]
    NotAStream,
    #[error("the connection was made by pid {made_by:?}, not by its sender, pid {sent_by}")]
    NotItsOwn { made_by: Option<i32>, sent_by: i32 },
}

/// The bound door.
pub struct Door {
    socket: UnixDatagram,
}

impl Door {
    /// Binds the door at `path`, asking the kernel to name each sender.
    pub fn bind(path: &Path) -> io::Result<Door> {
        let socket = UnixDatagram::bind(path)?;
        setsockopt(&socket, sockopt::PassCred, &true).map_err(io::Error::from)?;
        Ok(Door { socket })
    }

    /// The next connection handed in. `Err` is one datagram refused (or
    /// the socket failing); the door stays open.
    pub async fn receive(&self) -> Result<UnixStream, DoorError> {
        let datagram = loop {
            self.socket.readable().await?;
            let fd = self.socket.as_raw_fd();
            match self.socket.try_io(Interest::READABLE, || receive_one(fd)) {
                Ok(got) => break got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e.into()),
            }
        };
        let count = datagram.fds.len();
        let passed = match <[OwnedFd; 1]>::try_from(datagram.fds) {
            Ok([passed]) if !datagram.truncated => passed,
            _ => return Err(DoorError::Descriptors(count)),
        };
        let sent_by = datagram.sender.ok_or(DoorError::NoSender)?;
        own_stream(&passed, sent_by)?;
        let stream = std::os::unix::net::UnixStream::from(passed);
        stream.set_nonblocking(true)?;
        Ok(UnixStream::from_std(stream)?)
    }
}

/// Checks that `passed` is a connected unix stream socket made by the
/// process that sent it (`sent_by`, as the kernel named it).
fn own_stream(passed: &OwnedFd, sent_by: libc::ucred) -> Result<(), DoorError> {
    let raw = passed.as_fd().as_raw_fd();
    // A listening socket also names its maker: it must have a peer.
    let stream = getsockopt(passed, sockopt::SockType)
        .is_ok_and(|kind| kind == nix::sys::socket::SockType::Stream)
        && getsockname::<UnixAddr>(raw).is_ok()
        && getpeername::<UnixAddr>(raw).is_ok();
    if !stream {
        return Err(DoorError::NotAStream);
    }
    // A socket whose maker the kernel cannot name is refused like another's.
    let Ok(maker) = getsockopt(passed, sockopt::PeerCredentials) else {
        return Err(DoorError::NotItsOwn {
            made_by: None,
            sent_by: sent_by.pid,
        });
    };
    if maker.pid() != sent_by.pid || maker.uid() != sent_by.uid {
        return Err(DoorError::NotItsOwn {
            made_by: (maker.pid() > 0).then_some(maker.pid()),
            sent_by: sent_by.pid,
        });
    }
    Ok(())
}

/// One datagram: its byte means nothing.
fn receive_one(fd: RawFd) -> io::Result<Received> {
    conn::receive(
        fd,
        &mut [0u8; 1],
        &mut nix::cmsg_space!([RawFd; 2], libc::ucred),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us() -> libc::ucred {
        libc::ucred {
            pid: std::process::id() as i32,
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
        }
    }

    #[test]
    fn only_a_connected_stream_its_sender_made_passes() {
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(own_stream(&OwnedFd::from(ours), us()).is_ok());
        // The same pair, said to come from another process.
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let other = libc::ucred { pid: 1, ..us() };
        assert!(matches!(
            own_stream(&OwnedFd::from(ours), other),
            Err(DoorError::NotItsOwn { .. })
        ));
        // A listener we made names us too, but has no peer.
        let dir = tempfile::tempdir().unwrap();
        let listener = std::os::unix::net::UnixListener::bind(dir.path().join("l")).unwrap();
        assert!(matches!(
            own_stream(&OwnedFd::from(listener), us()),
            Err(DoorError::NotAStream)
        ));
        // Datagram pairs and pipes are not streams.
        let (datagram, _) = std::os::unix::net::UnixDatagram::pair().unwrap();
        assert!(matches!(
            own_stream(&OwnedFd::from(datagram), us()),
            Err(DoorError::NotAStream)
        ));
        let (read_end, _) = std::io::pipe().unwrap();
        assert!(matches!(
            own_stream(&OwnedFd::from(read_end), us()),
            Err(DoorError::NotAStream)
        ));
    }
}

//! One client connection: the first frame with the descriptors passed beside
//! it (`SCM_RIGHTS`), then framed reads and writes.

use std::io::{self, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
use praxis_proto::frame::{Frame, FrameError, HEADER_LEN, Header};
use praxis_proto::{ErrorFrame, ServerMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Most descriptors a client may pass (stdin and its cwd).
pub const MAX_FDS: usize = 2;

/// The peer as the kernel reports it (`SO_PEERCRED`), not as it claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub pid: Option<i32>,
    /// Whether its process was inside a command praxis runs when its
    /// request arrived, as the process pinned by its pidfd was then;
    /// `None` until that is examined, which counts as inside where it
    /// matters.
    pub inside: Option<bool>,
}

impl Peer {
    pub fn of(stream: &UnixStream) -> io::Result<Peer> {
        let cred = stream.peer_cred()?;
        Ok(Peer {
            uid: cred.uid(),
            gid: cred.gid(),
            pid: cred.pid(),
            inside: None,
        })
    }
}

/// Receives the frame header with `recvmsg`, keeping any descriptors that
/// arrive with it, then the payload with plain reads. Descriptors come
/// close-on-exec so no child can inherit them by accident.
pub async fn read_first(stream: &mut UnixStream) -> Result<(Frame, Vec<OwnedFd>), FrameError> {
    let fd = stream.as_raw_fd();
    let mut head = [0u8; HEADER_LEN];
    let mut filled = 0;
    let mut fds: Vec<OwnedFd> = Vec::new();
    while filled < HEADER_LEN {
        let got =
            read_now_or_when_ready(stream, || recv_with_fds(fd, &mut head[filled..], &mut fds))
                .await;
        match got {
            Ok(0) if filled == 0 => return Err(FrameError::Closed),
            Ok(0) => return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => filled += n,
            Err(e) => return Err(e.into()),
        }
        if fds.len() > MAX_FDS {
            return Err(FrameError::Malformed(format!(
                "{} descriptors passed, at most {MAX_FDS}",
                fds.len()
            )));
        }
    }
    let header = Header::parse(head)?;
    let mut payload = vec![0u8; header.len];
    let mut filled = 0;
    while filled < payload.len() {
        let got = read_now_or_when_ready(stream, || {
            nix::sys::socket::recv(fd, &mut payload[filled..], MsgFlags::MSG_DONTWAIT)
                .map_err(io::Error::from)
        })
        .await?;
        if got == 0 {
            return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        filled += got;
    }
    Ok((Frame::decode(header, payload), fds))
}

/// Reads with `read`, which never blocks: at once first, since a client
/// writes its request before it waits for the answer, and only when
/// nothing is there yet through the runtime's readiness. For a connection
/// just taken in, that readiness starts unknown: asked first, it would
/// send every request through one more turn of the poller.
async fn read_now_or_when_ready(
    stream: &UnixStream,
    mut read: impl FnMut() -> io::Result<usize>,
) -> io::Result<usize> {
    match read() {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => loop {
            stream.readable().await?;
            match stream.try_io(Interest::READABLE, &mut read) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                got => return got,
            }
        },
        got => got,
    }
}

fn recv_with_fds(fd: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
    let got = receive(fd, buf, &mut nix::cmsg_space!([RawFd; MAX_FDS]))?;
    fds.extend(got.fds);
    if got.truncated {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "too many descriptors passed",
        ));
    }
    Ok(got.bytes)
}

/// What one `recvmsg` brought.
pub struct Received {
    pub bytes: usize,
    /// The descriptors passed beside it, close-on-exec.
    pub fds: Vec<OwnedFd>,
    /// Its sender as the kernel names it, on a socket that asks
    /// (`SO_PASSCRED`).
    pub sender: Option<libc::ucred>,
    /// More descriptors came than `space` held; those were closed.
    pub truncated: bool,
}

/// One non-blocking `recvmsg` into `buf`, with room for control messages
/// in `space` (`nix::cmsg_space!`).
pub fn receive(fd: RawFd, buf: &mut [u8], space: &mut [u8]) -> io::Result<Received> {
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(
        fd,
        &mut iov,
        Some(space),
        MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT,
    )
    .map_err(io::Error::from)?;
    let mut received = Received {
        bytes: msg.bytes,
        fds: Vec::new(),
        sender: None,
        truncated: msg.flags.contains(MsgFlags::MSG_CTRUNC),
    };
    for cmsg in msg.cmsgs().map_err(io::Error::from)? {
        match cmsg {
            ControlMessageOwned::ScmRights(fds) => {
                for raw in fds {
                    // SAFETY: the kernel just installed `raw` in our table
                    // for this message; nothing else owns it, so we take
                    // ownership once.
                    received.fds.push(unsafe { OwnedFd::from_raw_fd(raw) });
                }
            }
            ControlMessageOwned::ScmCredentials(credentials) => {
                received.sender = Some(libc::ucred {
                    pid: credentials.pid(),
                    uid: credentials.uid(),
                    gid: credentials.gid(),
                });
            }
            _ => {}
        }
    }
    Ok(received)
}

/// Reads one frame from the read half of a connection.
pub async fn read_frame(reader: &mut OwnedReadHalf) -> Result<Frame, FrameError> {
    let mut head = [0u8; HEADER_LEN];
    match reader.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let header = Header::parse(head)?;
    let mut payload = vec![0u8; header.len];
    reader.read_exact(&mut payload).await?;
    Ok(Frame::decode(header, payload))
}

/// The writing side of a connection.
pub struct Writer {
    inner: OwnedWriteHalf,
}

impl Writer {
    pub fn new(inner: OwnedWriteHalf) -> Writer {
        Writer { inner }
    }

    pub async fn frame(&mut self, frame: &Frame) -> Result<(), FrameError> {
        self.inner.write_all(&frame.encode()?).await?;
        Ok(())
    }

    pub async fn send(&mut self, msg: &ServerMsg) -> Result<(), FrameError> {
        self.frame(&Frame::message(msg)?).await
    }

    /// Ends our side of the connection and waits, at most `within`, for
    /// the client to hang up too (its socket reads as closed).
    pub async fn close_and_outwait(mut self, within: Duration) {
        let _ = self.inner.shutdown().await;
        let socket: &UnixStream = self.inner.as_ref();
        let _ = tokio::time::timeout(within, hung_up(socket)).await;
    }
}

/// Returns once the peer has closed its end. Readiness alone does not
/// tell: it stays set from the request's own bytes until a read finds
/// nothing more, so each wake reads (what a client sends now is of no use).
async fn hung_up(socket: &UnixStream) {
    let mut byte = [0u8; 1];
    loop {
        if socket.ready(Interest::READABLE).await.is_err() {
            return;
        }
        match socket.try_read(&mut byte) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// Refuses a connection at the protocol level, best effort: the peer may be gone.
pub async fn refuse(stream: &mut UnixStream, reason: String) {
    if let Ok(bytes) =
        Frame::message(&ServerMsg::Error(ErrorFrame { reason })).and_then(|f| f.encode())
    {
        let _ = stream.write_all(&bytes).await;
    }
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request's bytes leave the socket readable until a read finds
    /// nothing more; closing must still wait for the client itself.
    #[test]
    fn closing_waits_for_the_client_after_its_request_was_read() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (mut client, server) = UnixStream::pair().unwrap();
            client.write_all(b"frame").await.unwrap();
            let (mut reader, writer) = server.into_split();
            let mut request = [0u8; 5];
            reader.read_exact(&mut request).await.unwrap();
            let closing =
                tokio::spawn(Writer::new(writer).close_and_outwait(Duration::from_secs(60)));
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(
                !closing.is_finished(),
                "returned with the client still there"
            );
            let mut rest = Vec::new();
            client.read_to_end(&mut rest).await.unwrap();
            assert!(rest.is_empty(), "our side was not shut");
            drop(client);
            tokio::time::timeout(Duration::from_secs(10), closing)
                .await
                .expect("still waiting after the client hung up")
                .unwrap();
        });
    }
}

//! The client side of the daemon protocol: finding (and in user mode
//! starting) praxisd, sending a request with descriptors, reading replies.

use std::fs;
use std::io::{self, IoSlice, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{ControlMessage, MsgFlags, UnixAddr, sendmsg};
use praxis_proto::frame::{Frame, FrameError, read_frame};
use praxis_proto::{ClientMsg, Layout, Mode, OperatorReply, OperatorRequest, ServerMsg};

/// How long a client waits for an auto-started daemon's socket.
const AUTOSTART_WAIT: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("praxisd is not reachable at {socket}: {why}")]
    Unreachable { socket: String, why: String },
    #[error("cannot start praxisd: {0}")]
    Autostart(String),
    #[error("protocol error: {0}")]
    Protocol(#[from] FrameError),
    #[error("praxisd refused the request: {0}")]
    Refused(String),
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("praxisd did not answer within {} s (set {} to change the deadline)", tenths(*.0), crate::deadline::ENV)]
    Deadline(Duration),
    #[error("outcome unknown: praxisd ended after the command started ({0})")]
    OutcomeUnknown(String),
}

/// Seconds to a tenth: a wait cut to what was left of a budget reads as
/// the budget it was cut from.
fn tenths(wait: Duration) -> f64 {
    (wait.as_secs_f64() * 10.0).round() / 10.0
}

/// The daemon's executable: next to this one, else on `PATH`.
fn praxisd_path() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("praxisd")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("praxisd"))
}

/// Connects to the daemon of the detected mode. In user mode a missing
/// daemon is started (once, under a lock, however many clients race); in
/// system mode a missing daemon is an error, never an auto-start.
pub fn connect() -> Result<UnixStream, ClientError> {
    let layout = Layout::detect();
    let unreachable = |e: io::Error| ClientError::Unreachable {
        socket: layout.socket.display().to_string(),
        why: e.to_string(),
    };
    match UnixStream::connect(&layout.socket) {
        Ok(stream) => return Ok(stream),
        Err(e) if layout.mode == Mode::System => return Err(unreachable(e)),
        Err(_) => {}
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&layout.runtime_dir)
        .map_err(|e| ClientError::Autostart(format!("{}: {e}", layout.runtime_dir.display())))?;
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(layout.autostart_lock())
        .map_err(|e| {
            ClientError::Autostart(format!("{}: {e}", layout.autostart_lock().display()))
        })?;
    let _guard = Flock::lock(lock, FlockArg::LockExclusive).map_err(|(_, e)| {
        ClientError::Autostart(format!("lock {}: {e}", layout.autostart_lock().display()))
    })?;
    // Another client may have started it while we waited for the lock.
    if let Ok(stream) = UnixStream::connect(&layout.socket) {
        return Ok(stream);
    }
    start_daemon()?;
    let deadline = Instant::now() + AUTOSTART_WAIT;
    loop {
        match UnixStream::connect(&layout.socket) {
            Ok(stream) => return Ok(stream),
            Err(e) if Instant::now() >= deadline => return Err(unreachable(e)),
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Starts `praxisd --user --detach`.
///
/// This is not a host command of an agent: it starts our own daemon, which
/// holds the authority. It is the one process start outside the sandbox
/// crate, and the one-spawn-site test allows exactly this file for it. The
/// daemon leaves our session itself (`--detach` calls `setsid`) and gets no
/// descriptor of ours but /dev/null, so it outlives this client cleanly.
fn start_daemon() -> Result<(), ClientError> {
    std::process::Command::new(praxisd_path())
        .args(["--user", "--detach"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map(drop)
        .map_err(|e| ClientError::Autostart(format!("{}: {e}", praxisd_path().display())))
}

/// Sends the first frame of a connection, with `fds` passed beside it.
pub fn send_first(stream: &UnixStream, msg: &ClientMsg, fds: &[RawFd]) -> Result<(), ClientError> {
    send_encoded(stream, &Frame::message(msg)?.encode()?, fds)
}

/// Sends an encoded first frame, with `fds` passed beside it.
fn send_encoded(stream: &UnixStream, bytes: &[u8], fds: &[RawFd]) -> Result<(), ClientError> {
    let sent = send_with_fds(stream, bytes, fds)?;
    (&*stream).write_all(&bytes[sent..])?;
    Ok(())
}

/// Sends what of `bytes` the socket takes in one go, with `fds` passed
/// beside its first byte. Returns how many bytes went.
fn send_with_fds(stream: &UnixStream, bytes: &[u8], fds: &[RawFd]) -> Result<usize, ClientError> {
    let cmsgs = if fds.is_empty() {
        Vec::new()
    } else {
        vec![ControlMessage::ScmRights(fds)]
    };
    loop {
        match sendmsg::<()>(
            stream.as_raw_fd(),
            &[IoSlice::new(bytes)],
            &cmsgs,
            MsgFlags::empty(),
            None,
        ) {
            Ok(n) => return Ok(n),
            Err(nix::Error::EINTR) => {}
            Err(e) => return Err(ClientError::Io(e.into())),
        }
    }
}

/// Descriptors a request handed praxisd, or made to, that the client keeps
/// open until praxisd has answered. While a unix socket is in flight (sent
/// with `SCM_RIGHTS`, not yet received), closing any unix socket makes the
/// kernel queue its collector of unreachable sockets: a worker woken on the
/// request's path, beside the client. Once praxisd answers, it has taken
/// everything sent, and closing these costs nothing.
#[must_use = "dropping it closes the descriptors while praxisd may not have taken them"]
pub struct InFlight(Vec<OwnedFd>);

impl InFlight {
    /// Keeps `fd` open until this is dropped.
    pub fn keep(&mut self, fd: impl Into<OwnedFd>) {
        self.0.push(fd.into());
    }
}

/// Opens a request to praxisd and sends its first frame, with `fds`
/// passed beside it: through praxisd's door when it has one, else by
/// connecting (starting a user-mode daemon if needed). Every later read
/// and write is bounded by what is left of the decision deadline.
pub fn open_request(msg: &ClientMsg, fds: &[RawFd]) -> Result<(UnixStream, InFlight), ClientError> {
    let bytes = Frame::message(msg)?.encode()?;
    let early = EARLY.lock().unwrap_or_else(PoisonError::into_inner).take();
    // praxisd writes nothing on a connection before its request, but a
    // refusal when it gives up on one left without a request past its idle
    // limit (a hook's event slow to come): then the request goes in as it
    // would have without the early knock.
    let (stream, in_flight) = match early {
        Some((stream, in_flight)) if !answered_already(&stream) => (stream, in_flight),
        given_up => {
            // Closed before the next knock, not while its end is in flight.
            drop(given_up);
            if let Some(opened) = through_door(&Layout::detect(), &bytes, fds)? {
                return Ok(opened);
            }
            (connect()?, InFlight(Vec::new()))
        }
    };
    set_deadline(&stream, Some(crate::deadline::decision_left()))?;
    send_encoded(&stream, &bytes, fds)?;
    Ok((stream, in_flight))
}

/// Reads praxisd's first reply to a request, then closes what the request
/// kept in flight: by its answer praxisd has taken everything sent.
pub fn recv_answer(stream: &UnixStream, in_flight: InFlight) -> Result<Frame, ClientError> {
    let reply = recv(stream);
    drop(in_flight);
    reply
}

/// Whether praxisd has written to (or closed) `stream` already.
fn answered_already(stream: &UnixStream) -> bool {
    let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
    !matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
}

/// A connection handed praxisd before its request was built.
static EARLY: Mutex<Option<(UnixStream, InFlight)>> = Mutex::new(None);

/// Hands praxisd a connection through its door now, before the request is
/// built, and keeps it for the request [`open_request`] sends next. praxisd
/// takes the connection in (its wake, the checks on who made it, a task
/// for it) while this process still reads its input and builds the
/// request; the request then finds it waiting. Without a door nothing
/// happens, and the request connects as it would have.
pub fn knock_early() {
    if let Ok(Some(opened)) = through_door(&Layout::detect(), &[], &[]) {
        *EARLY.lock().unwrap_or_else(PoisonError::into_inner) = Some(opened);
    }
}

/// Hands praxisd a connection through its door: one end of a socketpair
/// made here, with the first frame written into it before the other end
/// is sent, so that praxisd, woken once, finds the request waiting.
/// `None` when the door takes nothing (there is none, an older praxisd,
/// a full queue): nothing reached praxisd, and the caller connects.
fn through_door(
    layout: &Layout,
    first: &[u8],
    fds: &[RawFd],
) -> Result<Option<(UnixStream, InFlight)>, ClientError> {
    let (Ok(door), Ok(address)) = (UnixDatagram::unbound(), UnixAddr::new(&layout.door())) else {
        return Ok(None);
    };
    let (ours, theirs) = UnixStream::pair()?;
    set_deadline(&ours, Some(crate::deadline::decision_left()))?;
    // A first frame larger than the pair holds is finished after the knock,
    // once praxisd reads.
    ours.set_nonblocking(true)?;
    let sent = if first.is_empty() {
        0
    } else {
        send_with_fds(&ours, first, fds)?
    };
    let knock = sendmsg(
        door.as_raw_fd(),
        &[IoSlice::new(&[0])],
        &[ControlMessage::ScmRights(&[theirs.as_raw_fd()])],
        MsgFlags::MSG_DONTWAIT,
        Some(&address),
    );
    if knock.is_err() {
        return Ok(None);
    }
    // Our copy of their end, and the door socket, are unix sockets: closed
    // once praxisd has answered, not while their end is in flight.
    let in_flight = InFlight(vec![theirs.into(), door.into()]);
    ours.set_nonblocking(false)?;
    (&ours).write_all(&first[sent..])?;
    Ok(Some((ours, in_flight)))
}

/// Sends a later frame (a cancel).
pub fn send(stream: &UnixStream, msg: &ClientMsg) -> Result<(), ClientError> {
    (&*stream).write_all(&Frame::message(msg)?.encode()?)?;
    Ok(())
}

/// Bounds every later read and write on `stream` by `limit` (`None`: no bound).
pub fn set_deadline(stream: &UnixStream, limit: Option<Duration>) -> Result<(), ClientError> {
    stream.set_read_timeout(limit)?;
    stream.set_write_timeout(limit)?;
    Ok(())
}

/// Reads the next frame from the daemon; a read that outlives the stream's
/// deadline is [`ClientError::Deadline`].
pub fn recv(stream: &UnixStream) -> Result<Frame, ClientError> {
    if let Some(limit) = stream.read_timeout()? {
        await_frame(stream, limit)?;
    }
    read_frame(&mut &*stream).map_err(|e| match e {
        FrameError::Io(io)
            if matches!(
                io.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            ClientError::Deadline(stream.read_timeout().ok().flatten().unwrap_or_default())
        }
        other => ClientError::Protocol(other),
    })
}

/// Waits until the daemon starts a frame or `limit` passes. The socket's
/// own timeout stays as the bound on the rest of the frame, but it ends on
/// the kernel's coarse timer wheel (a 25 s timeout can end 2 s late, past a
/// hook's watchdog); poll(2) ends on time.
fn await_frame(stream: &UnixStream, limit: Duration) -> Result<(), ClientError> {
    let until = Instant::now() + limit;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        // Rounded up to a whole millisecond, so the wait is never cut short.
        let millis = left.as_micros().div_ceil(1000);
        let timeout = PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) => return Err(ClientError::Deadline(limit)),
            Ok(_) => return Ok(()),
            Err(nix::Error::EINTR) => {}
            Err(e) => return Err(ClientError::Io(e.into())),
        }
    }
}

/// Sends an operator request and hands each reply to `each` until the last
/// (anything but a batch of events). Returns the last reply.
pub fn operator(
    request: OperatorRequest,
    mut each: impl FnMut(&OperatorReply),
) -> Result<OperatorReply, ClientError> {
    // In user mode an operator needs to know nothing about the daemon: it is
    // started like for praxis-run, except to be stopped.
    let stream = match request {
        OperatorRequest::Stop => connect_existing()?,
        _ => connect()?,
    };
    set_deadline(&stream, Some(crate::deadline::decision()))?;
    send_first(&stream, &ClientMsg::Operator { request }, &[])?;
    loop {
        match recv(&stream)?.parse_message::<ServerMsg>()? {
            ServerMsg::Operator {
                reply: reply @ (OperatorReply::Events { .. } | OperatorReply::PrivateTmp { .. }),
            } => each(&reply),
            ServerMsg::Operator { reply } => {
                each(&reply);
                return Ok(reply);
            }
            ServerMsg::Error(e) => return Err(ClientError::Refused(e.reason)),
            ServerMsg::Decision(_) | ServerMsg::Exit(_) => {
                return Err(ClientError::Protocol(FrameError::Unexpected(
                    "exec reply to an operator request",
                )));
            }
        }
    }
}

/// Connects without auto-starting: operator commands talk to a running daemon.
pub fn connect_existing() -> Result<UnixStream, ClientError> {
    let layout = Layout::detect();
    UnixStream::connect(&layout.socket).map_err(|e| ClientError::Unreachable {
        socket: layout.socket.display().to_string(),
        why: e.to_string(),
    })
}

/// Records a HOLD this client gave without praxisd deciding (unreachable,
/// silent, refusing the connection) where an operator will see it: the spill
/// journal beside the audit store, which praxisd moves into the chain; in
/// system mode, where the journal is not ours to write, the system log.
pub fn spill_refusal(reason: &str, cwd: &str, runtime: Option<&str>, session: Option<&str>) {
    let layout = Layout::detect();
    let event = serde_json::json!({
        "kind": "decided",
        "decision": "HOLD",
        "reason": format!("client-side HOLD: {reason}"),
        "cwd": cwd,
        "runtime": runtime,
        "session": session,
        "uid": nix::unistd::getuid().as_raw(),
        "pid": std::process::id(),
    });
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let line = serde_json::json!({ "at": at, "event": event }).to_string();
    let journal = (layout.mode == Mode::User)
        .then(|| {
            let _ = fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&layout.state_dir);
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(layout.audit_spill())
                .ok()
        })
        .flatten()
        .and_then(|f| Flock::lock(f, FlockArg::LockExclusive).ok());
    match journal {
        Some(mut file) => {
            let _ = writeln!(file, "{line}").and_then(|()| file.sync_data());
        }
        None => syslog(&line),
    }
}

/// One line to the system log (LOG_AUTHPRIV | LOG_WARNING).
fn syslog(line: &str) {
    let Ok(text) = std::ffi::CString::new(line.replace('\0', " ")) else {
        return;
    };
    // SAFETY: a NUL-terminated format of "%s" and one C string argument, both
    // alive for the call; syslog copies what it needs.
    unsafe {
        libc::syslog(
            libc::LOG_AUTHPRIV | libc::LOG_WARNING,
            c"praxis-run: %s".as_ptr(),
            text.as_ptr(),
        )
    };
}

/// Standard input as a descriptor to pass, or /dev/null when it is closed.
pub fn stdin_fd() -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: fd 0 is only borrowed for the duration of the dup below.
    let stdin = unsafe { BorrowedFd::borrow_raw(0) };
    match stdin.try_clone_to_owned() {
        Ok(fd) => Ok(fd),
        Err(_) => Ok(fs::File::open("/dev/null")?.into()),
    }
}

/// Runs `praxisd verify`, the daemon's offline, read-only check of the audit
/// database, when no daemon answers; returns its exit status.
///
/// Like the auto-start, this starts our own binary, not an agent's command.
pub fn verify_offline() -> i32 {
    match std::process::Command::new(praxisd_path())
        .arg("verify")
        .status()
    {
        Ok(status) => status.code().unwrap_or(125),
        Err(e) => {
            eprintln!(
                "praxis: no daemon answers and {} cannot run: {e}",
                praxisd_path().display()
            );
            125
        }
    }
}

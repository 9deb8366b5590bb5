//! The framing codec: encode/decode plus blocking read/write helpers. The
//! daemon wraps [`Header::parse`] and [`Frame::decode`] around its async reads.

use std::io::{self, Read, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Protocol version carried in every frame header.
pub const PROTOCOL_VERSION: u8 = 1;
/// Header bytes: `u32` big-endian payload length, version, kind.
pub const HEADER_LEN: usize = 6;
/// Largest payload accepted in either direction (requests included).
pub const MAX_FRAME: usize = 1 << 20;
/// Largest output chunk a sender puts in one frame.
pub const MAX_OUTPUT_CHUNK: usize = 64 * 1024;

const KIND_MESSAGE: u8 = 1;
const KIND_STDOUT: u8 = 2;
const KIND_STDERR: u8 = 3;

/// Why a frame was refused.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("connection closed")]
    Closed,
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("frame of {0} bytes exceeds the {MAX_FRAME}-byte cap")]
    TooLarge(usize),
    #[error("protocol version {0} is not supported (this side speaks {PROTOCOL_VERSION})")]
    Version(u8),
    #[error("unknown frame kind {0}")]
    Kind(u8),
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("unexpected frame: {0}")]
    Unexpected(&'static str),
}

/// One unit on the wire: a JSON message or a chunk of a command's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    Message(Vec<u8>),
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
}

/// A parsed, validated frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub len: usize,
    kind: u8,
}

impl Header {
    /// Validates version, kind and size before any payload is read, so an
    /// oversized or foreign frame costs nothing to refuse.
    pub fn parse(bytes: [u8; HEADER_LEN]) -> Result<Header, FrameError> {
        let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if bytes[4] != PROTOCOL_VERSION {
            return Err(FrameError::Version(bytes[4]));
        }
        if !matches!(bytes[5], KIND_MESSAGE | KIND_STDOUT | KIND_STDERR) {
            return Err(FrameError::Kind(bytes[5]));
        }
        if len > MAX_FRAME {
            return Err(FrameError::TooLarge(len));
        }
        Ok(Header {
            len,
            kind: bytes[5],
        })
    }
}

impl Frame {
    /// A JSON message frame.
    pub fn message<T: Serialize>(msg: &T) -> Result<Frame, FrameError> {
        serde_json::to_vec(msg)
            .map(Frame::Message)
            .map_err(|e| FrameError::Malformed(e.to_string()))
    }

    /// Decodes the payload of a message frame; output frames are unexpected here.
    pub fn parse_message<T: DeserializeOwned>(&self) -> Result<T, FrameError> {
        match self {
            Frame::Message(bytes) => {
                serde_json::from_slice(bytes).map_err(|e| FrameError::Malformed(e.to_string()))
            }
            Frame::Stdout(_) | Frame::Stderr(_) => {
                Err(FrameError::Unexpected("output where a message was due"))
            }
        }
    }

    /// Builds a frame from a validated header and its payload.
    pub fn decode(header: Header, payload: Vec<u8>) -> Frame {
        match header.kind {
            KIND_STDOUT => Frame::Stdout(payload),
            KIND_STDERR => Frame::Stderr(payload),
            _ => Frame::Message(payload),
        }
    }

    /// Header and payload, ready to write in one call.
    pub fn encode(&self) -> Result<Vec<u8>, FrameError> {
        let (kind, payload) = match self {
            Frame::Message(p) => (KIND_MESSAGE, p),
            Frame::Stdout(p) => (KIND_STDOUT, p),
            Frame::Stderr(p) => (KIND_STDERR, p),
        };
        if payload.len() > MAX_FRAME {
            return Err(FrameError::TooLarge(payload.len()));
        }
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        // The cap above keeps the length within u32.
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.push(PROTOCOL_VERSION);
        out.push(kind);
        out.extend_from_slice(payload);
        Ok(out)
    }
}

/// Reads one frame from a blocking reader. A clean end of stream before any
/// header byte is [`FrameError::Closed`].
pub fn read_frame<R: Read>(reader: &mut R) -> Result<Frame, FrameError> {
    let mut head = [0u8; HEADER_LEN];
    let mut filled = 0;
    while filled < HEADER_LEN {
        match reader.read(&mut head[filled..]) {
            Ok(0) if filled == 0 => return Err(FrameError::Closed),
            Ok(0) => return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let header = Header::parse(head)?;
    let mut payload = vec![0u8; header.len];
    reader.read_exact(&mut payload)?;
    Ok(Frame::decode(header, payload))
}

/// Writes one frame to a blocking writer.
pub fn write_frame<W: Write>(writer: &mut W, frame: &Frame) -> Result<(), FrameError> {
    writer.write_all(&frame.encode()?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::{ClientMsg, Command, ExecRequest};

    fn sample() -> ClientMsg {
        ClientMsg::Exec(ExecRequest {
            command: Command::Shell("echo hi | wc -c".into()),
            cwd: "/home/u/project".into(),
            role: Some("agent".into()),
            session: None,
            runtime: Some("test".into()),
            tool_call_id: None,
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            timeout_secs: Some(5),
            approval_token: None,
        })
    }

    #[test]
    fn round_trips_messages_and_output() {
        let mut wire = Vec::new();
        write_frame(&mut wire, &Frame::message(&sample()).unwrap()).unwrap();
        write_frame(&mut wire, &Frame::Stdout(b"out\0put".to_vec())).unwrap();
        write_frame(&mut wire, &Frame::Stderr(Vec::new())).unwrap();
        let mut r = wire.as_slice();
        let back: ClientMsg = read_frame(&mut r).unwrap().parse_message().unwrap();
        assert_eq!(back, sample());
        assert_eq!(
            read_frame(&mut r).unwrap(),
            Frame::Stdout(b"out\0put".to_vec())
        );
        assert_eq!(read_frame(&mut r).unwrap(), Frame::Stderr(Vec::new()));
        assert!(matches!(read_frame(&mut r), Err(FrameError::Closed)));
    }

    #[test]
    fn refuses_oversized_frames_before_reading_them() {
        let mut wire = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
        wire.extend_from_slice(&[PROTOCOL_VERSION, KIND_MESSAGE]);
        assert!(
            matches!(read_frame(&mut wire.as_slice()), Err(FrameError::TooLarge(n)) if n == MAX_FRAME + 1)
        );
        assert!(matches!(
            Frame::Stdout(vec![0; MAX_FRAME + 1]).encode(),
            Err(FrameError::TooLarge(_))
        ));
    }

    #[test]
    fn refuses_wrong_version_and_kind() {
        let mut wire = Frame::message(&sample()).unwrap().encode().unwrap();
        wire[4] = PROTOCOL_VERSION + 1;
        assert!(
            matches!(read_frame(&mut wire.as_slice()), Err(FrameError::Version(v)) if v == PROTOCOL_VERSION + 1)
        );
        wire[4] = PROTOCOL_VERSION;
        wire[5] = 9;
        assert!(matches!(
            read_frame(&mut wire.as_slice()),
            Err(FrameError::Kind(9))
        ));
    }

    #[test]
    fn refuses_garbage_and_truncation() {
        let garbage = Frame::Message(b"{not json".to_vec()).encode().unwrap();
        let frame = read_frame(&mut garbage.as_slice()).unwrap();
        assert!(matches!(
            frame.parse_message::<ClientMsg>(),
            Err(FrameError::Malformed(_))
        ));
        let mut cut = Frame::message(&sample()).unwrap().encode().unwrap();
        cut.truncate(cut.len() - 3);
        assert!(matches!(
            read_frame(&mut cut.as_slice()),
            Err(FrameError::Io(_))
        ));
        assert!(matches!(
            read_frame(&mut &b"GET / HTTP/1.1\r\n"[..]),
            Err(FrameError::Version(_))
        ));
    }
}

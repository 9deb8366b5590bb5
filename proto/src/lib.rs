//! Wire types shared by Praxis clients and praxisd, and the framing codec.
//!
//! A frame is a 6-byte header (payload length as a big-endian `u32`, the
//! protocol version, the frame kind) followed by the payload. Messages are
//! JSON; command output travels as raw bytes so it needs no escaping.

#![forbid(unsafe_code)]

pub mod frame;
pub mod msg;
pub mod paths;
pub mod verdict;
pub mod words;

pub use frame::{Frame, FrameError, HEADER_LEN, MAX_FRAME, MAX_OUTPUT_CHUNK, PROTOCOL_VERSION};
pub use msg::{
    ClientMsg, Command, CredentialBinding, CredentialInfo, CredentialSource, CredentialSpec,
    DecisionFrame, ErrorFrame, ExecRequest, ExitFrame, ExitStatus, FileAccess, JudgeRequest,
    MemoryUsed, NoteRequest, OperatorReply, OperatorRequest, PendingItem, ServerMsg, SessionInfo,
    SnapshotInfo, StatusReport, Subject, VerifySummary,
};
pub use paths::{Layout, Mode, forwarded_env};
pub use verdict::{Profile, Verdict};

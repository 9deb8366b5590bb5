//! Request identifiers and the digest of a raw request.

use std::time::{SystemTime, UNIX_EPOCH};

use praxis_proto::{Command, ExecRequest};
use sha2::{Digest, Sha256};

/// A new request id: milliseconds since the epoch (so ids sort by time) and
/// 48 random bits, e.g. `r-0195f3a2b7c4-9f2c1a7b3e5d`.
pub fn request_id() -> String {
    id("r")
}

/// A new approval id, shaped like a request id: `a-0195f3a2b7c4-9f2c1a7b3e5d`.
pub fn approval_id() -> String {
    id("a")
}

fn id(prefix: &str) -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut random = [0u8; 6];
    // The kernel's CSPRNG, one system call (no descriptor); if it fails the
    // time part alone still orders ids, and the audit store's sequence
    // keeps them apart.
    // SAFETY: the buffer is valid for writes of its whole length for the
    // call, and getrandom writes at most that many bytes into it.
    let _ = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    format!("{prefix}-{ms:012x}-{}", hex::encode(random))
}

/// A new secret: 32 bytes of the kernel's CSPRNG, hex. Unlike an id's
/// random part, a secret is never made without them.
pub fn secret() -> std::io::Result<String> {
    let mut random = [0u8; 32];
    // SAFETY: the buffer is valid for writes of its whole length for the
    // call, and getrandom writes at most that many bytes into it.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if usize::try_from(got).ok() != Some(random.len()) {
        return Err(std::io::Error::last_os_error());
    }
    Ok(hex::encode(random))
}

/// Hex SHA-256 of the canonical raw request: the command (argv elements or
/// the shell string), the cwd and the role, each length-prefixed so no two
/// requests share an encoding. This is what the audit store keeps instead of
/// the raw arguments.
pub fn arguments_digest(request: &ExecRequest, cwd: &str, role: &str) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &[u8], bytes: &[u8]| {
        h.update(tag);
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    match &request.command {
        Command::Argv(argv) => {
            for arg in argv {
                field(b"a", arg.as_bytes());
            }
        }
        Command::Shell(script) => field(b"s", script.as_bytes()),
    }
    field(b"c", cwd.as_bytes());
    field(b"r", role.as_bytes());
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(command: Command) -> ExecRequest {
        ExecRequest {
            command,
            cwd: String::new(),
            role: None,
            session: None,
            runtime: None,
            tool_call_id: None,
            env: Vec::new(),
            timeout_secs: None,
            approval_token: None,
        }
    }

    #[test]
    fn digest_separates_fields() {
        let a = arguments_digest(
            &req(Command::Argv(vec!["ab".into(), "c".into()])),
            "/w",
            "agent",
        );
        let b = arguments_digest(
            &req(Command::Argv(vec!["a".into(), "bc".into()])),
            "/w",
            "agent",
        );
        let c = arguments_digest(&req(Command::Shell("ab c".into())), "/w", "agent");
        let d = arguments_digest(
            &req(Command::Argv(vec!["ab".into(), "c".into()])),
            "/w",
            "ci",
        );
        assert_eq!(a.len(), 64);
        assert!(a != b && a != c && a != d);
    }

    #[test]
    fn ids_are_unique() {
        assert_ne!(request_id(), request_id());
        assert!(approval_id().starts_with("a-") && request_id().starts_with("r-"));
    }
}

//! What an approval is bound to: the request digest, and the session the
//! retry budget counts in.

use std::path::Path;

use praxis_policy::{Grants, Profile};
use praxis_proto::CredentialSpec;
use sha2::{Digest, Sha256};

use crate::conn::Peer;

/// The budget session of a request: its `--session`/`PRAXIS_SESSION`, else
/// the peer's Unix session id, else its uid.
pub fn session_key(session: Option<&str>, peer: &Peer) -> String {
    if let Some(s) = session.filter(|s| !s.is_empty()) {
        return s.to_owned();
    }
    peer.pid
        .and_then(|pid| nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid))).ok())
        .map(|sid| format!("unix-sid-{sid}"))
        .unwrap_or_else(|| format!("uid-{}", peer.uid))
}

/// Hex SHA-256 of the canonical request an approval is bound to: the raw
/// request digest (command, client cwd, role), the resolved cwd, the sandbox
/// profile and the names of the credentials it would get, each
/// length-prefixed.
pub fn request_digest(
    arguments_digest: &str,
    cwd: &Path,
    profile: Profile,
    access: &Grants,
    grants: &[CredentialSpec],
) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &[u8], bytes: &[u8]| {
        h.update(tag);
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"d", arguments_digest.as_bytes());
    field(b"c", cwd.as_os_str().as_encoded_bytes());
    field(b"p", profile.as_str().as_bytes());
    // The same command with another target is another request: an approval
    // binds the exact paths and destinations it runs with.
    for path in &access.write {
        field(b"w", path.as_os_str().as_encoded_bytes());
    }
    for path in &access.read {
        field(b"r", path.as_os_str().as_encoded_bytes());
    }
    for dest in &access.connect {
        field(b"n", dest.to_string().as_bytes());
    }
    for socket in &access.sockets {
        field(b"s", socket.as_os_str().as_encoded_bytes());
    }
    let mut names: Vec<&str> = grants.iter().map(|g| g.name.as_str()).collect();
    names.sort_unstable();
    for name in names {
        field(b"g", name.as_bytes());
    }
    hex::encode(h.finalize())
}

/// Hex SHA-256 of what an approval of a runtime's own tool call binds: the
/// raw request digest of its name and arguments (with the client cwd and
/// role). Tagged apart from [`request_digest`], so no command's approval is
/// a tool call's, nor the other way round.
pub fn tool_digest(arguments_digest: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"t");
    h.update((arguments_digest.len() as u64).to_be_bytes());
    h.update(arguments_digest.as_bytes());
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use praxis_proto::CredentialSource;

    use super::*;

    fn grant(name: &str) -> CredentialSpec {
        CredentialSpec {
            name: name.into(),
            env: "X".into(),
            source: CredentialSource::Env("X".into()),
            roles: vec!["agent".into()],
            programs: Vec::new(),
            bound: None,
        }
    }

    #[test]
    fn digest_binds_cwd_profile_and_grants() {
        let cwd = PathBuf::from("/w");
        let none = Grants::default();
        let base = request_digest("d", &cwd, Profile::ReadOnly, &none, &[]);
        let granting = |grants: Grants| request_digest("d", &cwd, Profile::ReadOnly, &grants, &[]);
        assert_eq!(base.len(), 64);
        assert_eq!(
            base,
            request_digest("d", &cwd, Profile::ReadOnly, &none, &[])
        );
        for other in [
            request_digest("e", &cwd, Profile::ReadOnly, &none, &[]),
            request_digest("d", Path::new("/x"), Profile::ReadOnly, &none, &[]),
            request_digest("d", &cwd, Profile::Full, &none, &[]),
            request_digest("d", &cwd, Profile::ReadOnly, &none, &[grant("gh")]),
            granting(Grants {
                write: vec![PathBuf::from("/tmp/out")],
                ..Grants::default()
            }),
            granting(Grants {
                read: vec![PathBuf::from("/tmp/out")],
                ..Grants::default()
            }),
            granting(Grants {
                sockets: vec![PathBuf::from("/tmp/out")],
                ..Grants::default()
            }),
        ] {
            assert_ne!(base, other);
        }
        assert_eq!(
            request_digest(
                "d",
                &cwd,
                Profile::ReadOnly,
                &none,
                &[grant("a"), grant("b")]
            ),
            request_digest(
                "d",
                &cwd,
                Profile::ReadOnly,
                &none,
                &[grant("b"), grant("a")]
            )
        );
    }

    #[test]
    fn a_tool_call_digest_is_never_a_commands() {
        let none = Grants::default();
        let tool = tool_digest("d");
        assert_eq!(tool.len(), 64);
        assert_eq!(tool, tool_digest("d"));
        assert_ne!(tool, tool_digest("e"));
        assert_ne!(
            tool,
            request_digest("d", Path::new(""), Profile::ReadOnly, &none, &[])
        );
    }

    #[test]
    fn session_key_prefers_the_claimed_session() {
        let peer = Peer {
            uid: 7,
            gid: 7,
            pid: Some(std::process::id() as i32),
            inside: None,
        };
        assert_eq!(session_key(Some("s1"), &peer), "s1");
        assert!(session_key(None, &peer).starts_with("unix-sid-"));
        let unknown = Peer { pid: None, ..peer };
        assert_eq!(session_key(Some(""), &unknown), "uid-7");
    }
}

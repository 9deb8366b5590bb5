//! The decision vocabulary every crate shares: what the boundary decided,
//! and the sandbox profile a command runs under.

use serde::{Deserialize, Serialize};

/// What the boundary decided. Ordered by severity: `Allow < Hold < Stop`, so the
/// decision of a compound command is the maximum over its simple commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Allow,
    Hold,
    Stop,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "ALLOW",
            Verdict::Hold => "HOLD",
            Verdict::Stop => "STOP",
        }
    }
}

/// How much of the host a command may change. Ordered by how much it grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Read (and execute) everything but secrets; write only the scratch dir
    /// and the harmless devices.
    ReadOnly,
    /// Read-only plus the workspace and the existing tool caches writable.
    WorkspaceWrite,
    /// No Landlock filesystem rules; scopes, seccomp, rlimits still apply.
    Full,
}

impl Profile {
    /// The name used in policy files, in decision frames and in `PRAXIS_SANDBOX`.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::ReadOnly => "read-only",
            Profile::WorkspaceWrite => "workspace-write",
            Profile::Full => "full",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_orders_stop_above_hold_above_allow() {
        assert!(Verdict::Stop > Verdict::Hold && Verdict::Hold > Verdict::Allow);
        assert_eq!(
            [Verdict::Allow, Verdict::Stop, Verdict::Hold]
                .into_iter()
                .max(),
            Some(Verdict::Stop)
        );
    }

    #[test]
    fn wire_names_are_the_names_shown() {
        for verdict in [Verdict::Allow, Verdict::Hold, Verdict::Stop] {
            let wire = format!("\"{}\"", verdict.as_str());
            assert_eq!(serde_json::to_string(&verdict).unwrap(), wire);
            assert_eq!(serde_json::from_str::<Verdict>(&wire).unwrap(), verdict);
        }
        for profile in [Profile::ReadOnly, Profile::WorkspaceWrite, Profile::Full] {
            let wire = format!("\"{}\"", profile.as_str());
            assert_eq!(serde_json::to_string(&profile).unwrap(), wire);
            assert_eq!(serde_json::from_str::<Profile>(&wire).unwrap(), profile);
        }
        assert_eq!(serde_json::to_string(&Verdict::Hold).unwrap(), "\"HOLD\"");
        assert_eq!(
            serde_json::to_string(&Profile::WorkspaceWrite).unwrap(),
            "\"workspace-write\""
        );
        assert!(serde_json::from_str::<Verdict>("\"hold\"").is_err());
    }
}

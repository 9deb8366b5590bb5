//! The decision vocabulary: verdicts, risk tiers and sandbox profiles.

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

/// Risk class of an action, T0 to T3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// T0: observes, changes nothing.
    ReadOnly,
    /// T1: changes that stay inside the workspace and can be undone.
    ReversibleWrite,
    /// T2: effects outside this machine (network writes, publishing, messages).
    ExternalSideEffect,
    /// T3: destructive, privileged or outside-the-workspace changes.
    HighRisk,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::ReadOnly => "read_only",
            Tier::ReversibleWrite => "reversible_write",
            Tier::ExternalSideEffect => "external_side_effect",
            Tier::HighRisk => "high_risk",
        }
    }

    /// Short label, `T0`..`T3`.
    pub fn label(self) -> &'static str {
        match self {
            Tier::ReadOnly => "T0",
            Tier::ReversibleWrite => "T1",
            Tier::ExternalSideEffect => "T2",
            Tier::HighRisk => "T3",
        }
    }
}

/// Sandbox profile a command runs under. Ordered by how much it grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    ReadOnly,
    WorkspaceWrite,
    Full,
}

impl Profile {
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
    fn wire_names_match_the_spec() {
        assert_eq!(
            serde_json::to_string(&Tier::ExternalSideEffect).unwrap(),
            "\"external_side_effect\""
        );
        assert_eq!(serde_json::to_string(&Verdict::Hold).unwrap(), "\"HOLD\"");
        assert_eq!(
            serde_json::to_string(&Profile::WorkspaceWrite).unwrap(),
            "\"workspace-write\""
        );
    }
}

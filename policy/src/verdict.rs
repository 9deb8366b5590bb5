//! The decision vocabulary: verdicts, risk tiers and sandbox profiles. The
//! verdict and the profile are the wire's own, defined in `praxis-proto`.

pub use praxis_proto::{Profile, Verdict};
use serde::{Deserialize, Serialize};

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

/// Tier as written in the file: a tier, or `unknown` (held as unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TierSpec {
    ReadOnly,
    ReversibleWrite,
    ExternalSideEffect,
    HighRisk,
    Unknown,
}

impl TierSpec {
    /// The tier, or None for `unknown`.
    pub fn tier(self) -> Option<Tier> {
        match self {
            TierSpec::ReadOnly => Some(Tier::ReadOnly),
            TierSpec::ReversibleWrite => Some(Tier::ReversibleWrite),
            TierSpec::ExternalSideEffect => Some(Tier::ExternalSideEffect),
            TierSpec::HighRisk => Some(Tier::HighRisk),
            TierSpec::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_match_the_spec() {
        assert_eq!(
            serde_json::to_string(&Tier::ExternalSideEffect).unwrap(),
            "\"external_side_effect\""
        );
    }
}

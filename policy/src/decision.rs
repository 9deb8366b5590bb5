//! The result of judging one request.

use serde::Serialize;

use crate::reversible::Undo;
use crate::{Profile, Tier, Verdict};

/// How one simple command of the request was judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommandJudgment {
    /// The simple command, redacted, for display and audit.
    pub command: String,
    pub program: String,
    pub verdict: Verdict,
    pub tier: Tier,
    pub rule_ids: Vec<String>,
    pub reason: String,
}

/// A decision on a whole request: the most severe verdict and the highest tier
/// over its simple commands, and the rules that produced them.
#[must_use = "a decision must be acted on: only an ALLOW may execute"]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub decision: Verdict,
    pub tier: Tier,
    pub reason: String,
    pub rule_ids: Vec<String>,
    pub profile: Profile,
    /// Whether the sandboxed command may use the network.
    pub network: bool,
    /// The command reaches root through sudo/doas/… .
    pub escalation: bool,
    pub commands: Vec<CommandJudgment>,
    /// What must be saved before the command runs for it to be undone.
    pub undo: Undo,
    /// Hash of the loaded policy files.
    pub policy_revision: String,
}

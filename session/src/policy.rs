//! The session policy: thresholds, backstops, steer texts and postures, as
//! data. The shipped file is `session.toml`; an operator's file is laid over
//! it key by key.

use std::collections::BTreeMap;

use praxis_policy::verdict::Tier;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::signal::Signal;
use crate::steer::{Template, TemplateError};

/// The shipped session policy.
pub const SHIPPED: &str = include_str!("../session.toml");

#[derive(Debug, Error)]
pub enum PolicyError {
    #[error("session policy is not valid TOML: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("steer template for {what}: {source}")]
    Template {
        what: &'static str,
        source: TemplateError,
    },
    #[error("session policy: {0}")]
    Invalid(String),
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SessionPolicy {
    pub hysteresis: Hysteresis,
    pub loops: Loops,
    pub risk: RiskPolicy,
    pub backstops: Backstops,
    pub baseline: BaselinePolicy,
    pub telemetry: TelemetryPolicy,
    pub tools: ToolKinds,
    pub scope: ScopePolicy,
    pub checkpoint: CheckpointPolicy,
    pub steer: SteerTexts,
    pub default_role: String,
    pub roles: BTreeMap<String, Posture>,
}

/// R5a: persistence before a shift counts, and the re-arm floor.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Hysteresis {
    pub persist_actions: u32,
    pub rearm_actions: u64,
    pub rearm_seconds: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Loops {
    pub repeat_calls: u32,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RiskPolicy {
    pub first_risk_tier: Tier,
}

/// How risky a window is: the highest tier seen in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn of(tier: Tier, protected: bool) -> Self {
        match tier {
            _ if protected => Risk::High,
            Tier::ReadOnly => Risk::Low,
            Tier::ReversibleWrite => Risk::Medium,
            Tier::ExternalSideEffect | Tier::HighRisk => Risk::High,
        }
    }
}

/// A window's backstop: it expires after this many actions or seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Backstop {
    pub actions: u64,
    pub seconds: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Backstops {
    pub low: Backstop,
    pub medium: Backstop,
    pub high: Backstop,
}

impl Backstops {
    pub fn for_risk(&self, risk: Risk) -> Backstop {
        match risk {
            Risk::Low => self.low,
            Risk::Medium => self.medium,
            Risk::High => self.high,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BaselinePolicy {
    pub min_windows: usize,
    pub factor_percent: u64,
    /// How many past windows the ledger keeps per lineage and work kind.
    pub keep_windows: usize,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryPolicy {
    pub grace_actions: u64,
}

/// Tool names by what they do, for actions Praxis did not judge.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolKinds {
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub web: Vec<String>,
    pub shell: Vec<String>,
    pub plan: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScopePolicy {
    pub depth: usize,
}

/// A way a checkpoint can be satisfied; each leaves an observable trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// A read of a file changed in the window the boundary closed.
    Reread,
    /// A plan tool call (TodoWrite, update_plan).
    PlanUpdate,
    /// A test command.
    TestsRun,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointPolicy {
    pub mechanisms: Vec<Mechanism>,
    pub test_commands: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SteerTexts {
    pub first_risk: String,
    pub failure_loop: String,
    pub repeat_loop: String,
    pub work_kind_shift: String,
    pub scope_change: String,
    pub lifecycle: String,
    pub tool_budget: String,
    pub elapsed_budget: String,
    pub method: String,
}

impl SteerTexts {
    pub fn for_signal(&self, signal: Signal) -> &str {
        match signal {
            Signal::FirstRisk => &self.first_risk,
            Signal::FailureLoop => &self.failure_loop,
            Signal::RepeatLoop => &self.repeat_loop,
            Signal::WorkKindShift => &self.work_kind_shift,
            Signal::ScopeChange => &self.scope_change,
            Signal::Lifecycle => &self.lifecycle,
            Signal::ToolBudget => &self.tool_budget,
            Signal::ElapsedBudget => &self.elapsed_budget,
        }
    }
}

/// A method rule that blocks a worker (L15 c-ii).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MethodBlock {
    /// Reaching outside (external tier) after writes, with no test run since the last write.
    SkippedVerification,
    /// The first write of the session before any plan update.
    BuildBeforePlan,
    /// A tool used on targets another tool serves better.
    WrongTool {
        tool: String,
        target_prefix: String,
        instead: String,
    },
}

impl MethodBlock {
    pub fn name(&self) -> &'static str {
        match self {
            MethodBlock::SkippedVerification => "skipped_verification",
            MethodBlock::BuildBeforePlan => "build_before_plan",
            MethodBlock::WrongTool { .. } => "wrong_tool",
        }
    }
}

/// A role's posture: steer-only roles are steered where others are blocked.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Posture {
    pub steer_only: bool,
    #[serde(default)]
    pub method_blocks: Vec<MethodBlock>,
}

/// The steer texts, parsed.
#[derive(Clone, Debug)]
pub(crate) struct Templates {
    /// Indexed by `Signal as usize` (the order of `SIGNALS`).
    by_signal: Vec<Template>,
    pub(crate) method: Template,
}

impl Templates {
    pub(crate) fn for_signal(&self, signal: Signal) -> &Template {
        &self.by_signal[signal as usize]
    }
}

impl SessionPolicy {
    /// The shipped policy.
    pub fn shipped() -> Result<Self, PolicyError> {
        Self::with_overrides("")
    }

    /// The shipped policy with an operator's file laid over it, key by key.
    pub fn with_overrides(operator: &str) -> Result<Self, PolicyError> {
        let mut base: toml::Table = toml::from_str(SHIPPED)?;
        let over: toml::Table = toml::from_str(operator)?;
        overlay(&mut base, over);
        let policy: SessionPolicy = toml::Value::Table(base).try_into()?;
        policy.validate()?;
        Ok(policy)
    }

    pub fn posture(&self, role: Option<&str>) -> &Posture {
        role.and_then(|r| self.roles.get(r))
            .or_else(|| self.roles.get(&self.default_role))
            .expect("validate() checks that the default role exists")
    }

    pub(crate) fn templates(&self) -> Result<Templates, PolicyError> {
        let parse = |what: &'static str, text: &str| {
            Template::parse(text).map_err(|source| PolicyError::Template { what, source })
        };
        let by_signal = crate::signal::SIGNALS
            .iter()
            .map(|s| parse(s.as_str(), self.steer.for_signal(*s)))
            .collect::<Result<Vec<_>, PolicyError>>()?;
        Ok(Templates {
            by_signal,
            method: parse("method", &self.steer.method)?,
        })
    }

    fn validate(&self) -> Result<(), PolicyError> {
        let invalid = |m: &str| Err(PolicyError::Invalid(m.to_owned()));
        if self.hysteresis.persist_actions == 0 {
            return invalid("hysteresis.persist_actions must be at least 1");
        }
        if self.loops.repeat_calls < 2 {
            return invalid("loops.repeat_calls must be at least 2");
        }
        let b = &self.backstops;
        if b.low.actions < b.medium.actions
            || b.medium.actions < b.high.actions
            || b.low.seconds < b.medium.seconds
            || b.medium.seconds < b.high.seconds
        {
            return invalid("backstops must not grow with risk (low >= medium >= high)");
        }
        if b.high.actions == 0 || b.high.seconds == 0 {
            return invalid("backstops must be at least 1 action and 1 second");
        }
        if self.scope.depth == 0 {
            return invalid("scope.depth must be at least 1");
        }
        if self.baseline.keep_windows < self.baseline.min_windows.max(1) {
            return invalid("baseline.keep_windows must be at least baseline.min_windows");
        }
        if self.checkpoint.mechanisms.is_empty() {
            return invalid("checkpoint.mechanisms must name at least one mechanism");
        }
        if !self.roles.contains_key(&self.default_role) {
            return Err(PolicyError::Invalid(format!(
                "default_role {:?} has no [roles.{}] table",
                self.default_role, self.default_role
            )));
        }
        self.templates().map(|_| ())
    }
}

/// Lays `over` onto `base`: tables merge, any other value replaces.
fn overlay(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => overlay(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_policy_loads_with_its_defaults() {
        let p = SessionPolicy::shipped().unwrap();
        assert_eq!(p.hysteresis.persist_actions, 3);
        assert_eq!(p.hysteresis.rearm_actions, 4);
        assert_eq!(p.hysteresis.rearm_seconds, 30);
        assert!(p.posture(Some("director")).steer_only);
        assert!(!p.posture(Some("no-such-role")).steer_only);
    }

    #[test]
    fn an_override_changes_only_what_it_names() {
        let p = SessionPolicy::with_overrides(
            "[hysteresis]\npersist_actions = 5\n[roles.agent]\nmethod_blocks = [{ kind = \"wrong_tool\", tool = \"Bash\", target_prefix = \"sed -i\", instead = \"Edit\" }]\n",
        )
        .unwrap();
        assert_eq!(p.hysteresis.persist_actions, 5);
        assert_eq!(p.hysteresis.rearm_actions, 4);
        assert!(!p.roles["agent"].steer_only);
        assert_eq!(p.roles["agent"].method_blocks.len(), 1);
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let unknown = SessionPolicy::with_overrides("[hysteresis]\npersist = 5\n").unwrap_err();
        assert!(unknown.to_string().contains("persist"), "{unknown}");
        let template =
            SessionPolicy::with_overrides("[steer]\nlifecycle = \"run {command}\"\n").unwrap_err();
        assert!(matches!(
            template,
            PolicyError::Template {
                what: "lifecycle",
                ..
            }
        ));
        let zero =
            SessionPolicy::with_overrides("[hysteresis]\npersist_actions = 0\n").unwrap_err();
        assert!(matches!(zero, PolicyError::Invalid(_)));
        let role = SessionPolicy::with_overrides("default_role = \"ghost\"\n").unwrap_err();
        assert!(role.to_string().contains("ghost"), "{role}");
        let growing =
            SessionPolicy::with_overrides("[backstops.high]\nactions = 100\n").unwrap_err();
        assert!(matches!(growing, PolicyError::Invalid(_)));
    }
}

//! The four OpenBrain judge contracts, exactly as the seed states them:
//! the action proposal, the recall request and response, and the judge
//! decision. Every key the seed lists is required; `string | null` means the
//! key must be present and may be null. Unknown keys, wrong enum values and
//! missing keys are refused with the path of the offending field
//! (`tool.kind`, `checks.policy_check`, `memories[2].provenance.status`).
//!
//! The same contracts ship as JSON Schema files under `contracts/`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

pub use praxis_policy::Tier as RiskClass;

use crate::time::Timestamp;

/// Why a contract document was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContractError {
    /// The text is not JSON at all.
    #[error("not JSON: {0}")]
    Syntax(String),
    /// A field is unknown, missing, of the wrong type or out of range.
    #[error("{field}: {message}")]
    Field { field: String, message: String },
}

impl ContractError {
    fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        ContractError::Field {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The dotted path of the field at fault, when there is one.
    pub fn field_path(&self) -> Option<&str> {
        match self {
            ContractError::Field { field, .. } => Some(field),
            ContractError::Syntax(_) => None,
        }
    }
}

/// A document the judge API accepts: strict parsing plus checks serde cannot
/// express (ranges, non-empty identifiers).
pub trait Contract: DeserializeOwned + Serialize {
    /// The `schema_version` value this contract carries.
    const SCHEMA_VERSION: &'static str;

    /// Checks beyond the shape; the error names the field.
    fn check(&self) -> Result<(), ContractError>;
}

/// Parses and checks one contract document.
pub fn parse<T: Contract>(json: &str) -> Result<T, ContractError> {
    let document: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ContractError::Syntax(e.to_string()))?;
    let value: T = serde_path_to_error::deserialize(document).map_err(|error| {
        let path = error.path().to_string();
        let message = error.into_inner().to_string();
        // serde names a missing or unknown key in its message, one level
        // below the path where it was noticed.
        let field = match key_in(&message) {
            Some(key) if path == "." => key.to_owned(),
            Some(key) if path != key && !path.ends_with(&format!(".{key}")) => {
                format!("{path}.{key}")
            }
            _ => path,
        };
        ContractError::field(field, message)
    })?;
    value.check()?;
    Ok(value)
}

/// The key named by serde's "missing field `x`" / "unknown field `x`".
fn key_in(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("missing field `")
        .or_else(|| message.strip_prefix("unknown field `"))?;
    rest.split('`').next()
}

/// A key that must be present and may be null.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::deserialize(d)
}

fn non_empty(field: &str, value: &str) -> Result<(), ContractError> {
    if value.is_empty() {
        return Err(ContractError::field(field, "must not be empty"));
    }
    Ok(())
}

/// The single value a `schema_version` key may hold, per contract.
macro_rules! schema_version {
    ($name:ident, $value:literal) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub enum $name {
            #[serde(rename = $value)]
            V1,
        }
    };
}

schema_version!(ProposalVersion, "openbrain.judge.action_proposal.v1");
schema_version!(RecallVersion, "openbrain.judge.recall.v1");
schema_version!(RecallResponseVersion, "openbrain.judge.recall_response.v1");
schema_version!(DecisionVersion, "openbrain.judge.decision.v1");

// ---------------------------------------------------------------- proposal

/// `openbrain.judge.action_proposal.v1`: what an actor asks to do, before it does it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionProposal {
    pub schema_version: ProposalVersion,
    pub workspace_id: String,
    #[serde(deserialize_with = "nullable")]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub task_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub flow_id: Option<String>,
    pub action_id: String,
    pub idempotency_key: String,
    pub runtime: Runtime,
    pub actor: Actor,
    pub tool: Tool,
    pub action: ProposedAction,
    pub authorization: Authorization,
    pub evidence: Evidence,
    pub expected_consequence: ExpectedConsequence,
    pub rollback: Rollback,
    pub sensitivity: Sensitivity,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub version: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub adapter: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actor {
    pub agent_id: String,
    #[serde(deserialize_with = "nullable")]
    pub role: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub provider: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub model: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub kind: ToolKind,
    #[serde(deserialize_with = "nullable")]
    pub target_system: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    FunctionTool,
    HostedTool,
    Shell,
    Browser,
    Api,
    Message,
    File,
    Workflow,
    Handoff,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposedAction {
    pub risk_class: RiskClass,
    pub description: String,
    #[serde(deserialize_with = "nullable")]
    pub target: Option<String>,
    pub arguments_digest: String,
    #[serde(deserialize_with = "nullable")]
    pub full_arguments_ref: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authorization {
    #[serde(deserialize_with = "nullable")]
    pub claimed_user_authorization: Option<String>,
    pub user_authorization_refs: Vec<AuthorizationRef>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizationRef {
    pub kind: AuthorizationKind,
    #[serde(deserialize_with = "nullable")]
    pub uri: Option<String>,
    pub quote_or_summary: String,
    #[serde(deserialize_with = "nullable")]
    pub timestamp: Option<Timestamp>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorizationKind {
    UserMessage,
    Task,
    Ticket,
    Memory,
    Policy,
    ManualApproval,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    pub source_refs: Vec<EvidenceRef>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRef {
    pub kind: EvidenceKind,
    #[serde(deserialize_with = "nullable")]
    pub uri: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub title: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub timestamp: Option<Timestamp>,
    pub summary: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    File,
    Message,
    Doc,
    Ticket,
    Memory,
    Log,
    Web,
    Api,
    Policy,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedConsequence {
    pub summary: String,
    pub external_recipients: Vec<String>,
    pub data_exposed: Vec<String>,
    pub systems_changed: Vec<String>,
    pub persistence: Persistence,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Persistence {
    None,
    Temporary,
    Durable,
    External,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rollback {
    pub is_reversible: bool,
    #[serde(deserialize_with = "nullable")]
    pub rollback_plan: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub rollback_owner: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sensitivity {
    pub contains_secret_like_data: bool,
    pub contains_customer_data: bool,
    pub contains_private_personal_data: bool,
    pub contains_financial_or_legal_data: bool,
    pub contains_production_system_access: bool,
}

impl Contract for ActionProposal {
    const SCHEMA_VERSION: &'static str = "openbrain.judge.action_proposal.v1";

    fn check(&self) -> Result<(), ContractError> {
        non_empty("workspace_id", &self.workspace_id)?;
        non_empty("action_id", &self.action_id)?;
        non_empty("idempotency_key", &self.idempotency_key)?;
        non_empty("runtime.name", &self.runtime.name)?;
        non_empty("actor.agent_id", &self.actor.agent_id)?;
        non_empty("tool.name", &self.tool.name)?;
        non_empty("action.arguments_digest", &self.action.arguments_digest)
    }
}

// ---------------------------------------------------------------- recall

/// `openbrain.judge.recall.v1`: what a runtime asks for before judging.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallRequest {
    pub schema_version: RecallVersion,
    pub request_id: String,
    pub workspace_id: String,
    #[serde(deserialize_with = "nullable")]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub task_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub flow_id: Option<String>,
    pub action_id: String,
    pub query: RecallQuery,
    pub entities: Entities,
    pub scope: RecallScope,
    pub limits: RecallLimits,
    pub policy: RecallPolicy,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallQuery {
    pub summary: String,
    pub action_type: RiskClass,
    #[serde(deserialize_with = "nullable")]
    pub tool_name: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub target_system: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entities {
    pub people: Vec<String>,
    pub orgs: Vec<String>,
    pub repos: Vec<String>,
    pub files: Vec<String>,
    pub customers: Vec<String>,
    pub systems: Vec<String>,
    pub topics: Vec<String>,
}

impl Entities {
    /// Every entity named, whatever its kind.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        [
            &self.people,
            &self.orgs,
            &self.repos,
            &self.files,
            &self.customers,
            &self.systems,
            &self.topics,
        ]
        .into_iter()
        .flatten()
        .map(String::as_str)
    }
}

/// Who may see a memory, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Personal,
    Project,
    Workspace,
    Org,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallScope {
    pub visibility: Visibility,
    pub include_unconfirmed: bool,
    pub include_disputed: bool,
    pub include_stale: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallLimits {
    pub max_items: u32,
    pub max_tokens: u32,
    #[serde(deserialize_with = "nullable")]
    pub recency_days: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallPolicy {
    pub allowed_use_policies: Vec<UsePolicy>,
    pub require_source_refs: bool,
}

impl Contract for RecallRequest {
    const SCHEMA_VERSION: &'static str = "openbrain.judge.recall.v1";

    fn check(&self) -> Result<(), ContractError> {
        non_empty("request_id", &self.request_id)?;
        non_empty("workspace_id", &self.workspace_id)?;
        non_empty("action_id", &self.action_id)
    }
}

// ---------------------------------------------------------------- memory labels

/// Where a memory came from. The seven labels of the seed, exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProvenanceStatus {
    /// Records a concrete event.
    Observed,
    /// An agent derived it from context.
    Inferred,
    /// A human explicitly approved it.
    UserConfirmed,
    /// Came from an external system.
    Imported,
    /// Produced by an agent or judge as a proposed lesson.
    Generated,
    /// A newer memory replaces it.
    Superseded,
    /// Another source or a user correction conflicts with it.
    Disputed,
}

impl ProvenanceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ProvenanceStatus::Observed => "observed",
            ProvenanceStatus::Inferred => "inferred",
            ProvenanceStatus::UserConfirmed => "user_confirmed",
            ProvenanceStatus::Imported => "imported",
            ProvenanceStatus::Generated => "generated",
            ProvenanceStatus::Superseded => "superseded",
            ProvenanceStatus::Disputed => "disputed",
        }
    }
}

/// How a judge may use a memory. The four labels of the seed, exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsePolicy {
    CanUseAsInstruction,
    CanUseAsEvidence,
    RequiresConfirmation,
    DoNotInjectAutomatically,
}

impl UsePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            UsePolicy::CanUseAsInstruction => "can_use_as_instruction",
            UsePolicy::CanUseAsEvidence => "can_use_as_evidence",
            UsePolicy::RequiresConfirmation => "requires_confirmation",
            UsePolicy::DoNotInjectAutomatically => "do_not_inject_automatically",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    UserMessage,
    Doc,
    Ticket,
    File,
    SystemEvent,
    Import,
    JudgeEvent,
    ManualEntry,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreatedBy {
    User,
    Agent,
    System,
    Import,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySource {
    pub kind: SourceKind,
    #[serde(deserialize_with = "nullable")]
    pub uri: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub title: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub timestamp: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub status: ProvenanceStatus,
    /// 0.0 to 1.0.
    pub confidence: f64,
    pub created_by: CreatedBy,
    #[serde(deserialize_with = "nullable")]
    pub model: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub runtime: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsePolicyLabel {
    pub policy: UsePolicy,
    #[serde(deserialize_with = "nullable")]
    pub reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Freshness {
    pub created_at: Timestamp,
    #[serde(deserialize_with = "nullable")]
    pub last_confirmed_at: Option<Timestamp>,
    #[serde(deserialize_with = "nullable")]
    pub stale_after: Option<Timestamp>,
}

impl Freshness {
    /// Fresh until `stale_after`, which is itself already stale.
    pub fn is_fresh(&self, now: Timestamp) -> bool {
        self.stale_after.is_none_or(|after| now < after)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryScope {
    pub workspace_id: String,
    #[serde(deserialize_with = "nullable")]
    pub project_id: Option<String>,
    pub visibility: Visibility,
}

/// One recalled memory, as the recall response carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryItem {
    pub memory_id: String,
    pub summary: String,
    pub content: String,
    pub source: MemorySource,
    pub provenance: Provenance,
    pub use_policy: UsePolicyLabel,
    pub freshness: Freshness,
    pub scope: MemoryScope,
}

impl MemoryItem {
    /// Checks of one item; `at` is its path in the enclosing document.
    pub fn check_at(&self, at: &str) -> Result<(), ContractError> {
        non_empty(&format!("{at}memory_id"), &self.memory_id)?;
        non_empty(&format!("{at}scope.workspace_id"), &self.scope.workspace_id)?;
        if !(0.0..=1.0).contains(&self.provenance.confidence) {
            return Err(ContractError::field(
                format!("{at}provenance.confidence"),
                "must be between 0 and 1",
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- recall response

/// `openbrain.judge.recall_response.v1`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallResponse {
    pub schema_version: RecallResponseVersion,
    pub request_id: String,
    pub memories: Vec<MemoryItem>,
    pub policy_hits: Vec<PolicyHit>,
    pub warnings: Vec<Warning>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyHit {
    pub policy_id: String,
    pub summary: String,
    pub required_behavior: RequiredBehavior,
    #[serde(deserialize_with = "nullable")]
    pub source_ref: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequiredBehavior {
    Allow,
    Block,
    Revise,
    Escalate,
    HumanReview,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

impl Contract for RecallResponse {
    const SCHEMA_VERSION: &'static str = "openbrain.judge.recall_response.v1";

    fn check(&self) -> Result<(), ContractError> {
        non_empty("request_id", &self.request_id)?;
        self.memories
            .iter()
            .enumerate()
            .try_for_each(|(i, m)| m.check_at(&format!("memories[{i}].")))
    }
}

// ---------------------------------------------------------------- decision

/// `openbrain.judge.decision.v1`: what the judge decided, written back after.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeDecision {
    pub schema_version: DecisionVersion,
    pub workspace_id: String,
    #[serde(deserialize_with = "nullable")]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub task_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub flow_id: Option<String>,
    pub action_id: String,
    pub decision_id: String,
    pub idempotency_key: String,
    pub decision: JudgeVerdict,
    pub reasoning_summary: String,
    pub confidence: Confidence,
    pub judge: Judge,
    pub checks: Checks,
    pub required_revision: RequiredRevision,
    pub escalation: Escalation,
    pub memory_used: Vec<MemoryUse>,
    pub memory_to_write: MemoryToWrite,
    pub provenance: DecisionProvenance,
}

/// The judge's outcome. On the exec boundary: allow is ALLOW, block is STOP,
/// revise and escalate are HOLD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeVerdict {
    Allow,
    Block,
    Revise,
    Escalate,
}

impl JudgeVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            JudgeVerdict::Allow => "allow",
            JudgeVerdict::Block => "block",
            JudgeVerdict::Revise => "revise",
            JudgeVerdict::Escalate => "escalate",
        }
    }

    /// The boundary verdict this judge outcome stands for.
    pub fn verdict(self) -> praxis_policy::Verdict {
        match self {
            JudgeVerdict::Allow => praxis_policy::Verdict::Allow,
            JudgeVerdict::Block => praxis_policy::Verdict::Stop,
            JudgeVerdict::Revise | JudgeVerdict::Escalate => praxis_policy::Verdict::Hold,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    pub kind: JudgeKind,
    #[serde(deserialize_with = "nullable")]
    pub provider: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub model: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub policy_version: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeKind {
    Llm,
    Rule,
    Hybrid,
    Human,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckResult {
    Pass,
    Fail,
    Uncertain,
    NotApplicable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    pub authorization_check: CheckResult,
    pub evidence_check: CheckResult,
    pub policy_check: CheckResult,
    pub sensitivity_check: CheckResult,
    pub reversibility_check: CheckResult,
    pub quality_check: CheckResult,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredRevision {
    #[serde(deserialize_with = "nullable")]
    pub summary: Option<String>,
    pub revised_action_constraints: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    pub required: bool,
    #[serde(deserialize_with = "nullable")]
    pub reason: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub owner: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub due_at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryUse {
    pub memory_id: String,
    pub used_as: UsedAs,
}

/// How a decision used a memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsedAs {
    Instruction,
    Evidence,
    Background,
}

impl UsedAs {
    pub fn as_str(self) -> &'static str {
        match self {
            UsedAs::Instruction => "instruction",
            UsedAs::Evidence => "evidence",
            UsedAs::Background => "background",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryToWrite {
    pub decisions: Vec<String>,
    pub lessons: Vec<String>,
    pub failures: Vec<String>,
    pub constraints: Vec<String>,
    pub open_questions: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionProvenance {
    pub default_status: WriteStatus,
    pub requires_review: bool,
}

/// The provenance a write-back may claim for what it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteStatus {
    Observed,
    Inferred,
    Generated,
    UserConfirmed,
}

impl Contract for JudgeDecision {
    const SCHEMA_VERSION: &'static str = "openbrain.judge.decision.v1";

    fn check(&self) -> Result<(), ContractError> {
        non_empty("workspace_id", &self.workspace_id)?;
        non_empty("action_id", &self.action_id)?;
        non_empty("decision_id", &self.decision_id)?;
        non_empty("idempotency_key", &self.idempotency_key)?;
        for (i, used) in self.memory_used.iter().enumerate() {
            non_empty(&format!("memory_used[{i}].memory_id"), &used.memory_id)?;
        }
        Ok(())
    }
}

//! `praxis-run judge --proposal FILE`: an OpenBrain action proposal
//! (`openbrain.judge.action_proposal.v1`) judged by praxisd through the
//! same pipeline as every command, answered as a judge decision
//! (`openbrain.judge.decision.v1`). The mapping is pure; asking the daemon
//! is the caller's.

use praxis_memory::contract::{
    ActionProposal, CheckResult, Checks, Confidence, DecisionProvenance, DecisionVersion,
    Escalation, Judge, JudgeDecision, JudgeKind, JudgeVerdict, MemoryToWrite, MemoryUse,
    RequiredRevision, RiskClass, ToolKind, UsedAs, WriteStatus,
};
use praxis_memory::intake::{IntakeError, IntakeLimits, screen_proposal};
use praxis_proto::{Command, DecisionFrame, FileAccess, Subject, Verdict};

/// What praxisd judges for a proposal: the command given beside it, or what
/// its tool does to `action.target` (a shell tool's command line, a file
/// tool's path, a browser or API tool's URL); any other tool by its name.
pub fn subject(proposal: &ActionProposal, command: Option<Command>) -> Subject {
    let target = proposal.action.target.clone();
    match (command, proposal.tool.kind, target) {
        (Some(command), _, _) => Subject::Command { command },
        (None, ToolKind::Shell, Some(line)) => Subject::Command {
            command: Command::Shell(line),
        },
        (None, ToolKind::File, Some(path)) => Subject::File {
            path,
            access: if proposal.action.risk_class == RiskClass::ReadOnly {
                FileAccess::Read
            } else {
                FileAccess::Write
            },
        },
        (None, ToolKind::Browser | ToolKind::Api, Some(url))
            if url.starts_with("http://") || url.starts_with("https://") =>
        {
            Subject::Fetch { url }
        }
        // The proposal carries a digest of the arguments, not the arguments:
        // an approval binds that digest.
        _ => Subject::Tool {
            name: proposal.tool.name.clone(),
            arguments: Some(proposal.action.arguments_digest.clone()),
        },
    }
}

/// Refuses a proposal that carries secret-like data (the built-in redaction
/// rules recognise it, or the proposal says so) or transcript-sized text:
/// such a proposal is not sent on, and the error names the field.
pub fn screened(proposal: &ActionProposal) -> Result<(), IntakeError> {
    let redactor = praxis_policy::redact::builtin_config()
        .and_then(|config| praxis_policy::redact::Redactor::new(&config))
        .map_err(|e| IntakeError::Unreadable(format!("the redaction rules: {e}")))?;
    let is_secret = |text: &str| redactor.redact_str(text) != text;
    screen_proposal(proposal, &is_secret, &IntakeLimits::default())
}

/// What the proposal itself declares that no rule may wave through:
/// production access (secret-like data is refused before it is judged, by
/// [`screened`]). Such a proposal is escalated even when the policy allows
/// its action.
fn declared_sensitive(proposal: &ActionProposal) -> Option<&'static str> {
    proposal
        .sensitivity
        .contains_production_system_access
        .then_some("the proposal declares production system access")
}

/// The judge decision for `proposal`, from praxisd's decision on it (or why
/// there is none: then it is escalated, as every failure is a HOLD).
pub fn decision(
    proposal: &ActionProposal,
    judged: Result<&DecisionFrame, String>,
) -> JudgeDecision {
    let sensitive = declared_sensitive(proposal);
    let (verdict, reason, frame) = match judged {
        Ok(frame) => match (frame.decision, sensitive) {
            (Verdict::Allow, Some(why)) => (
                JudgeVerdict::Escalate,
                format!("{}; but {why}", frame.reason),
                Some(frame),
            ),
            (Verdict::Allow, None) => (JudgeVerdict::Allow, frame.reason.clone(), Some(frame)),
            (Verdict::Hold, _) => (JudgeVerdict::Escalate, frame.reason.clone(), Some(frame)),
            (Verdict::Stop, _) => (JudgeVerdict::Block, frame.reason.clone(), Some(frame)),
        },
        Err(why) => (JudgeVerdict::Escalate, why, None),
    };
    let policy_check = match frame.map(|f| f.decision) {
        Some(Verdict::Allow) => CheckResult::Pass,
        Some(Verdict::Stop) => CheckResult::Fail,
        Some(Verdict::Hold) | None => CheckResult::Uncertain,
    };
    let escalated = verdict == JudgeVerdict::Escalate;
    JudgeDecision {
        schema_version: DecisionVersion::V1,
        workspace_id: proposal.workspace_id.clone(),
        project_id: proposal.project_id.clone(),
        task_id: proposal.task_id.clone(),
        flow_id: proposal.flow_id.clone(),
        action_id: proposal.action_id.clone(),
        decision_id: frame.map_or_else(
            || format!("praxis-unjudged-{}", proposal.action_id),
            |f| format!("praxis-{}", f.request_id),
        ),
        idempotency_key: proposal.idempotency_key.clone(),
        decision: verdict,
        reasoning_summary: reason.clone(),
        confidence: if frame.is_some() {
            Confidence::High
        } else {
            Confidence::Low
        },
        judge: Judge {
            kind: JudgeKind::Rule,
            provider: Some(String::from("praxis")),
            model: None,
            policy_version: frame.and_then(|f| f.policy_revision.clone()),
        },
        checks: Checks {
            authorization_check: if proposal.authorization.user_authorization_refs.is_empty() {
                CheckResult::Uncertain
            } else {
                CheckResult::Pass
            },
            evidence_check: if proposal.evidence.source_refs.is_empty() {
                CheckResult::Uncertain
            } else {
                CheckResult::Pass
            },
            policy_check,
            sensitivity_check: if sensitive.is_some() {
                CheckResult::Fail
            } else {
                CheckResult::Pass
            },
            reversibility_check: if proposal.rollback.is_reversible {
                CheckResult::Pass
            } else {
                CheckResult::Uncertain
            },
            quality_check: CheckResult::NotApplicable,
        },
        required_revision: RequiredRevision {
            summary: None,
            revised_action_constraints: Vec::new(),
        },
        escalation: Escalation {
            required: escalated,
            reason: escalated.then(|| match frame.and_then(|f| f.approve_with.as_deref()) {
                Some(approve) => format!("{reason}; an operator may approve: {approve}"),
                None => reason.clone(),
            }),
            owner: escalated.then(|| String::from("operator")),
            due_at: None,
        },
        memory_used: frame
            .map(|f| {
                f.memory_used
                    .iter()
                    .map(|m| MemoryUse {
                        memory_id: m.memory_id.clone(),
                        used_as: match m.used_as.as_str() {
                            "instruction" => UsedAs::Instruction,
                            "evidence" => UsedAs::Evidence,
                            _ => UsedAs::Background,
                        },
                    })
                    .collect()
            })
            .unwrap_or_default(),
        memory_to_write: MemoryToWrite::default(),
        provenance: DecisionProvenance {
            default_status: WriteStatus::Observed,
            requires_review: false,
        },
    }
}

/// The exit status of `praxis-run judge` for a decision: 0 allow, 126
/// block, 125 anything else.
pub fn exit_code(decision: &JudgeDecision) -> i32 {
    match decision.decision {
        JudgeVerdict::Allow => 0,
        JudgeVerdict::Block => 126,
        JudgeVerdict::Revise | JudgeVerdict::Escalate => 125,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal() -> ActionProposal {
        praxis_memory::contract::parse(include_str!(
            "../../memory/tests/fixtures/action_proposal.json"
        ))
        .unwrap()
    }

    fn frame(decision: Verdict) -> DecisionFrame {
        DecisionFrame {
            request_id: String::from("r1"),
            decision,
            tier: String::from("external_side_effect"),
            reason: String::from("the rule said so"),
            rule_ids: Vec::new(),
            profile: praxis_proto::Profile::WorkspaceWrite,
            approve_with: (decision == Verdict::Hold).then(|| String::from("praxis approve r1")),
            approval_token: None,
            steer: None,
            policy_revision: Some(String::from("rev")),
            memory_used: vec![praxis_proto::MemoryUsed {
                memory_id: String::from("lesson-r0"),
                used_as: String::from("instruction"),
            }],
        }
    }

    #[test]
    fn a_proposal_with_a_secret_is_refused_naming_the_field() {
        let mut p = proposal();
        p.action.target = Some(String::from(
            "git push https://ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp@github.com/a/b",
        ));
        assert_eq!(screened(&p).unwrap_err().field(), Some("action.target"));
        let mut flagged = proposal();
        flagged.sensitivity.contains_secret_like_data = true;
        assert!(screened(&flagged).is_err());
        screened(&proposal()).unwrap();
    }

    #[test]
    fn a_shell_proposal_is_judged_as_its_command_line_and_a_file_one_on_its_path() {
        let mut p = proposal();
        p.action.target = Some(String::from("git push origin feature/login"));
        assert_eq!(
            subject(&p, None),
            Subject::Command {
                command: Command::Shell(String::from("git push origin feature/login"))
            }
        );
        p.tool.kind = ToolKind::File;
        p.action.target = Some(String::from("src/main.rs"));
        assert!(matches!(
            subject(&p, None),
            Subject::File {
                access: FileAccess::Write,
                ..
            }
        ));
        p.tool.kind = ToolKind::Message;
        assert_eq!(
            subject(&p, None),
            Subject::Tool {
                name: String::from("shell"),
                arguments: Some(p.action.arguments_digest.clone()),
            }
        );
    }

    #[test]
    fn verdicts_map_to_the_decision_contract_and_declared_production_access_escalates() {
        let p = proposal();
        let allowed = decision(&p, Ok(&frame(Verdict::Allow)));
        assert_eq!(allowed.decision, JudgeVerdict::Allow);
        assert_eq!(allowed.decision_id, "praxis-r1");
        assert_eq!(allowed.memory_used[0].used_as, UsedAs::Instruction);
        assert_eq!(exit_code(&allowed), 0);
        let held = decision(&p, Ok(&frame(Verdict::Hold)));
        assert_eq!(held.decision, JudgeVerdict::Escalate);
        assert!(held.escalation.required);
        assert!(
            held.escalation
                .reason
                .unwrap()
                .contains("praxis approve r1")
        );
        assert_eq!(
            decision(&p, Ok(&frame(Verdict::Stop))).decision,
            JudgeVerdict::Block
        );
        let unreachable = decision(&p, Err(String::from("no daemon")));
        assert_eq!(unreachable.decision, JudgeVerdict::Escalate);
        assert_eq!(exit_code(&unreachable), 125);

        let mut production = proposal();
        production.sensitivity.contains_production_system_access = true;
        let escalated = decision(&production, Ok(&frame(Verdict::Allow)));
        assert_eq!(escalated.decision, JudgeVerdict::Escalate);
        assert_eq!(escalated.checks.sensitivity_check, CheckResult::Fail);
    }
}

//! An agent may not approve its own actions: praxisd refuses a judged tool
//! call whose text, as the agent wrote it, calls the operator CLI or carries
//! an approval token, whichever client relays it.

mod common;

use std::fs::File;

use common::Daemon;
use praxis_proto::{Command, DecisionFrame, JudgeRequest, Subject, Verdict};

/// Sends `request` to praxisd as a client of its own would.
fn judge(d: &Daemon, request: JudgeRequest) -> DecisionFrame {
    let cwd = File::open(&request.cwd).unwrap();
    d.judge_raw(request, &cwd)
}

/// `ls`, asked for by an attended runtime whose agent wrote `text`.
fn ls_written_as(d: &Daemon, text: &str) -> JudgeRequest {
    JudgeRequest {
        subject: Subject::Command {
            command: Command::Argv(vec![String::from("ls")]),
        },
        cwd: d.work().display().to_string(),
        role: None,
        session: Some(String::from("sess-1")),
        runtime: Some(String::from("claude-code")),
        tool_call_id: Some(String::from("call-1")),
        tool: Some(String::from("Bash")),
        env: Vec::new(),
        attended: true,
        runs_through_praxis_run: true,
        agent_text: Some(text.to_owned()),
    }
}

#[test]
fn a_call_carrying_a_token_or_the_operator_cli_is_stop_whoever_relays_it() {
    let d = Daemon::start();
    let plain = judge(&d, ls_written_as(&d, "praxis-run -c ls"));
    assert_eq!(plain.decision, Verdict::Allow, "{}", plain.reason);

    for text in [
        "praxis-run --approval-token pxa-0123456789 -c ls",
        "ls; praxis approve r-1",
    ] {
        let frame = judge(&d, ls_written_as(&d, text));
        assert_eq!(frame.decision, Verdict::Stop, "{text}: {}", frame.reason);
        assert!(
            frame.reason.contains("may not approve its own actions"),
            "{}",
            frame.reason
        );
        assert_eq!(frame.approval_token, None);
        assert_eq!(frame.approve_with, None);
        let stopped = d.events_of_kind("hook_stopped");
        assert!(
            stopped
                .iter()
                .any(|e| e["detail"]["request_id"] == frame.request_id.as_str()
                    && e["decision"] == "STOP"),
            "no hook_stopped record for {}: {stopped:?}",
            frame.request_id
        );
    }
}

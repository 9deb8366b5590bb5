//! The undo plan of each command in `data/undo.toml`: what must be saved
//! before it runs for `praxis undo` to put it back.

use praxis_policy::engine::example_context;
use praxis_policy::{CommandText, Policy, Request, Undo};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    command: String,
    #[serde(default)]
    paths: Vec<String>,
    workspace: Option<String>,
    #[serde(default)]
    stash: bool,
    #[serde(default)]
    opaque: bool,
}

#[derive(Deserialize)]
struct Cases {
    case: Vec<Case>,
}

fn undo_of(policy: &Policy, command: &str) -> Undo {
    let request = Request {
        command: CommandText::Shell(command),
        role: "agent",
    };
    let analysis = policy.analyze(&request);
    policy
        .decide(&request, &analysis, &example_context::context())
        .undo
}

#[test]
fn each_command_asks_for_exactly_what_it_loses() {
    let policy = Policy::builtin().unwrap();
    let cases: Cases = toml::from_str(include_str!("data/undo.toml")).unwrap();
    let mut failures = Vec::new();
    for case in &cases.case {
        let expected = Undo {
            paths: case.paths.clone(),
            workspace: case.workspace.as_deref().map(|w| match w {
                "tracked" => false,
                "with_ignored" => true,
                other => panic!(
                    "{}: workspace is tracked or with_ignored, not {other}",
                    case.command
                ),
            }),
            git_stash: case.stash,
            opaque: case.opaque,
        };
        let got = undo_of(&policy, &case.command);
        if got != expected {
            failures.push(format!(
                "{}\n  expected {expected:?}\n  got      {got:?}",
                case.command
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

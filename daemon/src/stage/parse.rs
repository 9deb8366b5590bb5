//! The parse stage: the request's command as the policy sees it, parsed into
//! simple commands (phase one of the policy's two-phase decision).

use praxis_policy::{Analysis, CommandText, Policy, Request};
use praxis_proto::{Command, ExecRequest};

/// Why a request could not even be parsed into something to judge.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("empty command")]
    Empty,
    #[error("argument {0} contains a NUL byte")]
    Nul(usize),
}

/// The policy's view of a request.
pub fn policy_request<'a>(request: &'a ExecRequest, role: &'a str) -> Request<'a> {
    let command = match &request.command {
        Command::Argv(argv) => CommandText::Argv(argv),
        Command::Shell(script) => CommandText::Shell(script),
    };
    Request { command, role }
}

/// Checks the request is executable at all, then parses it.
pub fn analyze(policy: &Policy, request: &ExecRequest, role: &str) -> Result<Analysis, ParseError> {
    match &request.command {
        Command::Argv(argv) if argv.is_empty() || argv[0].is_empty() => {
            return Err(ParseError::Empty);
        }
        Command::Argv(argv) => {
            if let Some(i) = argv.iter().position(|a| a.contains('\0')) {
                return Err(ParseError::Nul(i));
            }
        }
        Command::Shell(script) if script.trim().is_empty() => return Err(ParseError::Empty),
        Command::Shell(script) if script.contains('\0') => return Err(ParseError::Nul(0)),
        Command::Shell(_) => {}
    }
    Ok(policy.analyze(&policy_request(request, role)))
}

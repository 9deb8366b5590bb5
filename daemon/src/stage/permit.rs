//! The permit stage: what would run if the decision stands or an approval
//! lifts it. The argv (a shell script runs under the configured shell,
//! reading none of the user's startup files), the environment a client may
//! forward (with the resolved `PATH` when it sent none), and the timeout and
//! output cap of the policy's limits. The pipeline seals these into the
//! [`Permit`](crate::gate::Permit), which only it can make.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use praxis_policy::Policy;
use praxis_proto::Command;

/// What a permit runs, and under which limits.
#[derive(Debug)]
pub struct Parts {
    pub argv: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    pub output_cap: u64,
}

/// The parts of the permit for `command`, as the request asked (`env`,
/// `timeout_secs`) within what `policy` allows; `path_var` is the `PATH`
/// the preconditions resolved programs on.
pub fn assemble(
    policy: &Policy,
    shell: &Path,
    command: Command,
    env: Vec<(String, String)>,
    timeout_secs: Option<u64>,
    path_var: OsString,
) -> Parts {
    let limits = policy.limits();
    let requested = timeout_secs
        .unwrap_or(limits.timeout_secs)
        .min(limits.timeout_secs);
    let argv = match command {
        Command::Argv(argv) => argv.into_iter().map(OsString::from).collect(),
        Command::Shell(script) => std::iter::once(shell.as_os_str().to_owned())
            .chain(policy.no_rc_options(shell).iter().map(OsString::from))
            .chain([OsString::from("-c"), OsString::from(script)])
            .collect(),
    };
    let mut env: Vec<(OsString, OsString)> = env
        .into_iter()
        .filter(|(k, _)| praxis_policy::env::forwarded(k))
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push((OsString::from("PATH"), path_var));
    }
    Parts {
        argv,
        env,
        timeout: Duration::from_secs(requested.max(1)),
        output_cap: limits.output_cap_bytes,
    }
}

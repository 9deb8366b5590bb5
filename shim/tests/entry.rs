//! praxis-run's own entry point keeps what the Rust runtime's start-up did.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

/// A closed stdout is an error the client handles, not a `SIGPIPE` death:
/// `praxis-run --help | head -0` exits 0.
#[test]
fn a_closed_stdout_is_an_error_not_a_death() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(env!("CARGO_BIN_EXE_praxis-run"))
        .arg("--help")
        .stdout(writer)
        .status()
        .unwrap();
    assert_eq!((status.code(), status.signal()), (Some(0), None));
}

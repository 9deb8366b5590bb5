//! How the operator commands print praxisd's replies and map them to exit
//! statuses; shared by `operator` and the commands it dispatches to
//! (memory, session, undo), below all of them.

use praxis_proto::{Layout, Mode, OperatorReply, OperatorRequest};

use crate::client::{self, ClientError};

/// Exit status when the daemon cannot be asked.
const EXIT_UNREACHABLE: i32 = 125;

pub(crate) fn report(e: &ClientError) -> i32 {
    eprintln!("praxis: {e}");
    if let ClientError::Unreachable { .. } = e
        && Layout::detect().mode == Mode::System
    {
        eprintln!(
            "praxis: praxisd is a system service here: start it with `systemctl start praxisd`"
        );
    }
    EXIT_UNREACHABLE
}

/// Sends one request; prints `Done`/`Refused` and maps them to 0/1.
pub(crate) fn simple(request: OperatorRequest) -> i32 {
    answer(client::operator(request, |_| {}))
}

/// Prints a `Done`/`Refused` answer and maps it to 0/1.
pub(crate) fn answer(reply: Result<OperatorReply, ClientError>) -> i32 {
    match reply {
        Ok(OperatorReply::Done { message }) => {
            println!("{message}");
            0
        }
        Ok(OperatorReply::Refused { reason }) => {
            eprintln!("praxis: refused: {reason}");
            1
        }
        Ok(other) => {
            eprintln!("praxis: unexpected reply: {other:?}");
            1
        }
        Err(e) => report(&e),
    }
}

/// Sends one request expecting a listing; prints it with `show`.
pub(crate) fn listing(
    request: OperatorRequest,
    show: impl FnOnce(OperatorReply) -> Option<OperatorReply>,
) -> i32 {
    match client::operator(request, |_| {}) {
        Ok(OperatorReply::Refused { reason }) => {
            eprintln!("praxis: refused: {reason}");
            1
        }
        Ok(reply) => match show(reply) {
            None => 0,
            Some(other) => {
                eprintln!("praxis: unexpected reply: {other:?}");
                1
            }
        },
        Err(e) => report(&e),
    }
}

pub(crate) fn age(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s => format!("{}h", s / 3600),
    }
}

//! `praxis session list`: the sessions the control plane keeps state for.
//! (`praxis session show` is the session's audit events, read like `audit`.)

use praxis_proto::{OperatorReply, SessionInfo};
use praxis_session::SessionState;

use crate::errors;
use crate::session::Stored;
use crate::state::Daemon;

/// Every session with state, most recently active first.
pub fn list(daemon: &Daemon) -> OperatorReply {
    match daemon.sessions.list() {
        Ok(stored) => OperatorReply::Sessions {
            items: stored.into_iter().map(info).collect(),
        },
        Err(e) => OperatorReply::Refused {
            reason: errors::one_line(&e),
        },
    }
}

fn info(stored: Stored) -> SessionInfo {
    let Stored {
        state,
        cwd,
        first_ms,
        last_ms,
    } = stored;
    let SessionState {
        scope,
        actions,
        phase,
        window,
        windows,
        checkpoint,
        checkpoints,
        disabled,
        ..
    } = state;
    SessionInfo {
        runtime: scope.runtime,
        session: scope.session,
        actions,
        windows,
        checkpoints,
        phase: phase.map(|k| k.as_str().to_owned()),
        open_window: window.map(|w| w.id),
        checkpoint_pending: checkpoint.is_some(),
        disabled: disabled.iter().map(|s| s.as_str().to_owned()).collect(),
        cwd,
        first_ms,
        last_ms,
    }
}

//! `praxis session list`: the sessions the control plane keeps state for.
//! (`praxis session show` is where the session's private `/tmp` lives, then
//! its audit events, read like `audit`.)

use praxis_proto::{OperatorReply, SessionInfo};
use praxis_session::SessionState;

use crate::state::Daemon;
use crate::store::sessions::Stored;
use crate::{errors, private_tmp};

/// Where `session`'s private `/tmp` and `/var/tmp` lie on the host, whether
/// they were made yet, and the bytes they hold.
pub fn private_tmp(daemon: &Daemon, session: &str) -> OperatorReply {
    // A session's dir does not depend on the workspace.
    let dir = private_tmp::dir_for(
        &daemon.config.layout,
        Some(session),
        std::path::Path::new("/"),
    );
    let (tmp, var_tmp) = private_tmp::mounts_of(&dir);
    OperatorReply::PrivateTmp {
        tmp: tmp.display().to_string(),
        var_tmp: var_tmp.display().to_string(),
        exists: dir.is_dir(),
        bytes: private_tmp::size_of(&dir),
    }
}

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

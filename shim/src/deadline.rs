//! Deadlines: a client of praxisd never waits on it for longer than its own
//! runtime would wait on the client. A daemon that accepts a connection and
//! never answers must give a HOLD (or the runtime's deny) in bounded time, not
//! a hook timeout after which the runtime runs the tool undecided.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

/// The variable that sets the decision deadline, in seconds (`2.5` works).
pub const ENV: &str = "PRAXIS_DECISION_TIMEOUT";

/// Default decision deadline: well inside the 30 s hook timeout that
/// `praxis install` writes for Claude Code and Codex, and long enough for a
/// user-mode daemon's first start and self-test.
pub const DEFAULT: Duration = Duration::from_secs(10);

/// How long a command may keep the connection silent after its decision
/// before the client gives up on the daemon: its own time limit plus this.
pub const AFTER_LIMIT: Duration = Duration::from_secs(30);

/// Exit status when praxisd ended after the command started: it may have
/// run, partly or wholly, and the client cannot tell.
pub const EXIT_OUTCOME_UNKNOWN: i32 = 123;

/// The decision deadline in force: `PRAXIS_DECISION_TIMEOUT`, else [`DEFAULT`].
/// A value that is not a positive number of seconds falls back to the default.
pub fn decision() -> Duration {
    std::env::var(ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT, |s| Duration::from_secs_f64(s.min(86_400.0)))
}

/// A watchdog over a whole client process: unless disarmed (dropped) within
/// `limit`, it runs `expire` on its own thread. `expire` answers for the
/// process and exits it, so nothing the main thread is stuck in (a connect, a
/// lock, a read) can make the process outlive its caller's timeout.
#[must_use = "the watchdog is disarmed when dropped"]
pub struct Watchdog {
    disarm: mpsc::Sender<()>,
}

impl Watchdog {
    pub fn arm(limit: Duration, expire: impl FnOnce() + Send + 'static) -> Watchdog {
        let (disarm, disarmed) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = disarmed.recv_timeout(limit) {
                expire();
            }
        });
        Watchdog { disarm }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.disarm.send(());
    }
}

/// Whether the process has answered its caller yet.
static ANSWERED: Mutex<bool> = Mutex::new(false);

/// Writes the process's one answer: the first caller (the main thread or the
/// watchdog) prints; a later one finds it done and returns false.
pub fn answer_once(print: impl FnOnce()) -> bool {
    let mut answered = ANSWERED.lock().unwrap_or_else(|e| e.into_inner());
    if *answered {
        return false;
    }
    print();
    *answered = true;
    true
}

//! Deadlines: a client of praxisd never waits on it for longer than its own
//! runtime would wait on the client. A daemon that accepts a connection and
//! never answers must give a HOLD (or the runtime's deny) in bounded time, not
//! a hook timeout after which the runtime runs the tool undecided.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

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

/// The hook timeout `praxis install` writes for Claude Code and Codex: the
/// runtime stops waiting for the hook then.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest decision deadline such a hook may wait: its timeout less the
/// hook watchdog's slack and the time to start and answer.
pub const HOOK_DECISION_MAX: Duration = Duration::from_secs(25);

/// A ceiling on the decision deadline for the rest of the process, set once,
/// and when it was set: a capped process answers within the ceiling counted
/// from then, however many requests it makes.
static CAP: OnceLock<(Duration, Instant)> = OnceLock::new();

/// The shortest wait a request is given, so a spent budget still sets a
/// bound (a zero socket timeout means none).
const LEAST_WAIT: Duration = Duration::from_millis(1);

/// The deadline asked for: `PRAXIS_DECISION_TIMEOUT`, else [`DEFAULT`]. A
/// value that is not a positive number of seconds falls back to the default.
fn requested() -> Duration {
    std::env::var(ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT, |s| Duration::from_secs_f64(s.min(86_400.0)))
}

/// The decision deadline in force: the one asked for, under the cap if one is set.
pub fn decision() -> Duration {
    let asked = requested();
    CAP.get().map_or(asked, |(cap, _)| asked.min(*cap))
}

/// How long the next request may wait for a decision: the deadline in
/// force, less what a capped process has spent since the cap was set.
pub fn decision_left() -> Duration {
    match CAP.get() {
        Some((_, since)) => decision().saturating_sub(since.elapsed()).max(LEAST_WAIT),
        None => decision(),
    }
}

/// Caps the decision deadline at `max` for the rest of the process; returns
/// the deadline asked for when the cap cut it, for the caller to warn.
pub fn cap(max: Duration) -> Option<Duration> {
    let (max, _) = *CAP.get_or_init(|| (max, Instant::now()));
    let asked = requested();
    (asked > max).then_some(asked)
}

/// Whether the process has answered its caller yet. An atomic, not a lock:
/// the alarm's signal handler reads it too.
static ANSWERED: AtomicBool = AtomicBool::new(false);

/// Writes the process's one answer: the first caller (the main thread or a
/// watchdog) prints; a later one finds it done and returns false.
pub fn answer_once(print: impl FnOnce()) -> bool {
    if ANSWERED.swap(true, Ordering::SeqCst) {
        return false;
    }
    print();
    true
}

/// What a process says when its deadline passes: the bytes for stdout and
/// stderr, and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastWord {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: i32,
}

/// The last word the alarm says; replaced (the old one leaked, as the
/// handler may be reading it) when the caller knows better.
static LAST_WORD: AtomicPtr<LastWord> = AtomicPtr::new(std::ptr::null_mut());

#[derive(Debug, thiserror::Error)]
pub enum AlarmError {
    #[error("cannot install the deadline's signal handler: {0}")]
    Handler(nix::Error),
    #[error("cannot start the deadline's timer: {0}")]
    Timer(std::io::Error),
}

/// A watchdog over a whole single-threaded process that costs no thread (a
/// thread's start-up is a good part of a hook's whole run): a one-shot
/// `SIGALRM` timer whose handler, unless the process answered already,
/// writes the [`LastWord`] rendered in advance and exits with its code.
/// Disarmed when dropped.
#[must_use = "the alarm is disarmed when dropped"]
pub struct Alarm(());

impl Alarm {
    pub fn arm(limit: Duration, last_word: LastWord) -> Result<Alarm, AlarmError> {
        Alarm::say(last_word);
        let action = SigAction::new(
            SigHandler::Handler(on_alarm),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        // SAFETY: the handler only reads atomics and the leaked LastWord,
        // and calls write(2) and _exit(2), which are async-signal-safe.
        unsafe { sigaction(Signal::SIGALRM, &action) }.map_err(AlarmError::Handler)?;
        // A mask inherited from the caller must not hold the alarm back.
        let mut alarm = SigSet::empty();
        alarm.add(Signal::SIGALRM);
        alarm.thread_unblock().map_err(AlarmError::Handler)?;
        set_timer(limit).map_err(AlarmError::Timer)?;
        Ok(Alarm(()))
    }

    /// Replaces what the alarm says (once the caller knows the shape its
    /// answer must take).
    pub fn say(last_word: LastWord) {
        LAST_WORD.store(Box::into_raw(Box::new(last_word)), Ordering::SeqCst);
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        let _ = set_timer(Duration::ZERO);
    }
}

/// Starts (or, with zero, stops) the process's one-shot real-time timer.
fn set_timer(after: Duration) -> std::io::Result<()> {
    let value = libc::timeval {
        tv_sec: libc::time_t::try_from(after.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_usec: libc::suseconds_t::from(after.subsec_micros()),
    };
    let timer = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: value,
    };
    // SAFETY: both pointers are valid for the call (the old value is not asked for).
    let rc = unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

extern "C" fn on_alarm(_: libc::c_int) {
    if ANSWERED.swap(true, Ordering::SeqCst) {
        // The process answered; it is on its way out.
        return;
    }
    // SAFETY: LAST_WORD is set before the handler is installed and only ever
    // to a leaked Box, never freed.
    let code = match unsafe { LAST_WORD.load(Ordering::SeqCst).as_ref() } {
        Some(word) => {
            write_all(libc::STDOUT_FILENO, &word.stdout);
            write_all(libc::STDERR_FILENO, &word.stderr);
            word.code
        }
        None => 125,
    };
    // SAFETY: _exit is async-signal-safe and ends the process at once.
    unsafe { libc::_exit(code) }
}

/// write(2) until all of `bytes` is written or the descriptor fails.
fn write_all(fd: libc::c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length describe the live slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        match usize::try_from(n) {
            Ok(0) => return,
            Ok(n) => bytes = &bytes[n..],
            Err(_) if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
            }
            Err(_) => return,
        }
    }
}

//! The session control plane's glue: praxisd's side of `praxis-session`.
//!
//! Each hook event (judge requests and notes) and each `praxis-run` request
//! that names a session becomes one [`HookEvent`], with Praxis' own judgment
//! of the action attached. The pure detector turns it into transitions; this
//! module audits every one of them (kind `session_<transition>`, in the hash
//! chain), persists the session's state, and hands the steer (and a method
//! block) back to the caller, who delivers it through the runtime's channel.
//!
//! State is kept per runtime and session id, one JSON file per session in
//! `<state dir>/sessions/`, named by the SHA-256 of the key. The state a
//! boundary leaves is the checkpoint record (a typed snapshot).
//!
//! Learned baselines (R8): every window a session finishes is taught to the
//! ledger `<state dir>/session-baselines.json` under the session's lineage
//! (workspace and role). A session is seeded at its first judged action,
//! once, from what its lineage taught so far; the seed is audited.
//!
//! Fail open (R12): a session policy that does not load, a state file that
//! cannot be read or written, or a detector that panics never stops work;
//! each is audited as `session_failed` and the action goes on unsteered.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use praxis_policy::Tier;
use praxis_proto::{Command, FileAccess, Subject, Verdict};
use praxis_session::{
    Detector, EventKind as Doorway, HookEvent, Judgment, Ledger, Lineage, Outcome, ScopeKey,
    SessionPolicy, SessionState, Status, Transition,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::clock;
use crate::config::Config;
use crate::store::audit::{Appended, AuditError, AuditStore, Durability, Event, EventKind, Queued};

/// The operator's session policy inside the config directory, laid over the shipped one.
pub const SESSION_POLICY_FILE: &str = "session.toml";
/// Where session states live inside the state directory.
pub const SESSIONS_DIR: &str = "sessions";
/// The ledger of finished windows that new sessions learn from, in the state directory.
pub const LEDGER_FILE: &str = "session-baselines.json";
/// How many sessions stay live in memory; the least recently active one beyond
/// this is dropped from memory and read back from its state file when it returns.
pub const LIVE_SESSIONS: usize = 1024;
/// Rule id of a refusal by a role's method rule.
pub const METHOD_RULE_PREFIX: &str = "session.method.";

#[derive(Debug, Error)]
pub enum SessionError {
    #[error("session policy: {0}")]
    Policy(String),
    #[error("session state {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("session state {path} is not valid: {source}")]
    Corrupt {
        path: String,
        source: serde_json::Error,
    },
    #[error("the detector failed on this event: {0}")]
    Panicked(String),
}

/// A session's state as stored: the detector's state and where it worked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stored {
    pub state: SessionState,
    /// The working directory of the session's last action, for listing.
    #[serde(default)]
    pub cwd: Option<String>,
    /// When the session was first and last seen (ms since the epoch).
    pub first_ms: u64,
    pub last_ms: u64,
}

/// The audit events of one session step, handed to the writer: an action's
/// own record first, when it came with one.
#[must_use = "the appends count only once their commits are known"]
pub struct Appends {
    queued: Queued,
    has_first: bool,
}

impl Appends {
    pub fn queue(
        audit: &AuditStore,
        first: Option<(Event, Durability)>,
        events: Vec<Event>,
    ) -> Appends {
        let has_first = first.is_some();
        let batch = first
            .into_iter()
            .chain(events.into_iter().map(|e| (e, Durability::Normal)))
            .collect();
        Appends {
            queued: audit.queue_all(batch),
            has_first,
        }
    }

    /// Waits for every commit and logs a session event's failure; returns
    /// the outcome of the action's own record.
    pub async fn committed(self) -> Option<Result<Appended, AuditError>> {
        let mut outcomes = self.queued.committed().await.into_iter();
        let first = if self.has_first {
            outcomes.next()
        } else {
            None
        };
        for outcome in outcomes {
            if let Err(e) = outcome {
                tracing::error!("audit of a session event failed: {e}");
            }
        }
        first
    }
}

/// What the caller must do with one event's outcome.
#[must_use]
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Advisory text for the agent.
    pub steer: Option<String>,
    /// A method rule refuses the action, with this text.
    pub block: Option<(String, String)>,
}

/// One event's transitions, and a failure of the ledger that did not stop them.
struct Stepped {
    outcome: Outcome,
    ledger: Option<SessionError>,
}

/// The detector and the session states.
pub struct Sessions {
    detector: Result<Detector, String>,
    dir: PathBuf,
    ledger: PathBuf,
    /// Live session states by state file, at most [`LIVE_SESSIONS`]. One
    /// event at a time: load, seed, observe and teach are one step under
    /// this lock (the ledger is shared by every session).
    live: Mutex<HashMap<PathBuf, Stored>>,
    /// The write-behind queue: states are saved after the reply, the latest
    /// of each session, by one writer thread.
    writes: mpsc::Sender<Write>,
    /// Whether that thread runs.
    writer_runs: bool,
    /// States stepped and not yet handed to the writer: handing one over
    /// wakes its thread, which the reply should not wait for, so the server
    /// hands them over once the reply is out ([`Sessions::hand_over`]).
    outbox: Mutex<Vec<(PathBuf, Box<Stored>)>>,
}

/// One job of the writer thread.
enum Write {
    State(PathBuf, Box<Stored>),
    /// Answered once every write queued before it is on disk.
    Flush(mpsc::Sender<()>),
}

/// How long a queued state waits for later ones: a burst of events (a hook
/// per tool call) costs one file write per session, not one each (renaming
/// over the old file is most of a hook's work on the writer's core).
const SAVE_DELAY: Duration = Duration::from_millis(50);

/// Saves the latest queued state of each session [`SAVE_DELAY`] after the
/// first one was queued, at once on a flush and when the queue closes. A
/// failure is logged (the event was audited and answered already), and the
/// next save of that session rewrites it whole.
fn write_behind(dir: &Path, queue: &mpsc::Receiver<Write>) {
    // The latest state per file, and when the oldest of them was queued.
    let mut pending: Vec<(PathBuf, Box<Stored>)> = Vec::new();
    let mut since = Instant::now();
    loop {
        let job = if pending.is_empty() {
            queue.recv().ok()
        } else {
            let left = (since + SAVE_DELAY).saturating_duration_since(Instant::now());
            match queue.recv_timeout(left) {
                Ok(job) => Some(job),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    save_all(dir, &mut pending);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => None,
            }
        };
        match job {
            Some(Write::State(path, stored)) => {
                if pending.is_empty() {
                    since = Instant::now();
                }
                match pending.iter_mut().find(|(queued, _)| *queued == path) {
                    Some(slot) => slot.1 = stored,
                    None => pending.push((path, stored)),
                }
            }
            Some(Write::Flush(done)) => {
                save_all(dir, &mut pending);
                let _ = done.send(());
            }
            None => {
                save_all(dir, &mut pending);
                return;
            }
        }
    }
}

fn save_all(dir: &Path, pending: &mut Vec<(PathBuf, Box<Stored>)>) {
    for (path, stored) in pending.drain(..) {
        if let Err(e) = write_json(dir, &path, &stored) {
            tracing::error!("session state not saved: {e}");
        }
    }
}

impl Sessions {
    /// The shipped session policy with the operator's `session.toml` over it.
    pub fn open(config: &Config) -> Sessions {
        let detector = load_policy(&config.config_dir().join(SESSION_POLICY_FILE));
        if let Err(why) = &detector {
            tracing::error!("session control plane off: {why}");
        }
        let dir = config.layout.state_dir.join(SESSIONS_DIR);
        let (writes, queue) = mpsc::channel();
        let writer_dir = dir.clone();
        // The thread ends when the queue's sender (these Sessions) is dropped.
        let writer_runs = match std::thread::Builder::new()
            .name("session-writer".into())
            .spawn(move || write_behind(&writer_dir, &queue))
        {
            Ok(_) => true,
            Err(e) => {
                tracing::error!("session states will not be saved: {e}");
                false
            }
        };
        Sessions {
            detector,
            dir,
            ledger: config.layout.state_dir.join(LEDGER_FILE),
            live: Mutex::new(HashMap::new()),
            writes,
            writer_runs,
            outbox: Mutex::new(Vec::new()),
        }
    }

    /// Hands the states stepped so far to the writer thread, which saves
    /// them [`SAVE_DELAY`] later. Called once a request's reply is out.
    pub fn hand_over(&self) {
        let states =
            std::mem::take(&mut *self.outbox.lock().unwrap_or_else(PoisonError::into_inner));
        for (path, stored) in states {
            if self.writes.send(Write::State(path, stored)).is_err() {
                tracing::error!("session state not saved: the session writer is gone");
            }
        }
    }

    /// Waits until every state stepped so far is on disk, so that reading a
    /// state file never sees one older than the live state (and so that a
    /// daemon shutting down leaves none unsaved).
    pub fn flush(&self) {
        self.hand_over();
        let (done, wait) = mpsc::channel();
        if self.writes.send(Write::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }

    /// Feeds one event, audits its transitions and persists the state.
    /// Never fails: a failure is audited and the event goes unsteered.
    pub async fn observe(
        self: &Arc<Self>,
        audit: &AuditStore,
        redact: &Redact<'_>,
        event: HookEvent,
        request_id: Option<&str>,
    ) -> Observed {
        let (observed, appends) = self.observe_queued(audit, redact, event, request_id, None);
        // No record of its own came with it: only the step's events, whose
        // failures are logged.
        let _ = appends.committed().await;
        observed
    }

    /// [`Sessions::observe`] for an action whose own audit record, `first`,
    /// is not written yet: it is queued before the transitions' events, in
    /// one batch with them (one commit, not one each). The caller waits for
    /// the commits, before or after it answers.
    pub fn observe_queued(
        &self,
        audit: &AuditStore,
        redact: &Redact<'_>,
        mut event: HookEvent,
        request_id: Option<&str>,
        first: Option<(Event, Durability)>,
    ) -> (Observed, Appends) {
        event.at_ms = u64::try_from(clock::now_ms()).unwrap_or(0);
        let (observed, events) = self.audited_step(redact, &event, request_id);
        (observed, Appends::queue(audit, first, events))
    }

    /// One step and the audit events it leaves: its transitions, or the
    /// failure that left the event unsteered.
    fn audited_step(
        &self,
        redact: &Redact<'_>,
        event: &HookEvent,
        request_id: Option<&str>,
    ) -> (Observed, Vec<Event>) {
        // In memory and µs-fast for a live session; the file is read only
        // for a session not live, and saved behind the reply.
        let Stepped { outcome, ledger } = match self.step(event) {
            Ok(stepped) => stepped,
            Err(e) => {
                return (
                    Observed::default(),
                    vec![failed_event(event, request_id, &e)],
                );
            }
        };
        let events = ledger
            .iter()
            .map(|e| failed_event(event, request_id, e))
            .chain(
                outcome
                    .transitions
                    .iter()
                    .map(|t| transition_event(redact, event, request_id, t)),
            )
            .collect();
        let observed = Observed {
            steer: outcome.steer(),
            block: outcome.transitions.iter().find_map(|t| match t {
                Transition::Block { method, reason } => Some((method.clone(), reason.clone())),
                _ => None,
            }),
        };
        (observed, events)
    }

    /// Load, seed, observe, queue the save and teach, under the lock.
    fn step(&self, event: &HookEvent) -> Result<Stepped, SessionError> {
        let detector = self
            .detector
            .as_ref()
            .map_err(|e| SessionError::Policy(e.clone()))?;
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let path = self.path_of(&event.scope());
        let mut stored = match live.remove(&path).map_or_else(
            || {
                self.flush();
                read_json::<Stored>(&path)
            },
            |stored| Ok(Some(stored)),
        ) {
            Ok(Some(stored)) => stored,
            // This event is audited as failed; the session starts afresh
            // with the next one rather than failing on every event.
            Err(corrupt @ SessionError::Corrupt { .. }) => {
                let _ = std::fs::remove_file(&path);
                return Err(corrupt);
            }
            Err(e) => return Err(e),
            Ok(None) => Stored {
                state: SessionState::new(event.scope(), None),
                cwd: None,
                first_ms: event.at_ms,
                last_ms: event.at_ms,
            },
        };
        let mut seeded = Outcome::default();
        let mut ledger_error = None;
        if stored.state.lineage.is_none()
            && let Some(lineage) = lineage_of(event)
        {
            // An unreadable ledger seeds nothing; the session still runs on static backstops.
            let learned = match read_json::<Ledger>(&self.ledger) {
                Ok(ledger) => ledger
                    .unwrap_or_default()
                    .baseline(&lineage, &detector.policy().baseline),
                Err(e) => {
                    ledger_error = Some(e);
                    Default::default()
                }
            };
            seeded = detector.seed(&mut stored.state, lineage, learned);
        }
        let mut outcome = catch_unwind(AssertUnwindSafe(|| {
            detector.observe(&mut stored.state, event)
        }))
        .map_err(|panic| SessionError::Panicked(panic_text(&panic)))?;
        stored.last_ms = event.at_ms;
        if event.cwd.is_some() {
            stored.cwd.clone_from(&event.cwd);
        }
        self.outbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((path.clone(), Box::new(stored.clone())));
        if let Some(lineage) = &stored.state.lineage
            && let Err(e) = self.teach(detector, lineage, &outcome)
        {
            ledger_error = Some(e);
        }
        evict_idle(&mut live);
        live.insert(path.clone(), stored);
        if !self.writer_runs {
            return Err(io_error(
                &path,
                std::io::Error::other("the session writer is gone"),
            ));
        }
        seeded.transitions.append(&mut outcome.transitions);
        Ok(Stepped {
            outcome: seeded,
            ledger: ledger_error,
        })
    }

    /// Teaches the ledger the windows this event finished (read and
    /// written only when one did).
    fn teach(
        &self,
        detector: &Detector,
        lineage: &Lineage,
        outcome: &Outcome,
    ) -> Result<(), SessionError> {
        let finished: Vec<_> = outcome
            .transitions
            .iter()
            .filter_map(|t| match t {
                Transition::WindowClosed { record } | Transition::WindowExpired { record } => {
                    Some(record)
                }
                _ => None,
            })
            .filter(|record| praxis_session::teaches(record))
            .collect();
        if finished.is_empty() {
            return Ok(());
        }
        let mut ledger = match read_json::<Ledger>(&self.ledger) {
            Ok(ledger) => ledger.unwrap_or_default(),
            // A damaged ledger is started afresh: it only ever tightens budgets.
            Err(SessionError::Corrupt { .. }) => Ledger::default(),
            Err(e) => return Err(e),
        };
        for record in finished {
            let _ = ledger.teach(lineage, record, &detector.policy().baseline);
        }
        let dir = self.ledger.parent().unwrap_or(&self.dir);
        write_json(dir, &self.ledger, &ledger)
    }

    fn path_of(&self, scope: &ScopeKey) -> PathBuf {
        let mut hash = Sha256::new();
        hash.update(scope.runtime.as_bytes());
        hash.update([0]);
        hash.update(scope.session.as_bytes());
        self.dir
            .join(format!("{}.json", hex::encode(hash.finalize())))
    }

    /// Every stored session, most recently active first.
    pub fn list(&self) -> Result<Vec<Stored>, SessionError> {
        self.flush();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(io_error(&self.dir, source)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|x| x == "json")
                && let Some(stored) = read_json::<Stored>(&path)?
            {
                out.push(stored);
            }
        }
        out.sort_by(|a, b| {
            b.last_ms
                .cmp(&a.last_ms)
                .then(a.state.scope.cmp(&b.state.scope))
        });
        Ok(out)
    }
}

/// Drops the least recently active session from memory when full; its
/// state is on disk (or queued to be) and is read back when it returns.
fn evict_idle(live: &mut HashMap<PathBuf, Stored>) {
    if live.len() < LIVE_SESSIONS {
        return;
    }
    let idle = live
        .iter()
        .min_by_key(|(_, stored)| stored.last_ms)
        .map(|(path, _)| path.clone());
    if let Some(idle) = idle {
        live.remove(&idle);
    }
}

fn load_policy(path: &Path) -> Result<Detector, String> {
    let policy = match std::fs::read_to_string(path) {
        Ok(text) => SessionPolicy::with_overrides(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => SessionPolicy::shipped(),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    policy
        .and_then(Detector::new)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn io_error(path: &Path, source: std::io::Error) -> SessionError {
    SessionError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The lineage of a session's first judged action: the repository (or, outside
/// one, the working directory) it works in, and the role the daemon resolved.
fn lineage_of(event: &HookEvent) -> Option<Lineage> {
    let cwd = event.cwd.as_deref()?;
    let role = event.judgment.as_ref()?.role.clone()?;
    let workspace = Path::new(cwd)
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(Path::new(cwd));
    Some(Lineage {
        workspace: workspace.display().to_string(),
        role,
    })
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, SessionError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io_error(path, source)),
    };
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|source| SessionError::Corrupt {
            path: path.display().to_string(),
            source,
        })
}

/// Writes a state or the ledger whole or not at all: into the temporary file
/// beside it, then swapped with it in one step (`RENAME_EXCHANGE`). The
/// temporary file is the copy the last save swapped out, so a save makes
/// and frees no inode: renaming a new file over the old one did both, and
/// on ext4 that made each save cost milliseconds of CPU, most of a hook's.
fn write_json<T: Serialize>(dir: &Path, path: &Path, value: &T) -> Result<(), SessionError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io_error(dir, e))?;
    let text = serde_json::to_vec(value).map_err(|source| SessionError::Corrupt {
        path: path.display().to_string(),
        source,
    })?;
    let temp = path.with_extension("json.tmp");
    std::fs::write(&temp, text).map_err(|e| io_error(&temp, e))?;
    match renameat2(
        AT_FDCWD,
        &temp,
        AT_FDCWD,
        path,
        RenameFlags::RENAME_EXCHANGE,
    ) {
        Ok(()) => Ok(()),
        // The first save (nothing to swap with), or a file system that
        // cannot swap: a plain rename is as whole.
        Err(Errno::ENOENT | Errno::EINVAL) => {
            std::fs::rename(&temp, path).map_err(|e| io_error(path, e))
        }
        Err(e) => Err(io_error(path, e.into())),
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| String::from("panic"))
}

/// The audit kind of a transition: `session_` and its type.
pub fn audit_kind(transition: &Transition) -> String {
    let value = serde_json::to_value(transition).unwrap_or_default();
    let kind = value
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("transition");
    format!("session_{kind}")
}

fn event_of(hook: &HookEvent, request_id: Option<&str>, kind: String) -> Event {
    Event {
        request_id: request_id.map(str::to_owned),
        session: Some(hook.session.clone()),
        runtime: Some(hook.runtime.clone()),
        cwd: hook.cwd.clone(),
        ..Event::new(EventKind::Other(kind))
    }
}

/// Masks the secrets the policy knows in a text (targets can be commands).
pub type Redact<'a> = dyn Fn(&str) -> String + Sync + 'a;

fn redact_value(redact: &Redact<'_>, value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => *text = redact(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| redact_value(redact, v)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| redact_value(redact, v)),
        _ => {}
    }
}

/// The audit event of one transition.
fn transition_event(
    redact: &Redact<'_>,
    hook: &HookEvent,
    request_id: Option<&str>,
    t: &Transition,
) -> Event {
    let mut value = serde_json::to_value(t).unwrap_or_default();
    redact_value(redact, &mut value);
    let mut detail = match value {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    detail.remove("type");
    if let Some(tool) = &hook.tool {
        detail.insert("tool".into(), tool.clone().into());
    }
    detail.insert("at_ms".into(), hook.at_ms.into());
    let reason = match t {
        Transition::Steer { text, .. } => redact(text),
        Transition::Boundary { reason, .. } | Transition::Block { reason, .. } => redact(reason),
        Transition::BaselineSeeded { lineage, learned } => format!(
            "seeded for {} as {}: {}",
            redact(&lineage.workspace),
            lineage.role,
            learned.describe()
        ),
        // The rest read as their fields, so every audit row says something.
        _ => detail
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "at_ms" | "tool"))
            .map(|(k, v)| match v {
                serde_json::Value::String(text) => format!("{k}={text}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
    };
    Event {
        reason: Some(reason),
        // The action the transition came with, as the audit tail's command.
        argv_redacted: hook.target.as_deref().map(|target| vec![redact(target)]),
        detail: Some(detail),
        ..event_of(hook, request_id, audit_kind(t))
    }
}

/// The audit event of a failure that left an event unsteered (logged too).
fn failed_event(hook: &HookEvent, request_id: Option<&str>, e: &SessionError) -> Event {
    tracing::warn!("session control plane: {e}");
    Event {
        reason: Some(crate::errors::one_line(e)),
        ..event_of(hook, request_id, String::from("session_failed"))
    }
}

/// Praxis' judgment of an action, from its decision.
pub fn judgment(tier: Tier, verdict: Verdict, rule_ids: &[String], role: &str) -> Judgment {
    Judgment {
        tier,
        verdict,
        // The policy's protected-path rules all name it (`write-protected`, ...).
        protected: rule_ids.iter().any(|r| r.contains("protected")),
        role: Some(role.to_owned()),
    }
}

/// A command as one target string.
pub fn command_text(command: &Command) -> String {
    match command {
        Command::Shell(text) => text.clone(),
        Command::Argv(argv) => argv.join(" "),
    }
}

/// The tool name and the one collapsed target of a judged subject.
pub fn tool_and_target(subject: &Subject, tool: Option<&str>) -> (String, Option<String>) {
    let (default, target) = match subject {
        Subject::Command { command } => ("Bash", Some(command_text(command))),
        Subject::File { path, access } => (
            match access {
                FileAccess::Read => "Read",
                FileAccess::Write => "Write",
            },
            Some(path.clone()),
        ),
        Subject::Fetch { url } => ("WebFetch", Some(url.clone())),
        Subject::Tool { name, .. } => (name.as_str(), None),
    };
    (tool.unwrap_or(default).to_owned(), target)
}

/// The event of a hook or `praxis-run` request; the time is set when observed.
pub fn event(
    scope: ScopeKey,
    kind: Doorway,
    tool: Option<String>,
    target: Option<String>,
) -> HookEvent {
    HookEvent {
        runtime: scope.runtime,
        session: scope.session,
        kind,
        tool,
        target,
        cwd: None,
        call_id: None,
        status: Status::Unknown,
        at_ms: 0,
        judgment: None,
    }
}

/// The session scope of a request: runtime (or `praxis-run`) and session, if named.
pub fn scope_of(runtime: Option<&str>, session: Option<&str>) -> Option<ScopeKey> {
    Some(ScopeKey {
        runtime: runtime.unwrap_or("praxis-run").to_owned(),
        session: session.filter(|s| !s.is_empty())?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_become_the_tool_and_one_target() {
        let command = Subject::Command {
            command: Command::Argv(vec!["git".into(), "push".into()]),
        };
        assert_eq!(
            tool_and_target(&command, None),
            ("Bash".into(), Some("git push".into()))
        );
        let write = Subject::File {
            path: "/w/src/a.rs".into(),
            access: FileAccess::Write,
        };
        // The runtime's own tool name wins: the detector tells Edit from Write.
        assert_eq!(
            tool_and_target(&write, Some("Edit")),
            ("Edit".into(), Some("/w/src/a.rs".into()))
        );
        let plan = Subject::Tool {
            name: "TodoWrite".into(),
            arguments: None,
        };
        assert_eq!(tool_and_target(&plan, None), ("TodoWrite".into(), None));
    }

    #[test]
    fn judgments_and_audit_kinds_come_from_praxis_own_decision() {
        let j = judgment(
            Tier::ReversibleWrite,
            Verdict::Hold,
            &["write-protected".into()],
            "agent",
        );
        assert!(j.protected);
        assert_eq!(j.verdict, Verdict::Hold);
        assert!(!judgment(Tier::ReadOnly, Verdict::Allow, &[], "agent").protected);
        let steer = Transition::Steer {
            signal: None,
            text: "x".into(),
        };
        assert_eq!(audit_kind(&steer), "session_steer");
        let skipped = Transition::CheckpointSkipped { checkpoint: 1 };
        assert_eq!(audit_kind(&skipped), "session_checkpoint_skipped");
    }

    #[test]
    fn a_stepped_state_goes_to_the_writer_only_once_handed_over() {
        let tmp = tempfile::tempdir().unwrap();
        let config = Config::load(praxis_proto::Layout {
            mode: praxis_proto::Mode::User,
            runtime_dir: tmp.path().join("run"),
            socket: tmp.path().join("run/s.sock"),
            state_dir: tmp.path().join("state"),
            config_dir: tmp.path().to_path_buf(),
        })
        .unwrap();
        let sessions = Sessions::open(&config);
        let scope = scope_of(Some("claude-code"), Some("s1")).unwrap();
        let step = event(
            scope.clone(),
            Doorway::PreToolUse,
            Some("Bash".into()),
            None,
        );
        sessions.step(&step).unwrap();
        let file = sessions.path_of(&scope);
        // Without the hand-over the writer never heard of it: nothing is
        // saved, however long the save delay is waited out.
        std::thread::sleep(SAVE_DELAY * 3);
        assert!(!file.exists());
        sessions.hand_over();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !file.exists() && Instant::now() < deadline {
            std::thread::sleep(SAVE_DELAY);
        }
        assert!(file.exists());
    }

    #[test]
    fn saves_swap_two_files_and_read_back_the_latest() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let temp = dir.path().join("s.json.tmp");
        let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
        write_json(dir.path(), &path, &1).unwrap();
        write_json(dir.path(), &path, &2).unwrap();
        let (state, spare) = (inode(&path), inode(&temp));
        assert_eq!(read_json::<u32>(&path).unwrap(), Some(2));
        write_json(dir.path(), &path, &3).unwrap();
        assert_eq!(read_json::<u32>(&path).unwrap(), Some(3));
        // The copy swapped out is written next: no file is made anew.
        assert_eq!((inode(&path), inode(&temp)), (spare, state));
    }

    #[test]
    fn a_corrupt_state_file_is_an_error_not_a_fresh_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(
            read_json::<Stored>(&path),
            Err(SessionError::Corrupt { .. })
        ));
        assert!(
            read_json::<Stored>(&dir.path().join("absent.json"))
                .unwrap()
                .is_none()
        );
    }
}

//! The kill switch: a file whose existence refuses all new work and ends all
//! running work. Checked with a stat on every request, and watched with
//! inotify on its parent directory so a `touch`, a rename into place and a
//! removal are all seen at once.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use crate::children::Children;
use crate::errors;
use crate::store::audit::{AuditStore, Durability, Event, EventKind, Maker};

/// Longest reason taken from the file.
const MAX_REASON: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum KillSwitchError {
    #[error("kill switch file {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("cannot watch {path}: {source}")]
    Watch { path: String, source: nix::Error },
}

/// The kill switch file, whether the daemon has acted on it, and the
/// running work it ends.
#[derive(Debug)]
pub struct KillSwitch {
    file: PathBuf,
    /// True once an engagement was audited and in-flight work ended, so the
    /// watcher, the per-request stat and `praxis kill` act exactly once.
    engaged: AtomicBool,
    /// Who is changing the file through praxisd, until the change is
    /// audited (by whichever of the handler and the watcher sees it first).
    claim: Mutex<Option<Claim>>,
    /// Why the release in progress was made, if its maker said.
    release_reason: Mutex<Option<String>>,
    running: Arc<Children>,
    /// Between SIGTERM and SIGKILL of the work it ends.
    grace: Duration,
}

/// A refusal because the switch is engaged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Engaged {
    pub reason: String,
}

impl Engaged {
    pub fn message(&self) -> String {
        format!(
            "an operator stopped all work (kill switch: {}); wait until it is released, or report this to the user; do not try another way",
            self.reason
        )
    }
}

/// Who changed the switch: the process, and the fleet operator whose
/// order it carried out.
#[derive(Debug)]
struct Claim {
    by: Maker,
    fleet_operator: Option<String>,
}

impl KillSwitch {
    pub fn new(file: PathBuf, running: Arc<Children>, grace: Duration) -> KillSwitch {
        KillSwitch {
            file,
            engaged: AtomicBool::new(false),
            claim: Mutex::new(None),
            release_reason: Mutex::new(None),
            running,
            grace,
        }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The reason in the file when it exists (first line, bounded), else None.
    pub fn current(&self) -> Option<Engaged> {
        match std::fs::read(&self.file) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let line: String = text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .chars()
                    .take(MAX_REASON)
                    .collect();
                let reason = if line.is_empty() {
                    String::from("no reason given")
                } else {
                    line
                };
                Some(Engaged { reason })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            // Present but unreadable (or any other doubt) is engaged: fail closed.
            Err(e) => Some(Engaged {
                reason: format!("kill switch file unreadable: {}", e.kind()),
            }),
        }
    }

    /// Who made the change in progress, once.
    fn take_claim(&self) -> Option<Claim> {
        self.claim
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn claim(&self, by: Maker, fleet_operator: Option<&str>) {
        *self.claim.lock().unwrap_or_else(PoisonError::into_inner) = Some(Claim {
            by,
            fleet_operator: fleet_operator.map(str::to_owned),
        });
    }

    /// Writes the file atomically (temporary file, then rename), made by
    /// `by`, on the order of `fleet_operator` when the fleet gave it.
    pub fn engage(
        &self,
        reason: &str,
        by: Maker,
        fleet_operator: Option<&str>,
    ) -> Result<(), KillSwitchError> {
        self.claim(by, fleet_operator);
        let io_err = |source| KillSwitchError::Io {
            path: self.file.display().to_string(),
            source,
        };
        let tmp = self.file.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp).map_err(io_err)?;
        writeln!(f, "{}", reason.lines().next().unwrap_or("").trim()).map_err(io_err)?;
        f.sync_all().map_err(io_err)?;
        std::fs::rename(&tmp, &self.file).map_err(io_err)
    }

    /// Removes the file, released by `by`; already absent is fine.
    pub fn release(&self, by: Maker, reason: Option<String>) -> Result<(), KillSwitchError> {
        self.claim(by, None);
        *self
            .release_reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = reason;
        match std::fs::remove_file(&self.file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(KillSwitchError::Io {
                path: self.file.display().to_string(),
                source: e,
            }),
            _ => Ok(()),
        }
    }
}

/// The kill-switch stage: a stat on every request. When it sees the file
/// before the watcher did, it also ends running work (off the async runtime,
/// since that waits out the grace).
pub fn check(switch: &Arc<KillSwitch>, audit: &Arc<AuditStore>) -> Result<(), Engaged> {
    match switch.current() {
        None => Ok(()),
        Some(engaged) => {
            if !switch.engaged.load(Ordering::SeqCst) {
                let (switch, audit) = (Arc::clone(switch), Arc::clone(audit));
                tokio::task::spawn_blocking(move || sync(&switch, &audit));
            }
            Err(engaged)
        }
    }
}

/// Acts on the file having appeared: audit once, then end every running
/// command (SIGTERM, SIGKILL after the grace). Blocking.
pub fn on_engaged(switch: &KillSwitch, audit: &AuditStore, engaged: &Engaged) {
    if switch.engaged.swap(true, Ordering::SeqCst) {
        return;
    }
    let killed = switch
        .running
        .terminate_all(&engaged.message(), switch.grace);
    let mut detail = serde_json::Map::new();
    detail.insert("killed_commands".into(), killed.into());
    detail.insert("file".into(), switch.file.display().to_string().into());
    let claim = switch.take_claim();
    if let Some(operator) = claim.as_ref().and_then(|c| c.fleet_operator.clone()) {
        detail.insert("fleet_operator".into(), operator.into());
    }
    let event = Event {
        reason: Some(engaged.reason.clone()),
        detail: Some(detail),
        ..Event::new(EventKind::Kill)
    }
    .made_by(claim.map(|c| c.by));
    if let Err(e) = audit.append(event, Durability::Full) {
        tracing::error!(
            "audit of kill switch engagement failed: {}",
            errors::one_line(&e)
        );
    }
}

/// Acts on the file having gone: audit the release once.
pub fn on_released(switch: &KillSwitch, audit: &AuditStore) {
    if !switch.engaged.swap(false, Ordering::SeqCst) {
        return;
    }
    let reason = switch
        .release_reason
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let event = Event {
        reason,
        ..Event::new(EventKind::Release)
    }
    .made_by(switch.take_claim().map(|c| c.by));
    if let Err(e) = audit.append(event, Durability::Full) {
        tracing::error!(
            "audit of kill switch release failed: {}",
            errors::one_line(&e)
        );
    }
}

/// Brings the engaged flag in line with the file, acting on any change.
pub fn sync(switch: &KillSwitch, audit: &AuditStore) {
    match switch.current() {
        Some(engaged) => on_engaged(switch, audit, &engaged),
        None => on_released(switch, audit),
    }
}

/// Starts the watcher thread. The parent directory must exist.
pub fn watch(switch: Arc<KillSwitch>, audit: Arc<AuditStore>) -> Result<(), KillSwitchError> {
    let file = switch.file.clone();
    let dir = file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let name = file
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let watch_err = |source| KillSwitchError::Watch {
        path: dir.display().to_string(),
        source,
    };
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC).map_err(watch_err)?;
    let mask = AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM;
    inotify.add_watch(&dir, mask).map_err(watch_err)?;
    // The file may predate the daemon.
    sync(&switch, &audit);
    std::thread::Builder::new()
        .name("kill-switch".into())
        .spawn(move || {
            loop {
                match inotify.read_events() {
                    Ok(events) => {
                        if events
                            .iter()
                            .any(|e| e.name.as_deref() == Some(name.as_os_str()))
                        {
                            sync(&switch, &audit);
                        }
                    }
                    Err(nix::Error::EINTR) => {}
                    Err(e) => {
                        // Without the watcher the per-request stat still refuses new
                        // work; say so loudly rather than spin.
                        tracing::error!("kill switch watcher stopped: {e}");
                        return;
                    }
                }
            }
        })
        .map_err(|e| KillSwitchError::Io {
            path: dir.display().to_string(),
            source: e,
        })?;
    Ok(())
}

//! Loading and reloading the policy: the built-in patterns plus the
//! operator's `policy.toml`, or, on a host of a fleet, the fleet's revision
//! it last loaded. A bad file at reload keeps the last good policy; every
//! attempt is audited. Triggers: SIGHUP, a change to the file (inotify on
//! the config directory), `praxis reload`, a revision the fleet pushed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use praxis_fleet::policy::Revision;
use praxis_policy::{BUILTIN_PATTERNS, Policy, Source};

use crate::config::{Config, POLICY_FILE};
use crate::errors;
use crate::state::Daemon;
use crate::store::audit::{Durability, Event, EventKind, Maker};

/// Where the fleet's revision in force is kept: it outlives a restart and
/// an outage of the store, and stands in for the local files while it is
/// there.
fn fleet_file(config: &Config) -> PathBuf {
    config.layout.state_dir.join("fleet-policy.json")
}

/// The fleet's revision this host last loaded, if any.
pub fn fleet_revision(config: &Config) -> Result<Option<Revision>, String> {
    let path = fleet_file(config);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {}", path.display(), errors::one_line(&e))),
    }
}

/// Loads the fleet's revision in force, else the built-in patterns and,
/// when present, the operator's policy file.
pub fn load(config: &Config) -> Result<Policy, String> {
    if let Some(revision) = fleet_revision(config)? {
        return revision.files.load().map_err(|e| errors::one_line(&e));
    }
    let path = config.policy_file();
    let operator = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {}", path.display(), errors::one_line(&e))),
    };
    let name = path.display().to_string();
    Policy::load(
        Source {
            name: "patterns.toml",
            text: BUILTIN_PATTERNS,
        },
        operator.as_deref().map(|text| Source { name: &name, text }),
    )
    .map_err(|e| errors::one_line(&e))
}

/// Reloads and audits the attempt. Blocking (reads files, waits for the commit).
/// Held from reading the files to setting the policy, so that of two
/// reloads at once (the file watcher and `praxis reload` after one edit)
/// the one that read last sets last: a slower load of what the files held
/// before must not replace the newer policy.
static RELOADING: Mutex<()> = Mutex::new(());

pub fn reload(daemon: &Daemon, trigger: &str, by: Option<Maker>) -> Result<String, String> {
    let _one_at_a_time = RELOADING.lock().unwrap_or_else(PoisonError::into_inner);
    let result = load(&daemon.config).map(|policy| {
        let revision = policy.revision().to_owned();
        daemon.set_policy(Arc::new(policy));
        revision
    });
    audit(daemon, trigger, by, &result);
    result
}

/// Loads a revision the fleet pushed, as a reload does: loaded, it is the
/// policy from now on (and after a restart); refused, the last good policy
/// stays. Audited either way. Blocking.
pub fn adopt(daemon: &Daemon, revision: &Revision, by: Maker) -> Result<String, String> {
    let _one_at_a_time = RELOADING.lock().unwrap_or_else(PoisonError::into_inner);
    let result = revision
        .files
        .load()
        .map_err(|e| errors::one_line(&e))
        .and_then(|policy| {
            keep(&daemon.config, revision)?;
            let hash = policy.revision().to_owned();
            daemon.set_policy(Arc::new(policy));
            Ok(hash)
        });
    let trigger = format!("fleet revision {}", revision.number);
    audit(daemon, &trigger, Some(by), &result);
    result
}

/// Writes the revision in force whole, or not at all.
fn keep(config: &Config, revision: &Revision) -> Result<(), String> {
    let path = fleet_file(config);
    let part = path.with_extension("json.part");
    let text = serde_json::to_vec(revision).map_err(|e| e.to_string())?;
    std::fs::write(&part, text)
        .and_then(|()| std::fs::File::open(&part)?.sync_all())
        .and_then(|()| std::fs::rename(&part, &path))
        .map_err(|e| format!("{}: {}", path.display(), errors::one_line(&e)))
}

fn audit(daemon: &Daemon, trigger: &str, by: Option<Maker>, result: &Result<String, String>) {
    let mut detail = serde_json::Map::new();
    detail.insert("trigger".into(), trigger.into());
    let event = match result {
        Ok(revision) => Event {
            policy_revision: Some(revision.clone()),
            reason: Some(String::from("policy reloaded")),
            detail: Some(detail),
            ..Event::new(EventKind::Reload)
        },
        Err(why) => Event {
            reason: Some(format!("reload refused, last good policy kept: {why}")),
            detail: Some(detail),
            ..Event::new(EventKind::Reload)
        },
    }
    .made_by(by);
    if let Err(e) = daemon.record_blocking(event, Durability::Full) {
        tracing::error!("audit of a reload failed: {e}");
    }
}

/// Watches the config directory and reloads when the policy file changes.
pub fn watch(daemon: Arc<Daemon>) -> Result<(), String> {
    let dir = daemon.config.config_dir().to_path_buf();
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC).map_err(|e| format!("inotify: {e}"))?;
    let mask = AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM;
    inotify
        .add_watch(&dir, mask)
        .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
    std::thread::Builder::new()
        .name("policy-watch".into())
        .spawn(move || {
            loop {
                match inotify.read_events() {
                    Ok(events) => {
                        let ours = events.iter().any(|e| {
                            e.name.as_deref().map(Path::new) == Some(Path::new(POLICY_FILE))
                        });
                        if ours && let Err(why) = reload(&daemon, "file change", None) {
                            tracing::warn!("{why}");
                        }
                    }
                    Err(nix::Error::EINTR) => {}
                    Err(e) => {
                        tracing::error!("policy watcher stopped: {e}");
                        return;
                    }
                }
            }
        })
        .map_err(|e| format!("cannot start the policy watcher: {e}"))?;
    Ok(())
}

//! The spill journal: refusals that could not be committed (the database
//! locked or full, the store lost) are appended here, one JSON line each,
//! beside the store (`audit.spill`), and moved into the chain by the writer's
//! next batch that commits. Clients that cannot reach praxisd at all append
//! their HOLD here too. Writers and the replay lock the file, so no line is
//! lost between a read and the truncation that follows it.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::event::Event;

/// The spill journal of the store at `db` (`Layout::audit_spill` for the
/// daemon's own store, where clients append too).
pub(crate) fn path_of(db: &Path) -> PathBuf {
    db.with_file_name("audit.spill")
}

/// One journal line: when it was spilled (unix seconds) and the event.
#[derive(Serialize, Deserialize)]
struct Line {
    at: u64,
    event: Event,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn locked(file: File) -> std::io::Result<Flock<File>> {
    Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e.into())
}

/// Appends `event` to the journal and syncs it.
pub(crate) fn append(db: &Path, event: &Event) -> std::io::Result<()> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path_of(db))?;
    let mut file = locked(file)?;
    let line = serde_json::to_string(&Line {
        at: now(),
        event: event.clone(),
    })
    .map_err(std::io::Error::other)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    file.sync_data()
}

/// Spilled events taken for replay, the journal locked until [`Taken::done`].
pub(crate) struct Taken {
    file: Flock<File>,
    pub events: Vec<Event>,
}

impl Taken {
    /// The events are in the chain: empty the journal.
    pub fn done(mut self) {
        if let Err(e) = self.file.set_len(0).and_then(|()| self.file.rewind()) {
            tracing::error!(
                "audit spill journal not emptied (its events may be replayed twice): {e}"
            );
        }
    }
}

/// The journal's events, if it has any. A line that does not parse is moved
/// to `audit.spill.rejected` for an operator, not dropped.
pub(crate) fn take(db: &Path) -> std::io::Result<Option<Taken>> {
    let path = path_of(db);
    match fs::metadata(&path) {
        Ok(meta) if meta.len() > 0 => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut file = locked(OpenOptions::new().read(true).write(true).open(&path)?)?;
    file.rewind()?;
    let mut events = Vec::new();
    let mut rejected = Vec::new();
    for line in BufReader::new(&*file).lines() {
        let line = line?;
        match serde_json::from_str::<Line>(&line) {
            Ok(Line { at, mut event }) => {
                let detail = event.detail.get_or_insert_with(Default::default);
                detail.insert("spilled_at_unix".into(), at.into());
                events.push(event);
            }
            Err(_) if line.trim().is_empty() => {}
            Err(_) => rejected.push(line),
        }
    }
    if !rejected.is_empty() {
        let mut out = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path.with_extension("spill.rejected"))?;
        out.write_all((rejected.join("\n") + "\n").as_bytes())?;
        tracing::error!(
            "{} unreadable spill line(s) kept in audit.spill.rejected",
            rejected.len()
        );
    }
    Ok(Some(Taken { file, events }))
}

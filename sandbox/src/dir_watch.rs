//! Directories watched with inotify for changes to what a lookup depended
//! on: the names looked up in them, or their whole listing. inotify queues
//! an event before the call that made the change returns, so a change
//! finished before the queue is read is seen there. Shared by the carve
//! cache and praxisd's program cache.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::Path;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, InotifyEvent, WatchDescriptor};

/// Whether a watched name's own attributes (its mode, its times) are a
/// change: for a program, its execute bit is; for a path a carve resolved
/// through, they are not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameAttributes {
    Count,
    Ignore,
}

/// An inotify queue and what each of its watches stands for.
#[derive(Debug)]
pub struct DirWatch {
    inotify: Inotify,
    attributes: NameAttributes,
    /// Per watched directory: the names that count in it.
    names: HashMap<WatchDescriptor, HashSet<OsString>>,
    /// Watched directories whose every name counts.
    listings: HashSet<WatchDescriptor>,
}

impl DirWatch {
    pub fn new(attributes: NameAttributes) -> nix::Result<DirWatch> {
        Ok(DirWatch {
            inotify: Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?,
            attributes,
            names: HashMap::new(),
            listings: HashSet::new(),
        })
    }

    /// What changes a directory's names or its own attributes, on the
    /// directory itself (not a symlink's target).
    fn events() -> AddWatchFlags {
        AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF
            | AddWatchFlags::IN_ONLYDIR
            | AddWatchFlags::IN_DONT_FOLLOW
    }

    /// Watches `dir` for `name` in it appearing, going or being renamed
    /// (and its attributes, when they count), and for `dir` itself.
    pub fn watch_name(&mut self, dir: &Path, name: &OsStr) -> nix::Result<()> {
        let wd = self.inotify.add_watch(dir, DirWatch::events())?;
        self.names.entry(wd).or_default().insert(name.to_owned());
        Ok(())
    }

    /// Watches every name in `dir`, and `dir` itself.
    pub fn watch_listing(&mut self, dir: &Path) -> nix::Result<()> {
        let wd = self.inotify.add_watch(dir, DirWatch::events())?;
        self.listings.insert(wd);
        Ok(())
    }

    /// Reads every queued event: whether one changed what is watched. An
    /// error means changes may go unseen from here on.
    pub fn changed(&self) -> nix::Result<bool> {
        let mut changed = false;
        loop {
            match self.inotify.read_events() {
                Ok(events) => changed |= events.iter().any(|e| self.changes(e)),
                Err(nix::Error::EAGAIN) => return Ok(changed),
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether `event` changes what its watch stands for. An event on a
    /// watched directory itself, a watch dropped and lost events (a queue
    /// overflow) carry no name, and always do.
    fn changes(&self, event: &InotifyEvent) -> bool {
        let Some(name) = &event.name else {
            return true;
        };
        let attributes_only = event.mask - AddWatchFlags::IN_ISDIR == AddWatchFlags::IN_ATTRIB;
        if attributes_only && self.attributes == NameAttributes::Ignore {
            return false;
        }
        self.listings.contains(&event.wd)
            || self.names.get(&event.wd).is_some_and(|n| n.contains(name))
    }
}

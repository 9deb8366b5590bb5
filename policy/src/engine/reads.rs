//! What a sandboxed command can read without a grant: its workspace, its
//! private `/tmp` and `/var/tmp`, the read trees (`[paths] system_reads`, `home_reads`, a site's own), the
//! writable caches and harmless devices, and what the request is granted to
//! write; never a secret. A read of anything else is held, with a grant of
//! the exact path when it is one path known before the command runs.

use std::cell::LazyCell;
use std::path::PathBuf;

use crate::classify::paths::{Classes, PathClass};
use crate::classify::{Access, PathUse};
use crate::lexical::is_within;

/// Classes the sandbox lets every restricted command read.
const READABLE: Classes = PathClass::Workspace.bit()
    | PathClass::Scratch.bit()
    | PathClass::Cache.bit()
    | PathClass::HarmlessDevice.bit();

/// A read outside the allow-list.
pub(super) enum Unreadable {
    /// One exact path: an approval can grant it.
    Grantable(PathBuf),
    /// A glob, a path with an expansion, or Praxis' own state: no grant.
    Ungrantable,
}

/// The allow-list of one request, as normalized absolute paths. The read
/// trees are put together only when a read needs them: most requests read
/// nothing outside the classes every command may read.
pub(super) struct ReadAllowList<Trees: FnOnce() -> Vec<String>> {
    trees: LazyCell<Vec<String>, Trees>,
    written: Vec<String>,
}

impl<Trees: FnOnce() -> Vec<String>> ReadAllowList<Trees> {
    /// `trees`: gives the read trees with the home put in; `written`: the
    /// paths the request is granted to write (a command reads what it
    /// wrote). Both normalized and absolute.
    pub(super) fn new(trees: Trees, written: Vec<String>) -> ReadAllowList<Trees> {
        ReadAllowList {
            trees: LazyCell::new(trees),
            written,
        }
    }

    /// Whether the command could not read `p` without a grant. A path only
    /// named (`stat`) needs no right to read it; a path that could be anywhere (an expansion with no literal directory) is not
    /// judged here: it is no path of the allow-list's to name.
    pub(super) fn unreadable(&self, p: &PathUse) -> Option<Unreadable> {
        if p.access != Access::Read || !p.opens {
            return None;
        }
        let path = p.path.as_deref()?;
        let secret = p.classes & PathClass::Secret.bit() != 0;
        let inside = |roots: &[String]| roots.iter().any(|r| is_within(path, r));
        if !secret && (p.classes & READABLE != 0 || inside(&self.written) || inside(&self.trees)) {
            return None;
        }
        Some(if p.exact && p.classes & PathClass::Praxis.bit() == 0 {
            Unreadable::Grantable(PathBuf::from(path))
        } else {
            Unreadable::Ungrantable
        })
    }
}

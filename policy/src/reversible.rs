//! What a command's undo needs saved before it runs: the paths it deletes,
//! moves, truncates or overwrites, a whole-workspace checkpoint for the git
//! commands that discard work across the tree, or the note that it is an
//! opaque writer whose writes cannot be listed ahead.
//!
//! Purely from the classifier's facts: the daemon takes the snapshot. The
//! [`Undo`] type itself sits in [`crate::decision`], below the classifier.

use crate::Tier;
use crate::classify::{Access, Fact, Facts, PathUse};
use crate::decision::Undo;

impl Undo {
    /// Adds what one simple command needs, given the tier it was judged at.
    pub fn add(&mut self, facts: &Facts, tier: Tier) {
        // `{}` is find's or xargs' placeholder, not a file.
        let lost =
            |p: &&PathUse| matches!(p.access, Access::Delete | Access::Write) && p.text != "{}";
        // A set keeps this linear in the paths of a request with thousands.
        let mut seen: std::collections::HashSet<String> = self.paths.iter().cloned().collect();
        for used in facts.paths.iter().filter(lost) {
            if let Some(path) = &used.path
                && seen.insert(path.clone())
            {
                self.paths.push(path.clone());
            }
        }
        if facts.program == "git" {
            // Git's other writes go to its own store, where the reflog keeps them.
            self.add_git(facts);
            return;
        }
        if facts.has(Fact::UnknownProgram) && tier == Tier::ReversibleWrite {
            // A contained unknown program may change anything in the
            // workspace: only a whole checkpoint makes it undoable.
            self.workspace = Some(self.workspace.unwrap_or(false));
            return;
        }
        let writes_listed = facts.paths.iter().any(|p| p.access != Access::Read);
        if tier == Tier::ReversibleWrite
            && !writes_listed
            && self.workspace.is_none()
            && !self.git_stash
        {
            self.opaque = true;
        }
    }

    fn add_git(&mut self, facts: &Facts) {
        let sub: Vec<&str> = facts.sub.iter().map(String::as_str).collect();
        let flag = |names: &[&str]| names.iter().any(|n| facts.has_flag(n));
        let whole = match sub.as_slice() {
            ["clean", ..] if !flag(&["-n", "--dry-run"]) => Some(flag(&["-x", "-X"])),
            ["reset", ..] if flag(&["--hard", "--merge", "--keep"]) => Some(false),
            ["checkout" | "switch" | "restore", ..]
                if flag(&[
                    "-f",
                    "--force",
                    "--discard-changes",
                    "--",
                    "-W",
                    "--worktree",
                    "-p",
                    "--patch",
                    "-s",
                    "--source",
                ]) || sub.first() == Some(&"restore") && !flag(&["--staged", "-S"]) =>
            {
                Some(false)
            }
            _ => None,
        };
        if let Some(ignored) = whole {
            self.workspace = Some(self.workspace.unwrap_or(false) || ignored);
        }
        if matches!(sub.as_slice(), ["stash", "drop" | "clear", ..]) {
            self.git_stash = true;
        }
    }
}

//! What a command's undo needs saved before it runs: the paths it deletes,
//! moves, truncates or overwrites, a whole-workspace checkpoint for the git
//! commands that discard work across the tree, or the note that it is an
//! opaque writer whose writes cannot be listed ahead.
//!
//! Purely from the classifier's facts: the daemon takes the snapshot. The
//! [`Undo`] type itself sits in [`crate::decision`], below the classifier.

use crate::Tier;
use crate::classify::routines::{UndoSave, UndoTable};
use crate::classify::{Access, Fact, Facts, PathUse};
use crate::decision::Undo;

impl Undo {
    /// Adds what one simple command needs, given the tier it was judged at
    /// and the `[[undo]]` table.
    pub fn add(&mut self, facts: &Facts, tier: Tier, table: &UndoTable) {
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
        let entries = table.of(&facts.program);
        for entry in entries
            .iter()
            .filter(|e| e.applies(&facts.sub, &facts.flags))
        {
            match entry.save {
                UndoSave::OwnStore => {}
                UndoSave::Workspace => {
                    let ignored = entry.keeps_ignored(&facts.flags);
                    self.workspace = Some(self.workspace.unwrap_or(false) || ignored);
                }
                UndoSave::Stash => self.git_stash = true,
            }
        }
        if entries.iter().any(|e| e.save == UndoSave::OwnStore) {
            // Its other writes go to its own store, where its log keeps them.
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
}

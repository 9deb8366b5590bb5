//! The classifier of one simple command: the tables it reads, the frame it
//! is judged in, and how it records a path the command uses.

use super::facts::{Access, Facts, PathUse};
use super::paths::{Classes, Frame, PathClass};
use super::tables::Tables;
use crate::Tier;
use crate::shell::Word;

pub(super) struct Classifier<'t, 'f> {
    pub(super) tables: &'t Tables,
    pub(super) frame: &'f Frame<'f>,
}

impl Classifier<'_, '_> {
    pub(super) fn add_path(&self, facts: &mut Facts, word: &Word, access: Access) {
        self.add_path_as(facts, word, access, matches!(access, Access::Delete), 0);
    }

    /// Adds a path. `deleting`: the path itself goes away (so an ancestor of a
    /// protected name counts). `drop`: classes that do not apply (entries
    /// *below* a directory are not the directory itself).
    pub(super) fn add_path_as(
        &self,
        facts: &mut Facts,
        word: &Word,
        access: Access,
        deleting: bool,
        drop: Classes,
    ) {
        if word.text == "-" {
            // Standard input or output.
            return;
        }
        let mut located = self.tables.paths.locate(word, self.frame, deleting);
        located.classes &= !drop;
        if located.classes & PathClass::HarmlessDevice.bit() != 0 {
            return;
        }
        if access != Access::Read {
            let outside = located.classes & PathClass::OutsideWorkspace.bit() != 0;
            let tier = if outside {
                Tier::HighRisk
            } else {
                Tier::ReversibleWrite
            };
            facts.raise(tier, || {
                let place = if outside {
                    "outside the workspace"
                } else if located.classes & PathClass::Scratch.bit() != 0 {
                    "in the command's private scratch"
                } else {
                    "inside a writable tree"
                };
                format!("{} `{}` {place}", access.as_str(), word.text)
            });
        }
        facts.paths.push(PathUse {
            text: word.text.clone(),
            path: located.path,
            access,
            classes: located.classes,
            exact: !word.dynamic && !word.glob,
            opens: true,
        });
    }
}

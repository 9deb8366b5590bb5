//! Variables whose value is a literal set earlier in the same script
//! (`d=/; rm -rf $d`): an expansion of one stands for that literal.
//!
//! Only what surely ran, in order, counts: the walker calls [`Known::forget`]
//! for assignments that may not have run (a branch, a loop, after `||`, a
//! pipeline stage), [`Known::clear`] after commands that may change any
//! variable, and [`Known::freeze`] after those that change how later
//! assignments or expansions behave.

use super::Word;
use serde::Deserialize;

/// `[exec_env.scope]`: builtins that change the shell's variables, so that a
/// variable set to a literal earlier may no longer hold it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellScope {
    /// Set the variables their `NAME=value` operands name (`export`).
    pub declarers: Vec<String>,
    /// May assign any variable (`read`, `unset`, `printf -v`).
    pub assigners: Vec<String>,
    /// Change how later assignments or expansions behave, or run code from
    /// elsewhere (`declare -i`, `trap`, `eval`, `source`): no value is known
    /// for the rest of the script.
    pub breakers: Vec<String>,
    /// Run the builtin their operand names (`command read x`).
    pub runners: Vec<String>,
}

/// Most variables remembered; later ones stay unknown (keeps lookups short).
const MAX_KNOWN: usize = 64;

/// The scope of literal values at one point of the walk.
#[derive(Clone, Debug, Default)]
pub struct Known {
    values: Vec<(String, String)>,
    frozen: bool,
}

/// What a command does to the scope, judged from its words.
#[derive(Debug, PartialEq, Eq)]
pub enum ScopeEffect<'a> {
    None,
    Clear,
    Freeze,
    /// `export` / `readonly` operands.
    Declares(&'a [Word]),
}

impl Known {
    /// The literal `name` stands for, when known.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Records `name=value` when the value is one literal word that expands
    /// to itself quoted or not (no blanks, no glob characters, not empty).
    pub fn set(&mut self, name: &str, value: &Word) {
        self.forget(name);
        if name == "IFS" {
            // Word splitting changes: unquoted expansions are no longer one word.
            self.freeze();
        }
        let plain = !value.dynamic
            && !value.glob
            && !value.text.is_empty()
            && !value
                .text
                .contains(|c: char| c.is_whitespace() || "*?[".contains(c));
        if self.frozen || !plain || self.values.len() >= MAX_KNOWN {
            return;
        }
        self.values.push((name.to_owned(), value.text.clone()));
    }

    pub fn forget(&mut self, name: &str) {
        // `a[1]=x` changes `a`.
        let base = name.split('[').next().unwrap_or(name);
        self.values.retain(|(n, _)| n != base);
    }

    pub fn clear(&mut self) {
        self.values.clear();
    }

    pub fn freeze(&mut self) {
        self.values.clear();
        self.frozen = true;
    }
}

/// What running `words` (a command with a command word) does to the scope;
/// `functions` are the names the script defined so far.
pub fn effect<'a>(words: &'a [Word], table: &ShellScope, functions: &[String]) -> ScopeEffect<'a> {
    let listed = |list: &[String], name: &str| list.iter().any(|n| n == name);
    let mut rest = words;
    while let Some((head, tail)) = rest.split_first() {
        if head.dynamic {
            return ScopeEffect::Freeze;
        }
        let name = head.text.as_str();
        if listed(&table.runners, name) {
            rest = tail;
            while rest.first().is_some_and(|w| w.text.starts_with('-')) {
                rest = &rest[1..];
            }
            continue;
        }
        return if listed(&table.declarers, name) {
            if tail.iter().any(|w| w.dynamic || w.text.starts_with('-')) {
                ScopeEffect::Freeze
            } else {
                ScopeEffect::Declares(tail)
            }
        } else if listed(&table.assigners, name) {
            ScopeEffect::Clear
        } else if listed(&table.breakers, name) || listed(functions, name) {
            ScopeEffect::Freeze
        } else {
            ScopeEffect::None
        };
    }
    ScopeEffect::None
}

/// `NAME=value` as `env` and `sudo` read it.
pub fn as_assignment(w: &Word) -> Option<(String, Word)> {
    let (name, value) = w.text.split_once('=')?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    valid.then(|| {
        (
            name.to_owned(),
            Word {
                text: value.to_owned(),
                dynamic: w.dynamic,
                glob: false,
            },
        )
    })
}

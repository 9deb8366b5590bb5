//! A policy revision the fleet distributes: a `patterns.toml` and, when
//! given, a `policy.toml`. The push and every host load it with the one
//! function here, so a revision that passes at the push (examples
//! included) passes on a host of the same version, and both compute the
//! same revision hash.

use praxis_policy::{LoadError, Policy, Source};

/// The files of one revision, as the store keeps them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PolicyFiles {
    pub patterns: String,
    pub policy: Option<String>,
}

/// A stored revision: its number in the store, in push order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Revision {
    pub number: i64,
    pub files: PolicyFiles,
}

impl PolicyFiles {
    /// Loads and checks the files as praxisd does, every example included.
    pub fn load(&self) -> Result<Policy, LoadError> {
        Policy::load(
            Source {
                name: "patterns.toml",
                text: &self.patterns,
            },
            self.policy.as_deref().map(|text| Source {
                name: "policy.toml",
                text,
            }),
        )
    }
}

//! The environment table (`[[env]]` of `patterns.toml`): what each variable
//! does to a program, read by the policy (which judges a command's
//! assignments), the sandbox (which never passes a variable of the table
//! but a forwarded one) and the clients (which send only forwarded ones).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

/// What a variable does to a program that sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvRole {
    /// Its value is a command line a program runs.
    Command,
    /// Its value names files or directories a program loads code from.
    CodePath,
    /// Its value is options an interpreter obeys, which can load code.
    Options,
    /// It makes a shell, the loader or a library run, trace or redirect
    /// something; the policy has no rule for it, the sandbox strips it.
    Stripped,
    /// A client sends it with its command: tools behave by it, nothing loads by it.
    Forwarded,
}

/// One `[[env]]` entry as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    pub role: EnvRole,
    #[serde(default)]
    pub names: Vec<String>,
    /// Names starting with one of these belong to the entry too
    /// (stripped and forwarded entries only).
    #[serde(default)]
    pub prefixes: Vec<String>,
}

/// Why the table does not load.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("`{0}` is not an environment variable name")]
    BadName(String),
    #[error("`{0}` is listed twice")]
    Twice(String),
    #[error("`{name}` is {first:?}, but the prefix `{prefix}` makes it {second:?}")]
    Overlap {
        name: String,
        prefix: String,
        first: EnvRole,
        second: EnvRole,
    },
    #[error("prefix `{0}`: only stripped and forwarded entries take prefixes")]
    PrefixRole(String),
}

/// The checked table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvTable {
    roles: BTreeMap<String, EnvRole>,
    prefixes: Vec<(String, EnvRole)>,
}

impl EnvTable {
    /// Checks the entries: valid names, none twice, and no forwarded name
    /// that a stripped prefix claims, or the other way round. A name's own
    /// entry wins over a prefix (`LD_PRELOAD` loads code, other `LD_` names
    /// are only stripped).
    pub fn build(specs: &[EnvSpec]) -> Result<EnvTable, EnvError> {
        EnvTable::build_from(
            specs
                .iter()
                .map(|s| (s.role, s.names.as_slice(), s.prefixes.as_slice())),
        )
    }

    /// [`EnvTable::build`] over entries as roles and slices of names and
    /// prefixes, as written or as compiled in.
    fn build_from<'a, S: AsRef<str> + 'a>(
        specs: impl IntoIterator<Item = (EnvRole, &'a [S], &'a [S])>,
    ) -> Result<EnvTable, EnvError> {
        let mut table = EnvTable::default();
        for (role, names, prefixes) in specs {
            for name in names.iter().map(AsRef::as_ref) {
                if !valid_name(name) {
                    return Err(EnvError::BadName(name.to_owned()));
                }
                if table.roles.insert(name.to_owned(), role).is_some() {
                    return Err(EnvError::Twice(name.to_owned()));
                }
            }
            for prefix in prefixes.iter().map(AsRef::as_ref) {
                if !matches!(role, EnvRole::Stripped | EnvRole::Forwarded) {
                    return Err(EnvError::PrefixRole(prefix.to_owned()));
                }
                if !valid_name(prefix) {
                    return Err(EnvError::BadName(prefix.to_owned()));
                }
                table.prefixes.push((prefix.to_owned(), role));
            }
        }
        for (prefix, by_prefix) in &table.prefixes {
            let clash = table
                .roles
                .iter()
                .map(|(n, r)| (n, *r))
                .chain(table.prefixes.iter().map(|(p, r)| (p, *r)))
                .find(|(name, role)| {
                    let forwarded = |r: EnvRole| r == EnvRole::Forwarded;
                    name.starts_with(prefix.as_str()) && forwarded(*role) != forwarded(*by_prefix)
                });
            if let Some((name, role)) = clash {
                return Err(EnvError::Overlap {
                    name: name.clone(),
                    prefix: prefix.clone(),
                    first: role,
                    second: *by_prefix,
                });
            }
        }
        Ok(table)
    }

    /// The table of the built-in `patterns.toml`.
    pub fn builtin() -> &'static EnvTable {
        &BUILTIN
    }

    /// The role of `name`, by its name or a prefix.
    pub fn role(&self, name: &str) -> Option<EnvRole> {
        self.roles.get(name).copied().or_else(|| {
            self.prefixes
                .iter()
                .find(|(p, _)| name.starts_with(p.as_str()))
                .map(|(_, r)| *r)
        })
    }

    /// The names listed with `role`.
    pub fn names(&self, role: EnvRole) -> Vec<String> {
        self.roles
            .iter()
            .filter(|(_, r)| **r == role)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Whether a client sends `name` with its command.
    pub fn is_forwarded(&self, name: &str) -> bool {
        self.role(name) == Some(EnvRole::Forwarded)
    }

    /// Whether the sandbox never passes `name` to a command: every variable
    /// of the table but a forwarded one.
    pub fn is_stripped(&self, name: &str) -> bool {
        self.role(name).is_some_and(|r| r != EnvRole::Forwarded)
    }
}

/// Whether a client sends `name` with its command (built-in table).
pub fn forwarded(name: &str) -> bool {
    EnvTable::builtin().is_forwarded(name)
}

/// Whether the sandbox never passes `name` to a command (built-in table).
pub fn stripped(name: &str) -> bool {
    EnvTable::builtin().is_stripped(name)
}

fn valid_name(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The `[[env]]` entries of the built-in `patterns.toml`, written out as
/// Rust by the build script: a client starts with the table compiled in,
/// nothing to parse.
const BUILTIN_ENV: &[(EnvRole, &[&str], &[&str])] =
    include!(concat!(env!("OUT_DIR"), "/env_table.rs"));

static BUILTIN: LazyLock<EnvTable> = LazyLock::new(|| {
    // The built-in file is the one every policy test loads and checks, so a
    // failure here is a broken build, never a run-time condition.
    EnvTable::build_from(BUILTIN_ENV.iter().copied()).expect("built-in env table is valid")
});

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(role: EnvRole, names: &[&str], prefixes: &[&str]) -> EnvSpec {
        EnvSpec {
            role,
            names: names.iter().map(|s| s.to_string()).collect(),
            prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_builtin_table_forwards_tool_settings_and_strips_code_loaders() {
        let t = EnvTable::builtin();
        for name in ["PATH", "TERM", "LC_ALL", "COLUMNS"] {
            assert!(t.is_forwarded(name) && !t.is_stripped(name), "{name}");
        }
        for name in [
            "LD_PRELOAD",
            "LD_ANYTHING",
            "BASH_ENV",
            "PS4",
            "SHELLOPTS",
            "LUA_PATH",
            "JAVA_TOOL_OPTIONS",
            "PROMPT_COMMAND",
            "BASH_FUNC_ls%%",
            "HOME",
        ] {
            assert!(t.is_stripped(name) && !t.is_forwarded(name), "{name}");
        }
        assert!(!t.is_forwarded("GH_TOKEN") && !t.is_stripped("GH_TOKEN"));
    }

    #[derive(Deserialize)]
    struct EnvSection {
        env: Vec<EnvSpec>,
    }

    #[test]
    fn the_table_clients_read_is_the_one_in_the_whole_file() {
        let whole: EnvSection = toml::from_str(crate::BUILTIN_PATTERNS).unwrap();
        assert_eq!(&EnvTable::build(&whole.env).unwrap(), EnvTable::builtin());
    }

    #[test]
    fn a_name_twice_or_claimed_by_another_roles_prefix_does_not_load() {
        let twice = [
            spec(EnvRole::Command, &["PAGER"], &[]),
            spec(EnvRole::Forwarded, &["PAGER"], &[]),
        ];
        assert!(matches!(EnvTable::build(&twice), Err(EnvError::Twice(_))));
        let overlap = [
            spec(EnvRole::Stripped, &[], &["LD_"]),
            spec(EnvRole::Forwarded, &["LD_LIBRARY_PATH"], &[]),
        ];
        assert!(matches!(
            EnvTable::build(&overlap),
            Err(EnvError::Overlap { .. })
        ));
        let prefix = [spec(EnvRole::CodePath, &[], &["PYTHON"])];
        assert!(matches!(
            EnvTable::build(&prefix),
            Err(EnvError::PrefixRole(_))
        ));
        let bad = [spec(EnvRole::Forwarded, &["A-B"], &[])];
        assert!(matches!(EnvTable::build(&bad), Err(EnvError::BadName(_))));
    }
}

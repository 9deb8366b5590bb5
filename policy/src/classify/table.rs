//! The program table of `patterns.toml`, compiled for lookups by name.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use crate::Tier;
use crate::classify::destinations::{self, Connect};
use crate::decision::Destination;
use crate::verdict::TierSpec;

/// Tier as the table states it: None is `unknown` (held).
pub type TableTier = Option<Tier>;

#[derive(Clone, Debug)]
pub struct Program {
    pub tier: TableTier,
    pub bare_tier: Option<TableTier>,
    pub operands: Operands,
    /// Where it connects (empty: no network).
    pub connect: Vec<Connect>,
    /// Flags that take a separate value: `value_flags`, `output_flags` and the input flags.
    pub takes_value: Vec<String>,
    pub output_flags: Vec<String>,
    pub input_flags: Vec<String>,
    pub input_at_flags: Vec<String>,
    /// When one of these is given, there is no leading pattern/script operand.
    pub script_flags: Vec<String>,
    pub interactive: bool,
    /// Flags that make any run a dry run (read-only).
    pub dry_run_flags: Vec<String>,
    /// Words that begin with `-` but are operands (`*` globs).
    pub dash_operands: Vec<String>,
    /// The long options a given prefix abbreviates (empty: the program takes
    /// no prefixes): every long flag the entry lists.
    pub long_options: Vec<String>,
    /// Most specific (most words) first.
    pub subs: Vec<Sub>,
    pub flags: Vec<FlagRaise>,
}

#[derive(Clone, Debug)]
pub struct Sub {
    /// Words, each possibly a `*` glob.
    pub words: Vec<String>,
    pub tier: TableTier,
    pub bare_tier: Option<TableTier>,
    pub operands: Option<Operands>,
    /// Replaces the program's destinations.
    pub connect: Option<Vec<Connect>>,
    /// Flags that make this subcommand a dry run, besides the program's.
    pub dry_run_flags: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct FlagRaise {
    pub flags: Vec<String>,
    pub tier: Option<TableTier>,
    pub operands: Option<Operands>,
    /// Destinations added.
    pub connect: Vec<Connect>,
    pub subs: Vec<String>,
    pub not_subs: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct ProgramTable {
    programs: Vec<Program>,
    by_name: HashMap<String, usize>,
    /// Names declared with a trailing `*` (`mkfs.*`).
    by_prefix: Vec<(String, usize)>,
}

fn tier(spec: TierSpec) -> TableTier {
    spec.tier()
}

impl ProgramTable {
    pub fn build(
        specs: &[ProgramSpec],
        registries: &BTreeMap<String, Vec<Destination>>,
    ) -> Result<ProgramTable, String> {
        let mut table = ProgramTable::default();
        let connect = |entries: &[String], spec: &ProgramSpec| {
            destinations::compile(entries, registries, true)
                .map_err(|m| format!("program `{}`: {m}", spec.names.join(", ")))
        };
        for spec in specs {
            let idx = table.programs.len();
            let dry_runs = !spec.dry_run_flags.is_empty()
                || spec.sub.iter().any(|s| !s.dry_run_flags.is_empty());
            if dry_runs && spec.examples.is_empty() {
                return Err(format!(
                    "program `{}`: dry_run_flags need examples",
                    spec.names.join(", ")
                ));
            }
            let mut subs: Vec<Sub> = Vec::new();
            for s in &spec.sub {
                let sub_connect = match &s.connect {
                    Some(c) => Some(connect(c, spec)?),
                    None => None,
                };
                subs.extend(s.names.iter().map(|name| Sub {
                    words: name.split_whitespace().map(str::to_owned).collect(),
                    tier: tier(s.tier),
                    bare_tier: s.bare_tier.map(tier),
                    operands: s.operands,
                    connect: sub_connect.clone(),
                    dry_run_flags: s.dry_run_flags.clone(),
                }));
            }
            let mut flags = Vec::new();
            for f in &spec.flag {
                flags.push(FlagRaise {
                    flags: f.flags.clone(),
                    tier: f.tier.map(tier),
                    operands: f.operands,
                    connect: connect(f.connect.as_deref().unwrap_or_default(), spec)?,
                    subs: f.sub.clone(),
                    not_subs: f.not_sub.clone(),
                });
            }
            let long_options = if spec.long_option_prefixes {
                let mut listed: Vec<String> = spec
                    .value_flags
                    .iter()
                    .chain(&spec.output_flags)
                    .chain(&spec.dry_run_flags)
                    .chain(spec.sub.iter().flat_map(|s| &s.dry_run_flags))
                    .chain(spec.flag.iter().flat_map(|f| &f.flags))
                    .filter(|f| f.starts_with("--") && f.len() > 2)
                    .cloned()
                    .collect();
                listed.sort();
                listed.dedup();
                listed
            } else {
                Vec::new()
            };
            // Stable: among equal lengths the file's order holds.
            subs.sort_by_key(|s| std::cmp::Reverse(s.words.len()));
            table.programs.push(Program {
                tier: tier(spec.tier),
                bare_tier: spec.bare_tier.map(tier),
                operands: spec.operands,
                connect: connect(&spec.connect, spec)?,
                takes_value: spec
                    .value_flags
                    .iter()
                    .chain(&spec.output_flags)
                    .chain(&spec.input_flags)
                    .chain(&spec.input_at_flags)
                    .cloned()
                    .collect(),
                output_flags: spec.output_flags.clone(),
                input_flags: spec.input_flags.clone(),
                input_at_flags: spec.input_at_flags.clone(),
                script_flags: spec.script_flags.clone(),
                interactive: spec.interactive,
                dry_run_flags: spec.dry_run_flags.clone(),
                dash_operands: spec.dash_operands.clone(),
                long_options,
                subs,
                flags,
            });
            for name in &spec.names {
                if let Some(prefix) = name.strip_suffix('*') {
                    table.by_prefix.push((prefix.to_owned(), idx));
                } else if table.by_name.insert(name.clone(), idx).is_some() {
                    return Err(format!("program `{name}` is declared twice"));
                }
            }
        }
        Ok(table)
    }

    /// The entry for `name`, also trying prefix entries and a version-stripped
    /// name (`python3.12` → `python3` → `python`).
    pub fn get(&self, name: &str) -> Option<&Program> {
        if let Some(&i) = self.by_name.get(name) {
            return Some(&self.programs[i]);
        }
        if let Some((_, i)) = self
            .by_prefix
            .iter()
            .find(|(p, _)| name.starts_with(p.as_str()))
        {
            return Some(&self.programs[*i]);
        }
        let stripped = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        if stripped.len() < name.len() && !stripped.is_empty() {
            return self.by_name.get(stripped).map(|&i| &self.programs[i]);
        }
        None
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// `*`/`?` glob match over bytes; linear-ish (backtracks only on `*`).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// How a program's operands (non-flag arguments) are used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operands {
    /// Not paths (messages, patterns, names).
    #[default]
    None,
    Read,
    /// Named, never opened: the program looks the path up (`stat`,
    /// `realpath`), which needs no right to read it.
    Name,
    /// The last operand is created, the others only named (`ln`: a link's
    /// target is never opened).
    Link,
    /// The first operand is a pattern or script, the rest are read.
    ReadAfterFirst,
    /// The first operand is a script, the rest are rewritten in place (`sed -i`).
    WriteAfterFirst,
    /// Created or updated (`touch`, `mkdir`).
    Create,
    /// Overwritten (`tee`, `truncate`).
    Write,
    /// Appended to (`tee -a`).
    Append,
    /// The first operand is a mode or owner, the rest have metadata changed.
    MetaAfterFirst,
    Delete,
    /// The last operand is written, the others read (`cp`, `install`).
    Copy,
    /// The last operand is written, the others deleted (`mv`).
    Move,
    /// The first operand is a source (URL, repository), the rest are created.
    CreateAfterFirst,
    /// `dd`-style `if=`/`of=` operands.
    KeyValue,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    pub names: Vec<String>,
    /// Tier with no subcommand, or with one not listed in `sub`.
    pub tier: TierSpec,
    /// Tier when no operand at all is given (`git branch`, `crontab` alone).
    #[serde(default)]
    pub bare_tier: Option<TierSpec>,
    #[serde(default)]
    pub operands: Operands,
    /// Where it connects: `host:port`, `registry:NAME`, `url-operands`,
    /// `git-remote`, `remote-operands`, `unknown`. Empty: no network.
    #[serde(default)]
    pub connect: Vec<String>,
    /// Flags that take a separate value (skipped when finding operands).
    #[serde(default)]
    pub value_flags: Vec<String>,
    /// Flags whose value is a path the program writes (`-o FILE`).
    #[serde(default)]
    pub output_flags: Vec<String>,
    /// Flags whose value is a path the program reads (`--upload-file FILE`).
    #[serde(default)]
    pub input_flags: Vec<String>,
    /// Flags whose value names a file it reads after an `@` (`-d @FILE`, `-F f=@FILE`).
    #[serde(default)]
    pub input_at_flags: Vec<String>,
    /// Flags that carry the pattern or script, so no operand is one (`sed -e`).
    #[serde(default)]
    pub script_flags: Vec<String>,
    /// The program needs an interactive terminal.
    #[serde(default)]
    pub interactive: bool,
    /// Words that begin with `-` but are operands (`*` globs): `chmod`'s
    /// symbolic modes (`-x`, `-rwx`).
    #[serde(default)]
    pub dash_operands: Vec<String>,
    /// The program takes any unambiguous prefix of a long option (`git push
    /// --forc`): a prefix given is judged as every listed option it begins.
    #[serde(default)]
    pub long_option_prefixes: bool,
    #[serde(default)]
    pub note: String,
    /// Flags that make any run of it a dry run: read-only (T0), unless
    /// an operand is on another host.
    #[serde(default)]
    pub dry_run_flags: Vec<String>,
    /// Decisions its table entry must give (required with `dry_run_flags`).
    #[serde(default)]
    pub examples: Vec<crate::shell::DecisionExample>,
    #[serde(default)]
    pub sub: Vec<SubSpec>,
    #[serde(default)]
    pub flag: Vec<FlagSpec>,
}

/// A subcommand entry: `names` are one or more words (`"pr create"`), `*` globs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubSpec {
    pub names: Vec<String>,
    pub tier: TierSpec,
    #[serde(default)]
    pub bare_tier: Option<TierSpec>,
    #[serde(default)]
    pub operands: Option<Operands>,
    /// Replaces the program's `connect` list (`[]`: no network).
    #[serde(default)]
    pub connect: Option<Vec<String>>,
    /// Flags that make this subcommand a dry run, besides the program's.
    #[serde(default)]
    pub dry_run_flags: Vec<String>,
}

/// Flags that raise the tier or change how operands are used (`sed -i`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagSpec {
    pub flags: Vec<String>,
    #[serde(default)]
    pub tier: Option<TierSpec>,
    #[serde(default)]
    pub operands: Option<Operands>,
    /// Destinations added when the flag is given.
    #[serde(default)]
    pub connect: Option<Vec<String>>,
    /// Only under these subcommands (first word), when given.
    #[serde(default)]
    pub sub: Vec<String>,
    /// Never under these subcommands (first word): where the flag only
    /// changes what is shown (`npm list -g`).
    #[serde(default)]
    pub not_sub: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("describe-*", "describe-instances"));
        assert!(glob_match("*", ""));
        assert!(glob_match("?755", "4755"));
        assert!(!glob_match("?755", "755"));
        assert!(glob_match("*+*s*", "u+s"));
        assert!(!glob_match("main", "mainx"));
    }
}

//! Rule engine: loading and validating policy files, deny-first evaluation.
//!
//! Rules are matched against the classifier's [`Facts`]: every criterion a
//! rule states must hold (program, subcommand, flags, operands, path classes,
//! detector facts, and as a last resort a regex over the command text).

pub mod config;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use regex::Regex;

use crate::classify::destinations::{self, Connect};
use crate::classify::paths::{Classes, PathClass};
use crate::classify::table::glob_match;
use crate::classify::{Access, Fact, Facts, PathUse};
use crate::context::Context;
use crate::decision::Destination;
use crate::{Profile, Tier, Verdict};
use config::{AccessSpec, BranchOf, Cover, Preconditions, RuleSpec};

/// A compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub id: String,
    pub verdict: Verdict,
    pub reason: String,
    programs: Vec<String>,
    subcommands: Vec<Vec<String>>,
    any_flags: Vec<String>,
    all_flags: Vec<String>,
    not_flags: Vec<String>,
    args: Vec<String>,
    not_args: Vec<String>,
    paths: Classes,
    access: u8,
    facts: u32,
    env: Vec<String>,
    regex: Option<Regex>,
    not_regex: Option<Regex>,
    pub tier: Option<Tier>,
    pub profile: Option<Profile>,
    /// When an ALLOW by this rule decides: exactly these destinations.
    pub connect: Option<Vec<Destination>>,
    /// The unix sockets this HOLD rule grants, once approved.
    pub sockets: Vec<PathBuf>,
    /// Parts an ALLOW by this rule speaks for beyond what its criteria match.
    covers: Vec<Cover>,
    roles: Vec<String>,
    preconditions: Option<Preconditions>,
    pub on_failure: Verdict,
    /// Example commands the rule must match / must not match.
    pub matches: Vec<String>,
    pub not_matches: Vec<String>,
    /// Learned memory may never lift this rule's HOLD.
    pub not_relaxable: bool,
}

/// A socket a rule grants (or a `[[socket]]` path): an exact absolute
/// path, normalized, without patterns.
pub(crate) fn socket_path(entry: &str) -> Result<PathBuf, String> {
    let exact = entry.starts_with('/')
        && entry != "/"
        && !entry.contains(['*', '?', '[', '{', '~', '$'])
        && crate::lexical::normalize(entry) == entry;
    if exact {
        Ok(PathBuf::from(entry))
    } else {
        Err(format!(
            "socket `{entry}` must be an exact absolute path (normalized, no pattern)"
        ))
    }
}

fn access_bits(a: AccessSpec) -> u8 {
    let change = Access::Create.bit()
        | Access::Write.bit()
        | Access::Append.bit()
        | Access::Delete.bit()
        | Access::Meta.bit();
    match a {
        AccessSpec::Read => Access::Read.bit(),
        AccessSpec::Create => Access::Create.bit(),
        AccessSpec::Write => Access::Write.bit(),
        AccessSpec::Append => Access::Append.bit(),
        AccessSpec::Delete => Access::Delete.bit(),
        AccessSpec::Meta => Access::Meta.bit(),
        AccessSpec::Change => change,
    }
}

impl Rule {
    pub fn compile(
        spec: &RuleSpec,
        registries: &BTreeMap<String, Vec<Destination>>,
    ) -> Result<Rule, String> {
        let mut paths = 0;
        for name in &spec.paths {
            paths |= PathClass::from_name(name)
                .ok_or_else(|| format!("unknown path class `{name}`"))?
                .bit();
        }
        let mut facts = 0;
        for name in &spec.facts {
            facts |= Fact::from_name(name)
                .ok_or_else(|| format!("unknown fact `{name}`"))?
                .bit();
        }
        let compile = |r: &Option<String>| {
            r.as_deref()
                .map(|r| Regex::new(r).map_err(|e| format!("bad regex: {e}")))
                .transpose()
        };
        let (regex, not_regex) = (compile(&spec.regex)?, compile(&spec.not_regex)?);
        let tier = match spec.tier {
            Some(t) => Some(t.tier().ok_or("a rule's tier cannot be `unknown`")?),
            None => None,
        };
        let sockets = spec
            .sockets
            .iter()
            .map(|e| socket_path(e))
            .collect::<Result<Vec<_>, _>>()?;
        if !sockets.is_empty() && spec.decision != Verdict::Hold {
            return Err(
                "`sockets` marks HOLD rules only: a socket is granted by an operator's approval"
                    .to_owned(),
            );
        }
        // A socket's service is reached whole (docker's is root on the host).
        let tier = if sockets.is_empty() {
            tier
        } else {
            Some(tier.map_or(Tier::HighRisk, |t| t.max(Tier::HighRisk)))
        };
        let has_criteria = !spec.program.is_empty()
            || !spec.subcommand.is_empty()
            || !spec.any_flags.is_empty()
            || !spec.all_flags.is_empty()
            || !spec.args.is_empty()
            || paths != 0
            || facts != 0
            || !spec.env.is_empty()
            || regex.is_some();
        if !has_criteria {
            return Err("a rule must say what it matches".to_owned());
        }
        if spec.reason.trim().is_empty() {
            return Err("a rule needs a reason".to_owned());
        }
        if spec.matches.is_empty() {
            return Err("a rule needs at least one `match` example".to_owned());
        }
        if spec.not_relaxable && spec.decision != Verdict::Hold {
            return Err(
                "`not_relaxable` marks HOLD rules only (memory never relaxes a STOP)".to_owned(),
            );
        }
        if !spec.covers.is_empty() && spec.decision != Verdict::Allow {
            return Err("`covers` says what an ALLOW rule speaks for; STOP and HOLD rules decide the whole command".to_owned());
        }
        let connect = match &spec.connect {
            Some(entries) => Some(
                destinations::compile(entries, registries, false)?
                    .into_iter()
                    .filter_map(|c| match c {
                        Connect::To(d) => Some(d),
                        _ => None,
                    })
                    .collect(),
            ),
            None => None,
        };
        Ok(Rule {
            id: spec.id.clone(),
            verdict: spec.decision,
            reason: spec.reason.clone(),
            programs: spec.program.clone(),
            subcommands: spec
                .subcommand
                .iter()
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .collect(),
            any_flags: spec.any_flags.clone(),
            all_flags: spec.all_flags.clone(),
            not_flags: spec.not_flags.clone(),
            args: spec.args.clone(),
            not_args: spec.not_args.clone(),
            paths,
            access: spec.access.iter().fold(0, |acc, a| acc | access_bits(*a)),
            facts,
            env: spec.env.clone(),
            regex,
            not_regex,
            tier,
            profile: spec.profile,
            connect,
            sockets,
            covers: spec.covers.clone(),
            roles: spec.roles.clone(),
            preconditions: spec.preconditions.clone(),
            on_failure: spec.on_precondition_failure.unwrap_or(Verdict::Hold),
            matches: spec.matches.clone(),
            not_matches: spec.not_match.clone(),
            not_relaxable: spec.not_relaxable,
        })
    }

    /// The programs the rule names (empty: any).
    pub fn programs(&self) -> &[String] {
        &self.programs
    }

    /// Roles the rule is limited to (empty: all).
    pub fn roles(&self) -> &[String] {
        &self.roles
    }

    pub fn applies_to(&self, role: &str) -> bool {
        self.roles.is_empty() || self.roles.iter().any(|r| r == role)
    }

    /// Whether the rule's criteria hold for `f`; `text` is the command's canonical text.
    pub fn matches(&self, f: &Facts, text: &str) -> bool {
        let words = || f.sub.iter().chain(f.operands.iter());
        let flag = |name: &String| f.flags.iter().any(|g| g == name);
        (self.programs.is_empty() || self.programs.iter().any(|p| glob_match(p, &f.program)))
            && (self.subcommands.is_empty()
                || self.subcommands.iter().any(|s| {
                    let mut w = words();
                    s.iter().all(|p| w.next().is_some_and(|x| glob_match(p, x)))
                }))
            && (self.any_flags.is_empty() || self.any_flags.iter().any(flag))
            && self.all_flags.iter().all(flag)
            && !self.not_flags.iter().any(flag)
            && (self.args.is_empty() || words().any(|w| self.args.iter().any(|p| glob_match(p, w))))
            && !words().any(|w| self.not_args.iter().any(|p| glob_match(p, w)))
            && (self.paths == 0 || f.paths.iter().any(|p| self.speaks_for_path(p)))
            && (self.facts == 0 || f.facts & self.facts != 0)
            && (self.env.is_empty()
                || f.env
                    .iter()
                    .any(|n| self.env.iter().any(|p| glob_match(p, n))))
            && self.regex.as_ref().is_none_or(|r| r.is_match(text))
            && !self.not_regex.as_ref().is_some_and(|r| r.is_match(text))
    }

    /// Whether the rule's `paths` (under its `access`) name this path: the
    /// rule speaks for it.
    pub fn speaks_for_path(&self, p: &PathUse) -> bool {
        p.classes & self.paths != 0 && (self.access == 0 || self.access & p.access.bit() != 0)
    }

    /// Whether an ALLOW by this rule speaks for connecting to `d`: its
    /// `connect` names it, or its `covers` does (`local_hosts`: the hosts
    /// that are this machine; `remotes`: those of the repository's remotes).
    pub fn speaks_for_destination(
        &self,
        d: &Destination,
        local_hosts: &[String],
        remotes: &[Destination],
    ) -> bool {
        self.connect.as_ref().is_some_and(|c| c.contains(d))
            || (self.covers.contains(&Cover::GitRemotes) && remotes.contains(d))
            || (self.covers.contains(&Cover::LocalDestinations)
                && local_hosts.iter().any(|h| h.eq_ignore_ascii_case(&d.host)))
    }

    /// Checks the rule's preconditions against the context; Err names the failed one.
    pub fn check_preconditions(&self, f: &Facts, ctx: &Context) -> Result<(), String> {
        let Some(pre) = &self.preconditions else {
            return Ok(());
        };
        if pre.in_git_work_tree && !ctx.in_git_work_tree {
            return Err("the working directory is not in a git work tree".to_owned());
        }
        if !pre.branch_not_in.is_empty() {
            let named = match pre.branch_of {
                BranchOf::Current => Vec::new(),
                BranchOf::Pushed => pushed_branches(f),
            };
            let current = named.is_empty() || named.iter().any(|b| b == "HEAD");
            let current = if current {
                let Some(branch) = ctx.git_branch.as_deref() else {
                    return Err("no branch is checked out".to_owned());
                };
                Some(branch)
            } else {
                None
            };
            let branches = named
                .iter()
                .map(String::as_str)
                .filter(|b| *b != "HEAD")
                .chain(current);
            for branch in branches {
                let protected = pre.branch_not_in.iter().any(|b| {
                    b == branch
                        || (b == "$default" && ctx.git_default_branch.as_deref() == Some(branch))
                });
                if protected {
                    return Err(format!("branch `{branch}` is protected"));
                }
            }
        }
        if pre.paths_inside_workspace {
            let outside = PathClass::OutsideWorkspace.bit() | PathClass::Dynamic.bit();
            if let Some(p) = f.paths.iter().find(|p| p.classes & outside != 0) {
                return Err(format!("`{}` is not inside the workspace", p.text));
            }
        }
        if pre.paths_exist
            && let Some(p) = f.paths.iter().find(|p| {
                !p.path
                    .as_ref()
                    .is_some_and(|abs| ctx.existing.iter().any(|e| e.as_os_str() == abs.as_str()))
            })
        {
            return Err(format!("`{}` does not exist", p.text));
        }
        Ok(())
    }

    pub fn wants_existence(&self) -> bool {
        self.preconditions.as_ref().is_some_and(|p| p.paths_exist)
    }
}

/// The branches a push's refspecs write: the operands after the
/// subcommand and the remote, each as its destination (`src:dst` gives
/// `dst`; a leading `+` and `refs/heads/` are dropped). `HEAD` stays as is.
fn pushed_branches(f: &Facts) -> Vec<String> {
    let after_sub = f
        .operands
        .strip_prefix(f.sub.as_slice())
        .unwrap_or(&f.operands);
    after_sub
        .iter()
        .skip(1)
        .map(|refspec| {
            let dst = refspec
                .rsplit_once(':')
                .map_or(refspec.as_str(), |(_, d)| d);
            let dst = dst.trim_start_matches('+');
            dst.strip_prefix("refs/heads/").unwrap_or(dst).to_owned()
        })
        .collect()
}

/// Rules ordered STOP, HOLD, ALLOW (file order within each), indexed by program.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    by_program: HashMap<String, Vec<usize>>,
    /// Rules with no program, or a globbed one: tried for every command.
    everywhere: Vec<usize>,
}

impl RuleSet {
    pub fn new(mut rules: Vec<Rule>) -> Result<RuleSet, String> {
        let mut seen = std::collections::HashSet::new();
        for r in &rules {
            if !seen.insert(r.id.as_str()) {
                return Err(format!("rule id `{}` is used twice", r.id));
            }
        }
        rules.sort_by_key(|r| std::cmp::Reverse(r.verdict));
        let mut set = RuleSet {
            rules,
            ..RuleSet::default()
        };
        for (i, r) in set.rules.iter().enumerate() {
            if r.programs.is_empty() || r.programs.iter().any(|p| p.contains(['*', '?'])) {
                set.everywhere.push(i);
            } else {
                for p in &r.programs {
                    set.by_program.entry(p.clone()).or_default().push(i);
                }
            }
        }
        Ok(set)
    }

    /// Indices of the rules whose criteria match, in evaluation order.
    pub fn matching(&self, f: &Facts, text: &str) -> Vec<usize> {
        let indexed = self
            .by_program
            .get(&f.program)
            .map_or(&[][..], Vec::as_slice);
        let mut out: Vec<usize> = indexed
            .iter()
            .chain(self.everywhere.iter())
            .copied()
            .filter(|&i| self.rules[i].matches(f, text))
            .collect();
        out.sort_unstable();
        out
    }
}

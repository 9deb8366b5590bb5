//! Lessons: structured matchers over judged actions, never strings.
//!
//! An [`Action`] is what the pipeline knows about a request once the policy
//! has judged it: its simple commands (program, subcommand, flags, operands,
//! classified paths), the network destinations it would reach, the git
//! branches involved, the workspace and the role. A [`Lesson`] states which
//! actions it covers; [`matches`] is the whole test. [`generalise`] proposes
//! a lesson from an approved action, e.g. "git push to non-default branches
//! of this repo".

use praxis_policy::classify::table::glob_match;
use praxis_policy::{Tier, Verdict};
use serde::{Deserialize, Serialize};

/// One simple command of an action, as the classifier saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionCommand {
    /// Canonical program name (`/usr/bin/git` is `git`).
    pub program: String,
    /// Subcommand words (`["push"]`, `["stash", "drop"]`); empty when none.
    pub subcommand: Vec<String>,
    /// Flags as the classifier lists them (`-rf` also as `-r`, `-f`).
    pub flags: Vec<String>,
    /// Arguments that are neither flags, subcommand words nor paths
    /// (`origin`, `feature/x`, a URL).
    pub operands: Vec<String>,
    /// Path arguments and the classes the policy put them in.
    pub paths: Vec<PathArg>,
    /// What the policy decided for this command alone.
    pub verdict: Verdict,
}

/// A path argument: its text and the policy's path classes (`workspace`,
/// `outside_workspace`, `protected`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathArg {
    pub text: String,
    pub classes: Vec<String>,
}

/// The git branches that bear on an action, when it runs in a git work tree.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitBranches {
    /// The checked-out branch (None when detached).
    pub current: Option<String>,
    /// The repository's default branch, when known.
    pub default: Option<String>,
}

/// A judged request, as memory sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// The workspace id (the daemon uses the workspace root).
    pub workspace: String,
    pub project: Option<String>,
    pub role: String,
    pub tier: Tier,
    /// The policy's verdict on the whole request.
    pub verdict: Verdict,
    /// False when a rule that decided the HOLD is marked not relaxable.
    pub relaxable: bool,
    pub commands: Vec<ActionCommand>,
    /// `host:port` the request would reach.
    pub destinations: Vec<String>,
    pub git: Option<GitBranches>,
}

/// Which branches a lesson covers, for commands that name branches
/// (`git push` and its refspecs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "names")]
pub enum BranchRule {
    /// Branches play no part.
    Any,
    /// Every branch named must be known and not the default branch.
    NonDefault,
    /// Every branch named must be one of these.
    Named(Vec<String>),
}

/// Which paths a lesson covers: a path is covered when it matches one of the
/// globs, or when every class it has is one of `classes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRule {
    pub classes: Vec<String>,
    pub globs: Vec<String>,
}

/// A structured matcher over actions. Every criterion must hold for every
/// held command of the action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    /// What it covers, in words, for the queue and the inspector.
    pub description: String,
    pub program: String,
    /// Subcommand words, exactly; empty means the command has none.
    pub subcommand: Vec<String>,
    /// Flags the command may carry; any other flag breaks the match.
    pub flags: Vec<String>,
    /// Globs operands must match, by position; operands past the last glob
    /// must match the last one. Empty means no operands.
    pub operands: Vec<String>,
    pub paths: PathRule,
    /// Globs every destination must match one of; empty means no network.
    pub destinations: Vec<String>,
    pub branches: BranchRule,
    /// Exact workspace id.
    pub workspace: String,
    /// Exact role; None covers every role (only a human edit sets it so).
    pub role: Option<String>,
    /// The riskiest tier it covers.
    pub max_tier: Tier,
}

/// Whether `lesson` covers `action`: every command the policy held is
/// covered, and at least one command is (an action with nothing held is
/// matched on any of its commands).
pub fn matches(lesson: &Lesson, action: &Action) -> bool {
    if action.workspace != lesson.workspace
        || action.tier > lesson.max_tier
        || lesson.role.as_ref().is_some_and(|r| *r != action.role)
        || !action
            .destinations
            .iter()
            .all(|d| any_glob(&lesson.destinations, d))
    {
        return false;
    }
    let mut held = action
        .commands
        .iter()
        .filter(|c| c.verdict >= Verdict::Hold)
        .peekable();
    if held.peek().is_none() {
        return action
            .commands
            .iter()
            .any(|c| covers(lesson, c, action.git.as_ref()));
    }
    held.all(|c| covers(lesson, c, action.git.as_ref()))
}

fn any_glob(globs: &[String], text: &str) -> bool {
    globs.iter().any(|g| glob_match(g, text))
}

fn covers(lesson: &Lesson, command: &ActionCommand, git: Option<&GitBranches>) -> bool {
    command.program == lesson.program
        && command.subcommand == lesson.subcommand
        && command.flags.iter().all(|f| lesson.flags.contains(f))
        && covers_operands(&lesson.operands, &command.operands)
        && command.paths.iter().all(|p| path_covered(&lesson.paths, p))
        && branches_covered(&lesson.branches, command, git)
}

/// Operand `i` must match glob `i`; operands past the last glob must match
/// the last one. No globs, no operands.
fn covers_operands(globs: &[String], operands: &[String]) -> bool {
    operands.iter().enumerate().all(|(i, operand)| {
        globs
            .get(i)
            .or(globs.last())
            .is_some_and(|g| glob_match(g, operand))
    })
}

fn path_covered(rule: &PathRule, path: &PathArg) -> bool {
    any_glob(&rule.globs, &path.text)
        || (!path.classes.is_empty() && path.classes.iter().all(|c| rule.classes.contains(c)))
}

fn branches_covered(rule: &BranchRule, command: &ActionCommand, git: Option<&GitBranches>) -> bool {
    if *rule == BranchRule::Any {
        return true;
    }
    let Some(named) = pushed_branches(command, git) else {
        return false;
    };
    match rule {
        BranchRule::Any => true,
        BranchRule::NonDefault => git
            .and_then(|g| g.default.as_deref())
            .is_some_and(|default| named.iter().all(|b| b != default)),
        BranchRule::Named(names) => named.iter().all(|b| names.contains(b)),
    }
}

/// The remote branches a `git push` writes: the destination of each refspec
/// after the remote, or the current branch when none is given. None when it
/// cannot be known (detached head, `HEAD` with no branch, not a push).
fn pushed_branches(command: &ActionCommand, git: Option<&GitBranches>) -> Option<Vec<String>> {
    if command.program != "git" || command.subcommand != ["push"] {
        return None;
    }
    let current = git.and_then(|g| g.current.clone());
    let refspecs = command.operands.get(1..).unwrap_or_default();
    if refspecs.is_empty() {
        return current.map(|c| vec![c]);
    }
    refspecs
        .iter()
        .map(|spec| {
            let spec = spec.trim_start_matches('+');
            let destination = spec.rsplit_once(':').map_or(spec, |(_, d)| d);
            let branch = destination
                .strip_prefix("refs/heads/")
                .unwrap_or(destination);
            match branch {
                "" => None,
                "HEAD" => current.clone(),
                name => Some(name.to_owned()),
            }
        })
        .collect()
}

/// Proposes a lesson from an approved action: the approved shape with its
/// free parts widened where that stays inside the same kind of risk.
///
/// - program, subcommand, flags, path classes, destinations, workspace, role
///   and tier are kept as approved (a new flag, a new path class, a new host
///   or a riskier tier is not covered);
/// - a `git push` to a non-default branch covers every non-default branch of
///   the same remote ("git push to non-default branches of this repo"); to
///   the default branch, only that branch;
/// - other operands are kept literally.
///
/// None when there is nothing to generalise from: no held command, or held
/// commands of more than one shape.
pub fn generalise(action: &Action) -> Option<Lesson> {
    let held: Vec<&ActionCommand> = action
        .commands
        .iter()
        .filter(|c| c.verdict >= Verdict::Hold)
        .collect();
    let first = *held.first()?;
    if held
        .iter()
        .any(|c| c.program != first.program || c.subcommand != first.subcommand)
    {
        return None;
    }
    let mut flags = Vec::new();
    let mut classes = Vec::new();
    for command in &held {
        extend_unique(&mut flags, &command.flags);
        for path in &command.paths {
            extend_unique(&mut classes, &path.classes);
        }
    }
    let is_push = first.program == "git" && first.subcommand == ["push"];
    let pushed = if is_push {
        pushed_branches(first, action.git.as_ref())
    } else {
        None
    };
    let default = action.git.as_ref().and_then(|g| g.default.as_deref());
    let branches = match (&pushed, default) {
        (Some(named), Some(default)) if named.iter().all(|b| b != default) => {
            BranchRule::NonDefault
        }
        (Some(named), _) => BranchRule::Named(named.clone()),
        (None, _) => BranchRule::Any,
    };
    let operands = if branches == BranchRule::NonDefault {
        // The remote stays; the refspecs become any branch, bounded by the
        // non-default rule.
        let mut globs = first.operands.get(..1).unwrap_or_default().to_vec();
        globs.push("*".to_owned());
        globs
    } else {
        first.operands.clone()
    };
    if !held.iter().all(|c| covers_operands(&operands, &c.operands)) {
        return None;
    }
    let description = describe(first, &branches, action);
    Some(Lesson {
        description,
        program: first.program.clone(),
        subcommand: first.subcommand.clone(),
        flags,
        operands,
        paths: PathRule {
            classes,
            globs: Vec::new(),
        },
        destinations: action.destinations.clone(),
        branches,
        workspace: action.workspace.clone(),
        role: Some(action.role.clone()),
        max_tier: action.tier,
    })
}

fn extend_unique(into: &mut Vec<String>, from: &[String]) {
    for item in from {
        if !into.contains(item) {
            into.push(item.clone());
        }
    }
}

fn describe(command: &ActionCommand, branches: &BranchRule, action: &Action) -> String {
    let mut words = vec![command.program.clone()];
    words.extend(command.subcommand.iter().cloned());
    let what = words.join(" ");
    let to = match branches {
        BranchRule::NonDefault => " to non-default branches".to_owned(),
        BranchRule::Named(names) => format!(" to {}", names.join(", ")),
        BranchRule::Any => String::new(),
    };
    format!("{what}{to} of {} as role {}", action.workspace, action.role)
}

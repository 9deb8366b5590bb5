//! Path classes: where a path argument points relative to the request's
//! workspace, home and the host's system trees. Purely lexical: `..` is
//! resolved on the text, `~` through [`crate::Context::home`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::lexical::{is_within, normalize};
use crate::shell::Word;

/// A set of [`PathClass`] bits.
pub type Classes = u32;

/// The classes a rule can name in `paths = [...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathClass {
    /// `/` itself, or everything directly under it (`/*`).
    Root,
    /// A system tree (`/etc`, `/usr`, …) or a direct child of one.
    SystemDir,
    /// Anything inside a system tree.
    SystemPath,
    /// A file whose overwrite breaks the host (`/etc/passwd`, `/boot/*`, …).
    Critical,
    /// The home directory itself, or everything directly under it (`~/*`).
    Home,
    /// Not inside the workspace, a scratch tree or a writable cache.
    OutsideWorkspace,
    Workspace,
    /// The workspace root itself, or everything directly under it.
    WorkspaceRoot,
    /// A scratch tree (the command's private `/tmp`, `/var/tmp`) or inside one.
    Scratch,
    Cache,
    Protected,
    Secret,
    /// Praxis' own state or config.
    Praxis,
    /// A place whose files run later for the user, outside any session
    /// (`~/.local/bin`, `~/.config/autostart`, …).
    Autorun,
    BlockDevice,
    /// `/dev/null`, `/dev/stdout`, …: touches nothing.
    HarmlessDevice,
    /// Contains an expansion whose value is unknown.
    Dynamic,
    /// Dynamic with no literal directory before it: could be anywhere.
    Unknown,
}

const ALL: [(PathClass, &str); 18] = [
    (PathClass::Root, "root"),
    (PathClass::SystemDir, "system_dir"),
    (PathClass::SystemPath, "system_path"),
    (PathClass::Critical, "critical"),
    (PathClass::Home, "home"),
    (PathClass::OutsideWorkspace, "outside_workspace"),
    (PathClass::Workspace, "workspace"),
    (PathClass::WorkspaceRoot, "workspace_root"),
    (PathClass::Scratch, "scratch"),
    (PathClass::Cache, "cache"),
    (PathClass::Protected, "protected"),
    (PathClass::Secret, "secret"),
    (PathClass::Praxis, "praxis"),
    (PathClass::Autorun, "autorun"),
    (PathClass::BlockDevice, "block_device"),
    (PathClass::HarmlessDevice, "harmless_device"),
    (PathClass::Dynamic, "dynamic"),
    (PathClass::Unknown, "unknown"),
];

impl PathClass {
    pub const fn bit(self) -> Classes {
        1 << (self as u32)
    }

    pub fn from_name(name: &str) -> Option<PathClass> {
        ALL.iter().find(|(_, n)| *n == name).map(|(c, _)| *c)
    }

    /// Names of the classes in `set`, for explanations.
    pub fn names(set: Classes) -> Vec<&'static str> {
        ALL.iter()
            .filter(|(c, _)| set & c.bit() != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// A path list entry: absolute or under home, optionally ending in a `*` prefix
/// glob; a component that is only `*` stands for any one name (`/proc/*/environ`).
#[derive(Clone, Debug)]
pub struct PathPattern {
    under_home: bool,
    /// Without the leading `~` or `/`, and without a trailing `*`.
    rest: String,
    prefix: bool,
    /// A component is `*`: matched component by component.
    any_component: bool,
}

impl PathPattern {
    pub fn parse(entry: &str) -> Result<PathPattern, String> {
        let (under_home, rest) = if let Some(r) = entry.strip_prefix("~/") {
            (true, r)
        } else if entry == "~" {
            (true, "")
        } else if let Some(r) = entry.strip_prefix('/') {
            (false, r)
        } else {
            return Err(format!("path `{entry}` must start with `/` or `~`"));
        };
        let (rest, prefix) = match rest.strip_suffix('*') {
            Some(r) => (r, true),
            None => (rest.trim_end_matches('/'), false),
        };
        if rest
            .split('/')
            .any(|c| c != "*" && c.contains(['*', '?', '[']))
        {
            return Err(format!(
                "path `{entry}` may only glob with a trailing `*` or a `*` component"
            ));
        }
        Ok(PathPattern {
            under_home,
            rest: rest.to_owned(),
            prefix,
            any_component: rest.split('/').any(|c| c == "*"),
        })
    }

    /// Whether the place's path is this entry or inside it.
    pub fn covers(&self, place: &Place<'_>) -> bool {
        if self.any_component {
            return self.could_name(place.path, place.home);
        }
        let Some(rel) = (if self.under_home {
            place.from_home
        } else {
            place.from_root
        }) else {
            return false;
        };
        // Most entries differ from the path at their first byte: that test
        // is cheaper than comparing the whole entry.
        if rel.as_bytes().first() != self.rest.as_bytes().first() && !self.rest.is_empty() {
            return false;
        }
        let Some(tail) = rel.strip_prefix(self.rest.as_str()) else {
            return false;
        };
        if self.prefix {
            return true;
        }
        tail.is_empty() || tail.starts_with('/') || (self.rest.is_empty() && !self.under_home)
    }
}

/// A normalized absolute path as the path lists' entries are matched
/// against it, relative to `/` and to the home once for every entry.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    path: &'a str,
    home: &'a str,
    /// The path without its leading `/`.
    from_root: Option<&'a str>,
    /// The path relative to the home; None outside it or without a home.
    from_home: Option<&'a str>,
}

impl<'a> Place<'a> {
    pub fn new(path: &'a str, home: &'a str) -> Place<'a> {
        // `base` is "" for `/`, or the home: the rest of `path` after
        // `base` and one `/`, or "" when `path` is `base`.
        let rest_of = |base: &str| -> Option<&'a str> {
            let p = path.strip_prefix(base)?;
            p.strip_prefix('/')
                .or(if p.is_empty() { Some("") } else { None })
        };
        Place {
            path,
            home,
            from_root: rest_of(""),
            from_home: if home.is_empty() { None } else { rest_of(home) },
        }
    }
}

impl PathPattern {
    /// Whether the pathname pattern `pattern` (normalized, absolute; `*`, `?`
    /// and `[…]` in its components) could name this entry, something inside
    /// it, or a directory that holds it: each of its components could be the
    /// entry's component at that place.
    pub fn could_name(&self, pattern: &str, home: &str) -> bool {
        if self.under_home && home.is_empty() {
            return false;
        }
        let base = if self.under_home { home } else { "" };
        let mut wanted: Vec<&str> = base
            .split('/')
            .chain(self.rest.split('/'))
            .filter(|c| !c.is_empty())
            .collect();
        if self.prefix && self.rest.ends_with('/') {
            // `/etc/*`: anything strictly inside `/etc`.
            wanted.push("");
        } else if !self.prefix && wanted.is_empty() {
            return true;
        }
        let given: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
        if given.len() < wanted.len() && !given.last().is_some_and(|c| has_glob(c)) {
            return false;
        }
        let last = wanted.len() - 1;
        given.iter().zip(&wanted).enumerate().all(|(i, (g, w))| {
            let w = if self.prefix && i == last {
                format!("{w}*")
            } else {
                (*w).to_owned()
            };
            if has_glob(g) || has_glob(&w) {
                patterns_meet(g, &w)
            } else {
                *g == w
            }
        })
    }

    /// Whether this entry lies strictly inside directory `dir` (normalized, absolute).
    pub fn lies_within(&self, dir: &str, home: &str) -> bool {
        if self.under_home && home.is_empty() {
            return false;
        }
        let base = if self.under_home { home } else { "" };
        let full = format!("{base}/{}", self.rest);
        full != dir && is_within(&full, dir)
    }
}

/// Number of components (`/` is 0, `/etc` is 1).
fn depth(path: &str) -> usize {
    path.split('/').filter(|p| !p.is_empty()).count()
}

/// The loaded path lists.
#[derive(Clone, Debug)]
pub struct PathLists {
    pub system: Vec<String>,
    pub critical: Vec<PathPattern>,
    pub scratch: Vec<String>,
    pub secrets: Vec<PathPattern>,
    /// Each protected name split into components.
    pub protected: Vec<Vec<String>>,
    pub caches: Vec<PathPattern>,
    pub autorun: Vec<PathPattern>,
    pub block_devices: Vec<PathPattern>,
    pub harmless_devices: Vec<PathPattern>,
}

/// Where the request stands: the directories paths are judged against.
#[derive(Clone, Debug)]
pub struct Frame<'a> {
    /// Effective working directory (after literal `cd`), None when unknown.
    pub cwd: Option<&'a str>,
    pub home: &'a str,
    /// None when the workspace would be `/` (no workspace at all).
    pub workspace: Option<&'a str>,
    pub praxis_dirs: &'a [String],
    /// `$TMPDIR` is the command's private scratch dir: the request never sets it.
    pub private_tmpdir: bool,
    /// The repository's remotes (name to URL).
    pub git_remotes: &'a BTreeMap<String, String>,
    /// Programs named by a path that the host found to be a project's own
    /// tool ([`crate::Context::tools`]).
    pub tools: &'a BTreeMap<PathBuf, String>,
    /// Named paths that lead to another file through symbolic links
    /// ([`crate::Context::links`]).
    pub links: &'a BTreeMap<PathBuf, PathBuf>,
}

/// A resolved path argument.
#[derive(Clone, Debug)]
pub struct Located {
    /// Normalized absolute path, or the literal directory prefix of a dynamic word.
    pub path: Option<String>,
    pub classes: Classes,
}

/// The classes a path takes over from the file a link of it leads to.
const FOLLOWED: Classes = PathClass::Secret.bit()
    | PathClass::Critical.bit()
    | PathClass::Praxis.bit()
    | PathClass::BlockDevice.bit()
    | PathClass::Autorun.bit()
    | PathClass::Protected.bit();

/// Whether an unquoted glob character is in this component.
fn has_glob(component: &str) -> bool {
    component.contains(['*', '?', '['])
}

/// Whether some name matches both pathname patterns `a` and `b` (`*`, `?`,
/// `[…]`; everything else literal). A bracket is taken as any one character,
/// so the answer errs towards yes.
fn patterns_meet(a: &str, b: &str) -> bool {
    fn token(s: &[char]) -> (Option<char>, usize) {
        match s[0] {
            '?' => (None, 1),
            '[' => match s.iter().skip(2).position(|&c| c == ']') {
                Some(end) => (None, end + 3),
                None => (Some('['), 1),
            },
            c => (Some(c), 1),
        }
    }
    fn meet(a: &[char], b: &[char]) -> bool {
        match (a.first(), b.first()) {
            (None, None) => true,
            (Some('*'), _) => meet(&a[1..], b) || (!b.is_empty() && meet(a, &b[token(b).1..])),
            (_, Some('*')) => meet(b, a),
            (None, _) | (_, None) => false,
            _ => {
                let ((ca, la), (cb, lb)) = (token(a), token(b));
                (ca.is_none() || cb.is_none() || ca == cb) && meet(&a[la..], &b[lb..])
            }
        }
    }
    // The shell's patterns name a leading dot only with a dot.
    let hidden = |s: &str| s.starts_with('.');
    if hidden(a) != hidden(b) && !(a.is_empty() || b.is_empty()) {
        return false;
    }
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    meet(&a, &b)
}

/// Whether a word's text (absolute, with globs or braces) could name an entry of `list`.
fn could_name_one_of(list: &[PathPattern], text: &str, home: &str) -> bool {
    brace_alternatives(text).iter().any(|alt| {
        let alt = normalize(alt);
        list.iter().any(|p| p.could_name(&alt, home))
    })
}

/// The words a brace expression stands for (`~/.{ssh,aws}/x`: two), at most
/// `LIMIT`; a text without one stands for itself.
fn brace_alternatives(text: &str) -> Vec<String> {
    const LIMIT: usize = 64;
    let mut out = vec![text.to_owned()];
    let mut done = Vec::new();
    while let Some(word) = out.pop() {
        let open = word.find('{');
        let close = open.and_then(|o| word[o..].find('}').map(|c| o + c));
        let (Some(open), Some(close)) = (open, close) else {
            done.push(word);
            continue;
        };
        let inner = &word[open + 1..close];
        if !inner.contains(',') || done.len() + out.len() >= LIMIT {
            done.push(word);
            continue;
        }
        for alt in inner.split(',') {
            out.push(format!("{}{alt}{}", &word[..open], &word[close + 1..]));
        }
    }
    done
}

impl PathLists {
    /// Locates and classifies a path word. `deleting` marks accesses that remove
    /// the path, so an ancestor of a protected name counts as protected.
    pub fn locate(&self, word: &Word, frame: &Frame<'_>, deleting: bool) -> Located {
        let text = word.text.as_str();
        let mut classes = 0;
        // A dynamic word keeps only its literal directory prefix, if any.
        if word.dynamic && frame.private_tmpdir && in_private_tmpdir(text) {
            return Located {
                path: None,
                classes: PathClass::Scratch.bit(),
            };
        }
        let literal = if word.dynamic {
            classes |= PathClass::Dynamic.bit();
            let cut = text.find(['$', '`']).unwrap_or(text.len());
            match text[..cut].rfind('/') {
                Some(slash) if slash > 0 || text.starts_with('/') => &text[..=slash],
                _ => return unknown(classes),
            }
        } else {
            text
        };
        let absolute = if literal == "~" || literal.starts_with("~/") {
            if frame.home.is_empty() {
                return unknown(classes);
            }
            format!("{}{}", frame.home, &literal[1..])
        } else if let Some(user) = literal.strip_prefix('~') {
            // `~user`: another user's home, where ever it lies; itself or
            // all of it is a home.
            let named = user.split_once('/').map_or("", |(_, rest)| rest);
            if matches!(named, "" | "*") {
                classes |= PathClass::Home.bit();
            }
            return unknown(classes);
        } else if literal.starts_with('/') {
            literal.to_owned()
        } else {
            match frame.cwd {
                Some(cwd) => format!("{cwd}/{literal}"),
                None => return unknown(classes | PathClass::Dynamic.bit()),
            }
        };
        // A glob or brace that could name a secret or a system file names it.
        if word.glob || (word.dynamic && text.contains('{')) {
            let whole = format!("{absolute}{}", &text[literal.len()..]);
            for (list, class) in [
                (&self.secrets, PathClass::Secret),
                (&self.critical, PathClass::Critical),
            ] {
                if could_name_one_of(list, &whole, frame.home) {
                    classes |= class.bit();
                }
            }
        }
        // A glob component: judge the directory it enumerates. `*` takes all of
        // it; a filtered glob (`*.o`) only some entries, so not the directory
        // itself (but still anything in a system tree).
        let (absolute, contents, filtered) = if word.glob && has_glob(&absolute) {
            let found = absolute
                .split('/')
                .scan(0usize, |pos, comp| {
                    let start = *pos;
                    *pos += comp.len() + 1;
                    Some((start, comp))
                })
                .find(|(_, comp)| has_glob(comp));
            let (cut, comp) = found.unwrap_or((absolute.len(), ""));
            let everything = matches!(comp, "*" | ".*" | "**" | "*.*" | ".[!.]*");
            (absolute[..cut].to_owned(), true, !everything)
        } else {
            (absolute, false, false)
        };
        let path = normalize(&absolute);
        let mut found = self.classes_of(&path, contents, frame, deleting);
        // Through a link, the file it leads to is read or written (deleting
        // one removes the link itself).
        if !deleting && let Some(target) = frame.links.get(Path::new(&path)) {
            found |= self.classes_of(&target.to_string_lossy(), contents, frame, false) & FOLLOWED;
        }
        if filtered {
            found &=
                !(PathClass::Root.bit() | PathClass::Home.bit() | PathClass::WorkspaceRoot.bit());
            if found & PathClass::Workspace.bit() != 0 {
                found &= !PathClass::Protected.bit();
            }
        }
        classes |= found;
        Located {
            path: Some(path),
            classes,
        }
    }

    fn classes_of(&self, path: &str, contents: bool, frame: &Frame<'_>, deleting: bool) -> Classes {
        let home = frame.home;
        let place = Place::new(path, home);
        if self.harmless_devices.iter().any(|p| p.covers(&place)) {
            return PathClass::HarmlessDevice.bit();
        }
        let mut c = 0;
        if self.block_devices.iter().any(|p| p.covers(&place)) {
            c |= PathClass::BlockDevice.bit() | PathClass::SystemPath.bit();
        }
        if path == "/" {
            c |= PathClass::Root.bit() | PathClass::SystemDir.bit() | PathClass::SystemPath.bit();
        }
        if frame
            .praxis_dirs
            .iter()
            .any(|d| is_within(path, d) || (deleting && is_within(d, path)))
        {
            c |= PathClass::Praxis.bit();
        }
        if self.secrets.iter().any(|p| p.covers(&place)) {
            c |= PathClass::Secret.bit();
        }
        if self.critical.iter().any(|p| p.covers(&place)) {
            c |= PathClass::Critical.bit();
        }
        if self.autorun.iter().any(|p| p.covers(&place)) {
            c |= PathClass::Autorun.bit();
        }
        let in_home = !home.is_empty() && home != "/" && is_within(path, home);
        if in_home && (path == home || (contents && depth(path) == depth(home))) {
            c |= PathClass::Home.bit();
        }
        let workspace = frame.workspace.filter(|w| is_within(path, w));
        // The tree itself too: it is the command's own, emptying it touches
        // nothing else. A home that lies there is still judged as a home.
        let in_scratch = !in_home && self.scratch.iter().any(|s| is_within(path, s));
        if let Some(ws) = workspace {
            c |= PathClass::Workspace.bit();
            if path == ws {
                c |= PathClass::WorkspaceRoot.bit();
            }
            if self.is_protected(&path[ws.len()..], deleting) {
                c |= PathClass::Protected.bit();
            }
        } else if in_scratch {
            c |= PathClass::Scratch.bit();
        } else if self.caches.iter().any(|p| p.covers(&place)) {
            c |= PathClass::Cache.bit();
        } else {
            c |= PathClass::OutsideWorkspace.bit();
            if in_home && self.is_protected(&path[home.len()..], deleting) {
                c |= PathClass::Protected.bit();
            }
        }
        // System classes, unless the path lies strictly inside the workspace or
        // home (a workspace under `/srv` is still a workspace).
        let inside_own =
            workspace.is_some_and(|w| path != w) || (in_home && path != home) || in_scratch;
        if !inside_own {
            for sys in &self.system {
                if is_within(path, sys) {
                    c |= PathClass::SystemPath.bit();
                    let below = depth(path) - depth(sys);
                    if below == 0 || (below == 1 && !contents) {
                        c |= PathClass::SystemDir.bit();
                    }
                }
            }
        }
        c
    }

    /// Whether `rel` (a path relative to a writable root, leading `/`) is or is
    /// inside a protected name, or (when deleting) an ancestor of one.
    fn is_protected(&self, rel: &str, deleting: bool) -> bool {
        let comps: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        self.protected.iter().any(|entry| {
            (0..comps.len()).any(|start| {
                let window = &comps[start..];
                let n = entry.len().min(window.len());
                window[..n].iter().zip(entry).all(|(a, b)| a == b) && (n == entry.len() || deleting)
            }) || (deleting && comps.is_empty())
        })
    }
}

/// `$TMPDIR/a/b` or `${TMPDIR}/a/b` with a plain literal rest: a path inside
/// the command's private scratch dir. No globs: were `TMPDIR` ever empty,
/// `$TMPDIR/*` would be `/*`.
fn in_private_tmpdir(text: &str) -> bool {
    let rest = text
        .strip_prefix("$TMPDIR/")
        .or_else(|| text.strip_prefix("${TMPDIR}/"));
    rest.is_some_and(|r| {
        !r.is_empty()
            && !r.contains(['$', '`', '*', '?', '['])
            && !r.split('/').any(|component| component == "..")
    })
}

/// Whether a request leaves `$TMPDIR` as the sandbox sets it: every mention
/// of the name is a plain expansion (`$TMPDIR`, `${TMPDIR}`), never an
/// assignment, `read`, `for` variable or `${TMPDIR:=…}`.
pub fn keeps_private_tmpdir(request_text: &str) -> bool {
    request_text.match_indices("TMPDIR").all(|(at, _)| {
        let before = &request_text[..at];
        let after = &request_text[at + "TMPDIR".len()..];
        let name_ends = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        name_ends
            && ((before.ends_with('$') && !before.ends_with("\\$"))
                || (before.ends_with("${") && after.starts_with('}')))
    })
}

fn unknown(classes: Classes) -> Located {
    Located {
        path: None,
        classes: classes | PathClass::OutsideWorkspace.bit() | PathClass::Unknown.bit(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists() -> PathLists {
        let pats = |v: &[&str]| v.iter().map(|s| PathPattern::parse(s).unwrap()).collect();
        PathLists {
            system: vec!["/etc".into(), "/usr".into(), "/home".into(), "/var".into()],
            critical: pats(&["/etc/passwd", "/boot/*"]),
            scratch: vec!["/tmp".into(), "/var/tmp".into()],
            secrets: pats(&["~/.ssh", "/etc/shadow"]),
            protected: vec![vec![".git".into(), "hooks".into()], vec![".bashrc".into()]],
            caches: pats(&["~/.cache"]),
            autorun: pats(&["~/.local/bin"]),
            block_devices: pats(&["/dev/sd*", "/dev/nvme*"]),
            harmless_devices: pats(&["/dev/null", "/dev/fd/*"]),
        }
    }

    fn word(text: &str) -> Word {
        Word {
            text: text.into(),
            // The parser marks a brace word dynamic: its value is several words.
            dynamic: text.contains(['$', '{']),
            glob: text.contains(['*', '?', '[']),
        }
    }

    fn classes(text: &str, deleting: bool) -> Vec<&'static str> {
        let frame = Frame {
            cwd: Some("/home/dev/project/src"),
            home: "/home/dev",
            workspace: Some("/home/dev/project"),
            praxis_dirs: &[],
            private_tmpdir: true,
            git_remotes: &BTreeMap::new(),
            tools: &BTreeMap::new(),
            links: &BTreeMap::new(),
        };
        PathClass::names(lists().locate(&word(text), &frame, deleting).classes)
    }

    #[test]
    fn the_private_tmpdir_is_scratch_only_while_the_request_keeps_it() {
        assert_eq!(classes("$TMPDIR/out.txt", false), vec!["scratch"]);
        assert_eq!(classes("${TMPDIR}/a/b", false), vec!["scratch"]);
        assert!(classes("$TMPDIR/../x", false).contains(&"unknown"));
        assert!(classes("$TMPDIR/$NAME", false).contains(&"unknown"));
        assert!(classes("$TMPDIR/*", true).contains(&"unknown"));
        assert!(keeps_private_tmpdir(
            "echo x > $TMPDIR/a && cat ${TMPDIR}/a"
        ));
        for setter in [
            "TMPDIR=/etc; echo x > $TMPDIR/passwd",
            "export TMPDIR=/etc",
            "read TMPDIR",
            "for TMPDIR in /etc; do :; done",
            "echo ${TMPDIR:=/etc}",
            "MYTMPDIR=/x",
        ] {
            assert!(!keeps_private_tmpdir(setter), "{setter}");
        }
    }

    #[test]
    fn classifies_catastrophic_targets() {
        assert!(classes("/", true).contains(&"root"));
        assert!(classes("/*", true).contains(&"root"));
        assert!(classes("~", true).contains(&"home"));
        assert!(classes("~/*", true).contains(&"home"));
        assert!(classes("../..", true).contains(&"home"));
        assert!(classes("/etc", true).contains(&"system_dir"));
        assert!(classes("/etc/*", true).contains(&"system_dir"));
        assert!(!classes("/etc/nginx/conf.d", true).contains(&"system_dir"));
        assert!(classes("/etc/nginx/conf.d", true).contains(&"system_path"));
        assert!(classes("/dev/sda1", false).contains(&"block_device"));
        assert_eq!(classes("/dev/null", false), vec!["harmless_device"]);
        assert!(classes("/etc/passwd", false).contains(&"critical"));
    }

    #[test]
    fn classifies_workspace_and_home() {
        assert_eq!(classes("target", true), vec!["workspace"]);
        assert_eq!(
            classes("..", true),
            vec!["workspace", "workspace_root", "protected"]
        );
        assert_eq!(classes("../../other", false), vec!["outside_workspace"]);
        assert_eq!(classes("/tmp/x", false), vec!["scratch"]);
        assert_eq!(classes("/tmp", true), vec!["scratch"]);
        assert_eq!(classes("/var/tmp/x", false), vec!["scratch"]);
        // The private /var/tmp is no system tree; what lies above it still is.
        assert_eq!(classes("/var/tmp", true), vec!["scratch"]);
        assert_eq!(
            classes("/var/tmp/..", true),
            vec!["system_dir", "system_path", "outside_workspace"]
        );
        assert_eq!(classes("/tmpx", true), vec!["outside_workspace"]);
        let home_in_tmp = Frame {
            cwd: Some("/tmp/h/project"),
            home: "/tmp/h",
            workspace: Some("/tmp/h/project"),
            praxis_dirs: &[],
            private_tmpdir: true,
            git_remotes: &BTreeMap::new(),
            tools: &BTreeMap::new(),
            links: &BTreeMap::new(),
        };
        let located =
            |text: &str| PathClass::names(lists().locate(&word(text), &home_in_tmp, false).classes);
        assert_eq!(
            located("/tmp/h/.bashrc"),
            vec!["outside_workspace", "protected"]
        );
        assert_eq!(located("/tmp/h/project/x"), vec!["workspace"]);
        assert_eq!(located("/tmp/x"), vec!["scratch"]);
        assert_eq!(classes("~/.cache/pip", true), vec!["cache"]);
        assert!(classes("~/.ssh/id_rsa", false).contains(&"secret"));
        assert!(classes("../.git/hooks/pre-commit", false).contains(&"protected"));
        assert!(classes("../.git", true).contains(&"protected"));
        assert!(!classes("../.git", false).contains(&"protected"));
        assert!(classes("~/.bashrc", false).contains(&"protected"));
        assert!(!classes("/home/dev/project/x", false).contains(&"system_path"));
    }

    #[test]
    fn dynamic_words_keep_their_literal_directory() {
        assert_eq!(
            classes("$DIR", true),
            vec!["outside_workspace", "dynamic", "unknown"]
        );
        assert_eq!(classes("build/$x", true), vec!["workspace", "dynamic"]);
        let home_dynamic = classes("~/$x", true);
        assert!(home_dynamic.contains(&"home") && home_dynamic.contains(&"dynamic"));
    }

    #[test]
    fn a_pattern_that_could_name_a_secret_names_it() {
        let secret = |text: &str| classes(text, false).contains(&"secret");
        for text in [
            "~/.ssh/id_*",
            "~/.ssh/id_[rd]sa",
            "~/.ss?/config",
            "~/.{ssh,aws}/x",
            "~/.s*",
            "/etc/s[h]adow",
            "/etc/{passwd,shadow}",
            "~/.*/known_hosts",
        ] {
            assert!(secret(text), "{text}");
        }
        for text in [
            "~/*",
            "~/.cache/*",
            "src/*.rs",
            "/etc/*.conf",
            "{a,b}.txt",
            "~/.sshx*",
        ] {
            assert!(!secret(text), "{text}");
        }
        let environ = PathPattern::parse("/proc/*/environ").unwrap();
        assert!(environ.covers(&Place::new("/proc/1/environ", "")));
        assert!(!environ.covers(&Place::new("/proc/1/status", "")));
        assert!(environ.could_name("/proc/[0-9]*/environ", ""));
        assert!(PathPattern::parse("/proc/x*y/environ").is_err());
        assert!(patterns_meet("id_[rd]sa", "id_rsa") && !patterns_meet("id_[rd]sa*", ".x"));
        assert_eq!(brace_alternatives("a{b,c}d{e,f}").len(), 4);
    }

    #[test]
    fn another_users_home_is_a_home() {
        for text in ["~root", "~root/", "~dev/*"] {
            assert!(classes(text, true).contains(&"home"), "{text}");
        }
        assert!(!classes("~dev/project/build", true).contains(&"home"));
    }

    #[test]
    fn patterns_cover_themselves_and_children_only() {
        let p = PathPattern::parse("~/.ssh").unwrap();
        assert!(p.covers(&Place::new("/home/dev/.ssh", "/home/dev")));
        assert!(p.covers(&Place::new("/home/dev/.ssh/id_rsa", "/home/dev")));
        assert!(!p.covers(&Place::new("/home/dev/.sshx", "/home/dev")));
        let d = PathPattern::parse("/dev/sd*").unwrap();
        assert!(d.covers(&Place::new("/dev/sdb2", "")));
        assert!(!d.covers(&Place::new("/dev/null", "")));
        assert!(PathPattern::parse("relative").is_err());
    }

    /// The entries whose match does not start at a first byte: the root,
    /// the home itself, and a home-relative entry when there is no home.
    #[test]
    fn the_root_and_the_home_are_matched_without_a_first_byte() {
        let root = PathPattern::parse("/").unwrap();
        assert!(root.covers(&Place::new("/", "/home/dev")));
        assert!(root.covers(&Place::new("/etc/passwd", "/home/dev")));
        let home = PathPattern::parse("~").unwrap();
        assert!(home.covers(&Place::new("/home/dev", "/home/dev")));
        assert!(!home.covers(&Place::new("/home/devx", "/home/dev")));
        assert!(!home.covers(&Place::new("/home/dev", "")));
        let ssh = PathPattern::parse("~/.ssh").unwrap();
        assert!(!ssh.covers(&Place::new("/.ssh", "")));
        assert!(!ssh.covers(&Place::new("/home/dev", "/home/dev")));
        let hidden = PathPattern::parse("~/.*").unwrap();
        assert!(hidden.covers(&Place::new("/home/dev/.profile", "/home/dev")));
        assert!(!hidden.covers(&Place::new("/home/dev/src", "/home/dev")));
    }
}

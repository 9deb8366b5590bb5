//! Landlock: which inodes get which rights, and the ruleset holding them.
//!
//! Rights granted on a directory cover its whole subtree, and rules only add
//! access. To keep a path P out of a grant on tree T, T itself gets only the
//! rights P may keep, and each child of T is granted separately, recursing
//! only into the child that leads to P. Every inode is opened `O_PATH |
//! O_NOFOLLOW`: a symlink never becomes a grant root, and symlinks met while
//! walking get no rule (access through them is checked on their target).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr,
    Scope,
};

/// Upper bound on the rules one carve may produce; carving beyond it fails
/// closed.
pub(crate) const MAX_RULES: usize = 20_000;

/// The ABI whose rights and scopes are required (and handled).
const REQUIRED: ABI = ABI::V6;

/// `LANDLOCK_CREATE_RULESET_VERSION`.
const LANDLOCK_VERSION_FLAG: u32 = 1;

/// The running kernel's Landlock ABI, 0 when Landlock is missing or disabled.
pub(crate) fn landlock_abi() -> i32 {
    let null: *const libc::c_void = std::ptr::null();
    // SAFETY: with the version flag the kernel only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            null,
            0usize,
            LANDLOCK_VERSION_FLAG,
        )
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}

/// Why the Landlock ruleset could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// Creating the ruleset or adding a rule failed (includes a kernel below ABI 6).
    #[error("{0}")]
    Ruleset(#[from] landlock::RulesetError),
    /// A rule for one path was refused.
    #[error("adding a rule for {path}: {source}")]
    AddRule {
        /// The path.
        path: PathBuf,
        /// The refusal.
        #[source]
        source: io::Error,
    },
    /// The kernel reported no ruleset although one was required.
    #[error("the kernel created no Landlock ruleset")]
    NoRuleset,
    /// A path to grant or carve could not be opened or listed.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A grant root is a symlink; granting it would grant its target.
    #[error("refusing to grant through a symlink: {0}")]
    SymlinkRoot(PathBuf),
    /// A path given to the sandbox is relative.
    #[error("path must be absolute: {0}")]
    Relative(PathBuf),
    /// Carving would need more rules than the bound allows.
    #[error("carving {0} needs more than {MAX_RULES} rules")]
    TooManyRules(PathBuf),
}

/// Read and execute: what every restricted profile grants on `/`.
pub(crate) fn read_rights() -> BitFlags<AccessFs> {
    AccessFs::Execute | AccessFs::ReadFile | AccessFs::ReadDir
}

/// Every right but making device nodes: what writable trees get.
pub(crate) fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_all(REQUIRED) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// Rights a secret withholds: everything but listing names.
pub(crate) fn secret_withheld() -> BitFlags<AccessFs> {
    AccessFs::from_all(REQUIRED) & !AccessFs::ReadDir
}

/// Rights a protected path withholds: everything but reading.
pub(crate) fn protected_withheld() -> BitFlags<AccessFs> {
    AccessFs::from_all(REQUIRED) & !read_rights()
}

/// Rights for the harmless devices (`/dev/null` and friends).
pub(crate) fn device_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate
}

/// Rights on one tree.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub(crate) path: PathBuf,
    pub(crate) access: BitFlags<AccessFs>,
}

/// Rights kept away from one path (and its subtree) whatever tree contains it.
#[derive(Debug, Clone)]
pub(crate) struct Exclusion {
    pub(crate) path: PathBuf,
    pub(crate) withheld: BitFlags<AccessFs>,
}

/// One Landlock rule: an opened inode and its rights.
#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) path: PathBuf,
    pub(crate) fd: OwnedFd,
    pub(crate) access: BitFlags<AccessFs>,
}

fn open_path(path: &Path) -> Result<File, RulesError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|source| RulesError::Open {
            path: path.to_path_buf(),
            source,
        })
}

/// `path` with symlinks resolved as far as it exists, the missing rest kept as
/// written: a secret reached through a link is carved where it really lives.
pub(crate) fn resolve_lenient(path: &Path) -> Result<PathBuf, RulesError> {
    if !path.is_absolute() {
        return Err(RulesError::Relative(path.to_path_buf()));
    }
    let mut existing = path.to_path_buf();
    let mut missing = Vec::new();
    loop {
        if let Ok(real) = fs::canonicalize(&existing) {
            let mut out = real;
            out.extend(missing.iter().rev());
            return Ok(out);
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                existing = parent.to_path_buf();
            }
            _ => return Ok(path.to_path_buf()),
        }
    }
}

/// Opens every inode the grants need, carving the exclusions out. Every
/// directory whose listing the carve depended on is pushed to `listed`.
pub(crate) fn carve(
    grants: &[Grant],
    exclusions: &[Exclusion],
    listed: &mut Vec<PathBuf>,
) -> Result<Vec<Rule>, RulesError> {
    let mut rules = Vec::new();
    for grant in grants {
        if grant
            .path
            .components()
            .any(|c| matches!(c, Component::ParentDir))
            || !grant.path.is_absolute()
        {
            return Err(RulesError::Relative(grant.path.clone()));
        }
        let file = open_path(&grant.path)?;
        let meta = file.metadata().map_err(|source| RulesError::Open {
            path: grant.path.clone(),
            source,
        })?;
        if meta.file_type().is_symlink() {
            return Err(RulesError::SymlinkRoot(grant.path.clone()));
        }
        let relevant: Vec<&Exclusion> = exclusions
            .iter()
            .filter(|e| e.path.starts_with(&grant.path) && !(e.withheld & grant.access).is_empty())
            .collect();
        let mut tree = Tree {
            root: &grant.path,
            rules: &mut rules,
            listed,
        };
        tree.carve(&grant.path, file, meta.is_dir(), grant.access, &relevant)?;
    }
    Ok(rules)
}

/// One grant's carve in progress: its root, and where results go.
struct Tree<'a> {
    root: &'a Path,
    rules: &'a mut Vec<Rule>,
    listed: &'a mut Vec<PathBuf>,
}

impl Tree<'_> {
    fn carve(
        &mut self,
        path: &Path,
        file: File,
        is_dir: bool,
        access: BitFlags<AccessFs>,
        exclusions: &[&Exclusion],
    ) -> Result<(), RulesError> {
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(REQUIRED)
        };
        let inside: Vec<&Exclusion> = exclusions
            .iter()
            .copied()
            .filter(|e| e.path.starts_with(path))
            .collect();
        let own = inside.iter().fold(access, |acc, e| acc & !e.withheld);
        let whole = inside.is_empty() || !is_dir || inside.iter().any(|e| e.path == path);
        if !own.is_empty() {
            if self.rules.len() >= MAX_RULES {
                return Err(RulesError::TooManyRules(self.root.to_path_buf()));
            }
            self.rules.push(Rule {
                path: path.to_path_buf(),
                fd: file.into(),
                access: own,
            });
        }
        if whole {
            return Ok(());
        }
        self.listed.push(path.to_path_buf());
        let entries = fs::read_dir(path).map_err(|source| RulesError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| RulesError::Open {
                path: path.to_path_buf(),
                source,
            })?;
            let child = entry.path();
            let child_file = match open_path(&child) {
                Ok(f) => f,
                // Gone since listing: nothing to grant.
                Err(RulesError::Open { source, .. })
                    if source.kind() == io::ErrorKind::NotFound =>
                {
                    continue;
                }
                Err(e) => return Err(e),
            };
            let meta = child_file.metadata().map_err(|source| RulesError::Open {
                path: child.clone(),
                source,
            })?;
            if meta.file_type().is_symlink() {
                continue;
            }
            self.carve(&child, child_file, meta.is_dir(), access, &inside)?;
            if self.rules.len() > MAX_RULES {
                return Err(RulesError::TooManyRules(self.root.to_path_buf()));
            }
        }
        Ok(())
    }
}

/// Builds an empty ruleset: every filesystem right of ABI 6 handled when
/// `handle_fs`, TCP bind/connect handled when `network_off`, both scopes
/// always. Compatibility is a hard requirement: a kernel that cannot enforce
/// it all is an error. Rules are added with [`add_rules`].
pub(crate) fn ruleset(handle_fs: bool, network_off: bool) -> Result<OwnedFd, RulesError> {
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    if handle_fs {
        ruleset = ruleset.handle_access(AccessFs::from_all(REQUIRED))?;
    }
    if network_off {
        ruleset = ruleset.handle_access(AccessNet::from_all(REQUIRED))?;
    }
    let created = ruleset.scope(Scope::from_all(REQUIRED))?.create()?;
    Option::<OwnedFd>::from(created).ok_or(RulesError::NoRuleset)
}

/// `struct landlock_path_beneath_attr` of the kernel's UAPI (packed).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// Adds `rules` to `ruleset` with one `landlock_add_rule` each. The rules'
/// rights were computed for the inode's type by the carve, within the
/// handled rights, so nothing is adjusted here: the kernel refuses what is
/// wrong, and that is an error.
pub(crate) fn add_rules(ruleset: &OwnedFd, rules: &[Rule]) -> Result<(), RulesError> {
    for rule in rules {
        let attr = PathBeneathAttr {
            allowed_access: rule.access.bits(),
            parent_fd: rule.fd.as_raw_fd(),
        };
        // SAFETY: landlock_add_rule reads one path-beneath attribute from a
        // live local; both descriptors are open.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0u32,
            )
        };
        if rc != 0 {
            return Err(RulesError::AddRule {
                path: rule.path.clone(),
                source: io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rights_of<'a>(rules: &'a [Rule], path: &Path) -> Option<&'a Rule> {
        rules.iter().find(|r| r.path == path)
    }

    #[test]
    fn carving_a_secret_grants_siblings_and_walks_only_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for dir in ["a/b", "a/c", "d"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join("a/b/key"), "k").unwrap();
        fs::write(root.join("a/b/other"), "o").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("a/link")).unwrap();
        let grants = [Grant {
            path: root.to_path_buf(),
            access: read_rights(),
        }];
        let excl = [Exclusion {
            path: root.join("a/b/key"),
            withheld: secret_withheld(),
        }];
        let rules = carve(&grants, &excl, &mut Vec::new()).unwrap();
        assert_eq!(
            rights_of(&rules, root).unwrap().access,
            BitFlags::from(AccessFs::ReadDir)
        );
        assert_eq!(
            rights_of(&rules, &root.join("a")).unwrap().access,
            BitFlags::from(AccessFs::ReadDir)
        );
        assert_eq!(
            rights_of(&rules, &root.join("d")).unwrap().access,
            read_rights()
        );
        assert_eq!(
            rights_of(&rules, &root.join("a/c")).unwrap().access,
            read_rights()
        );
        let other = rights_of(&rules, &root.join("a/b/other")).unwrap();
        assert_eq!(other.access, AccessFs::Execute | AccessFs::ReadFile);
        assert!(rights_of(&rules, &root.join("a/b/key")).is_none());
        assert!(rights_of(&rules, &root.join("a/link")).is_none());
        assert!(
            rights_of(&rules, &root.join("d/x")).is_none(),
            "untouched subtrees are granted whole"
        );
    }

    #[test]
    fn protected_path_that_does_not_exist_leaves_its_ancestors_read_only() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        fs::create_dir_all(ws.join(".git/objects")).unwrap();
        let grants = [Grant {
            path: ws.to_path_buf(),
            access: write_rights(),
        }];
        let excl = [Exclusion {
            path: ws.join(".git/hooks"),
            withheld: protected_withheld(),
        }];
        let rules = carve(&grants, &excl, &mut Vec::new()).unwrap();
        assert_eq!(rights_of(&rules, ws).unwrap().access, read_rights());
        assert_eq!(
            rights_of(&rules, &ws.join(".git")).unwrap().access,
            read_rights()
        );
        assert_eq!(
            rights_of(&rules, &ws.join(".git/objects")).unwrap().access,
            write_rights()
        );
    }

    #[test]
    fn symlink_grant_root_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("ws");
        std::os::unix::fs::symlink("/", &link).unwrap();
        let err = carve(
            &[Grant {
                path: link,
                access: write_rights(),
            }],
            &[],
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(matches!(err, RulesError::SymlinkRoot(_)), "{err}");
    }

    #[test]
    fn lenient_resolution_follows_links_and_keeps_missing_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("via")).unwrap();
        let resolved = resolve_lenient(&tmp.path().join("via/missing/x")).unwrap();
        assert_eq!(resolved, fs::canonicalize(&real).unwrap().join("missing/x"));
        assert!(matches!(
            resolve_lenient(Path::new("rel")),
            Err(RulesError::Relative(_))
        ));
    }
}

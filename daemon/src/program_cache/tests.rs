use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

/// A scratch tree: `bin1` (empty) and `bin2/tool` on `PATH`, a workspace.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let tree = Tree {
            dir: tempfile::tempdir().unwrap(),
        };
        for d in ["bin1", "bin2", "ws", "other/bin"] {
            fs::create_dir_all(tree.at(d)).unwrap();
        }
        tree.program("bin2/tool", 0o755);
        tree
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn program(&self, rel: &str, mode: u32) {
        fs::write(self.at(rel), "#!/bin/sh\n").unwrap();
        fs::set_permissions(self.at(rel), fs::Permissions::from_mode(mode)).unwrap();
    }

    fn path_var(&self, dirs: &[&str]) -> OsString {
        std::env::join_paths(dirs.iter().map(|d| self.at(d))).unwrap()
    }
}

fn fresh(cache: &ProgramCache) -> usize {
    cache.state.lock().unwrap().as_ref().unwrap().fresh
}

fn resolve(
    cache: &ProgramCache,
    tree: &Tree,
    path_var: &OsStr,
    roots: &[PathBuf],
) -> Option<(PathBuf, bool)> {
    cache.resolve("tool", path_var, tree.dir.path(), roots, &tree.at("ws"))
}

#[test]
fn a_lookup_is_kept_until_a_program_appears_earlier_on_path() {
    let tree = Tree::new();
    let cache = ProgramCache::default();
    let path_var = tree.path_var(&["bin1", "bin2"]);
    let first = resolve(&cache, &tree, &path_var, &[]);
    assert_eq!(first, Some((tree.at("bin2/tool"), false)));
    assert_eq!(resolve(&cache, &tree, &path_var, &[]), first);
    assert_eq!(fresh(&cache), 1, "the second lookup is the kept one");
    // Changes to other names in the same directories keep it.
    tree.program("bin1/other", 0o755);
    fs::write(tree.at("bin2/notes"), "x").unwrap();
    assert_eq!(resolve(&cache, &tree, &path_var, &[]), first);
    assert_eq!(fresh(&cache), 1);
    // A planted program earlier on PATH is seen at once.
    tree.program("bin1/tool", 0o755);
    assert_eq!(
        resolve(&cache, &tree, &path_var, &[]),
        Some((tree.at("bin1/tool"), false))
    );
    assert_eq!(fresh(&cache), 2);
}

#[test]
fn a_mode_change_and_a_removal_are_seen() {
    let tree = Tree::new();
    tree.program("bin1/tool", 0o644);
    let cache = ProgramCache::default();
    let path_var = tree.path_var(&["bin1", "bin2"]);
    assert_eq!(
        resolve(&cache, &tree, &path_var, &[]),
        Some((tree.at("bin2/tool"), false))
    );
    fs::set_permissions(tree.at("bin1/tool"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        resolve(&cache, &tree, &path_var, &[]),
        Some((tree.at("bin1/tool"), false))
    );
    fs::remove_file(tree.at("bin1/tool")).unwrap();
    fs::remove_file(tree.at("bin2/tool")).unwrap();
    assert_eq!(resolve(&cache, &tree, &path_var, &[]), None);
}

#[test]
fn roots_are_compared_by_identity_through_symlinks_and_kept_fresh() {
    let tree = Tree::new();
    let cache = ProgramCache::default();
    // A PATH entry that is a symlink into a tree, and a root that does not
    // exist yet.
    symlink(tree.at("bin2"), tree.at("via")).unwrap();
    let path_var = tree.path_var(&["via"]);
    let roots = [tree.at("cache")];
    assert_eq!(
        resolve(&cache, &tree, &path_var, &roots),
        Some((tree.at("via/tool"), false))
    );
    // The root appears, as a symlink to where the program is: inside now.
    symlink(tree.at("bin2"), tree.at("cache")).unwrap();
    assert_eq!(
        resolve(&cache, &tree, &path_var, &roots),
        Some((tree.at("via/tool"), true))
    );
    // The PATH entry is pointed elsewhere: the other tree's program, outside.
    tree.program("other/bin/tool", 0o755);
    fs::remove_file(tree.at("via")).unwrap();
    symlink(tree.at("other/bin"), tree.at("via")).unwrap();
    assert_eq!(
        resolve(&cache, &tree, &path_var, &roots),
        Some((tree.at("via/tool"), false))
    );
    // The workspace holding the program is a writable root too.
    let in_ws = cache.resolve("tool", &path_var, tree.dir.path(), &[], &tree.at("other"));
    assert_eq!(in_ws, Some((tree.at("via/tool"), true)));
}

#[test]
fn a_program_inside_a_writable_root_or_on_a_relative_entry_is_never_kept() {
    let tree = Tree::new();
    let cache = ProgramCache::default();
    let path_var = tree.path_var(&["bin2"]);
    let roots = [tree.at("bin2")];
    for _ in 0..2 {
        assert_eq!(
            resolve(&cache, &tree, &path_var, &roots),
            Some((tree.at("bin2/tool"), true))
        );
    }
    assert_eq!(fresh(&cache), 2);
    let relative = OsString::from("bin2");
    for _ in 0..2 {
        assert_eq!(
            resolve(&cache, &tree, &relative, &[]),
            Some((tree.at("bin2/tool"), false))
        );
    }
    assert_eq!(fresh(&cache), 4);
}

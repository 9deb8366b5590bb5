//! A crate's module graph, read from its sources: which module names which.
//! A module names another by a `use` tree (groups, renames, `self`, globs),
//! by a path in code (types, calls, trait impls) that starts with `crate`,
//! `self`, `super`, a child module or a name it imports, and by an
//! intra-doc link. Each path names every module it goes through and the
//! module that defines its item, found by following imports and re-exports.
//! The crate root (`lib.rs`) is left out as a node, as are binaries
//! (`main.rs`, `src/bin/`) and inline test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file under `src` (`stage/approval/mod.rs` →
/// `["stage", "approval"]`; `lib.rs` and `main.rs` are the roots, `[]`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The text with comments and string literals blanked, so a path in prose
/// or in a message is not taken for an import. The paths of a doc
/// comment's intra-doc links stay: rustdoc resolves them as the compiler
/// resolves code, so they name what they link to.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"//") {
            let start = i;
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            let comment = &text[start..i];
            if comment.starts_with("///") || comment.starts_with("//!") {
                for link in doc_links(comment) {
                    out.push_str(&format!(" {link} ;"));
                }
            }
        } else if bytes[i..].starts_with(b"/*") {
            let end = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
            i = end;
            out.push(' ');
        } else if let Some(hashes) = raw_string_at(text, i) {
            // r"…" or r#"…"#: no escapes inside, ends at the quote and its hashes.
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            i = text[body..]
                .find(&close)
                .map_or(bytes.len(), |e| body + e + close.len());
            out.push_str("\"\"");
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if bytes[i] == b'\'' && i + 2 < bytes.len() && bytes[i + 2] == b'\'' {
            // A char literal such as '{' must not open a use tree.
            i += 3;
            out.push_str("' '");
        } else {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    out
}

/// The targets of a doc comment's intra-doc links that are paths:
/// ``[`a::B`]``, `[text](a::B)`, `[text]: a::B`.
fn doc_links(comment: &str) -> Vec<&str> {
    let mut links = Vec::new();
    let mut candidates: Vec<&str> = Vec::new();
    for (at, _) in comment.match_indices("[`") {
        let rest = &comment[at + 2..];
        if let Some(end) = rest.find("`]") {
            candidates.push(&rest[..end]);
        }
    }
    for opener in ["](", "]: "] {
        for (at, _) in comment.match_indices(opener) {
            let rest = &comment[at + opener.len()..];
            let end = rest.find([')', ' ']).unwrap_or(rest.len());
            candidates.push(rest[..end].trim_matches('`'));
        }
    }
    for candidate in candidates {
        // `struct@a::B`, `a::f()`, `a::m!`: the path without its markers.
        let path = candidate.rsplit('@').next().unwrap_or_default();
        let path = path.trim_end_matches("()").trim_end_matches('!');
        if path.contains("::")
            && path
                .split("::")
                .all(|s| !s.is_empty() && s.chars().all(is_ident))
        {
            links.push(path);
        }
    }
    links
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The number of hashes of a raw string literal starting at `i`, if one does.
fn raw_string_at(text: &str, i: usize) -> Option<usize> {
    let rest = text[i..].strip_prefix('r')?;
    if text[..i].chars().next_back().is_some_and(is_ident) {
        return None;
    }
    let hashes = rest.chars().take_while(|c| *c == '#').count();
    rest[hashes..].starts_with('"').then_some(hashes)
}

/// A path as written, its segments (`crate`, `self` and `super` included).
type Written = Vec<String>;

/// One name a `use` tree brings into scope: the path it is written with,
/// and the name it is known by here (`None` for a glob, `a::*`).
struct Import {
    path: Written,
    name: Option<String>,
}

/// Expands the `use` tree at the start of `s`: `a::b`, `a::{b, c::{d as e,
/// self}}`, `a::*`. Each import found is pushed onto `out`, its path
/// prefixed with `prefix`. Returns how many characters the tree took.
fn expand(s: &[char], prefix: &[String], out: &mut Vec<Import>) -> usize {
    let mut path = prefix.to_vec();
    let mut i = 0;
    let skip_space = |i: &mut usize| {
        while *i < s.len() && s[*i].is_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_space(&mut i);
        if s.get(i) == Some(&'{') {
            i += 1;
            loop {
                while i < s.len() && (s[i].is_whitespace() || s[i] == ',') {
                    i += 1;
                }
                if i >= s.len() || s[i] == '}' {
                    return i + 1;
                }
                i += expand(&s[i..], &path, out);
            }
        }
        if s.get(i) == Some(&'*') {
            out.push(Import { path, name: None });
            return i + 1;
        }
        let start = i;
        while i < s.len() && is_ident(s[i]) {
            i += 1;
        }
        let ident: String = s[start..i].iter().collect();
        if ident.is_empty() {
            return i.max(1);
        }
        skip_space(&mut i);
        if s[i..].starts_with(&[':', ':']) {
            path.push(ident);
            i += 2;
            continue;
        }
        // `a::{self}` is `a` itself.
        if ident != "self" || path.is_empty() {
            path.push(ident);
        }
        let mut name = path.last().cloned();
        let after = i;
        if s[i..].starts_with(&['a', 's']) && s.get(i + 2).is_some_and(|c| c.is_whitespace()) {
            i += 2;
            skip_space(&mut i);
            let start = i;
            while i < s.len() && is_ident(s[i]) {
                i += 1;
            }
            let alias: String = s[start..i].iter().collect();
            name = (alias != "_").then_some(alias);
        } else {
            i = after;
        }
        out.push(Import { path, name });
        return i;
    }
}

/// What one source file says: the imports of its `use` declarations and
/// every other path its code (and its intra-doc links) writes.
struct Source {
    /// The file, relative to the crate's parent directory.
    file: String,
    imports: Vec<Import>,
    paths: Vec<Written>,
}

/// Reads the `use` declarations out of `code` and the paths of the rest:
/// every run of two or more names joined by `::`.
fn read_source(file: String, code: &str) -> Source {
    let chars: Vec<char> = code.chars().collect();
    let mut imports = Vec::new();
    let mut paths = Vec::new();
    let starts_word = |i: usize| i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':');
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || !starts_word(i) || (i > 0 && chars[i - 1] == '\'') {
            i += 1;
            continue;
        }
        if chars[i..].starts_with(&['u', 's', 'e'])
            && chars.get(i + 3).is_some_and(|c| c.is_whitespace())
        {
            let mut tree = i + 3;
            while chars.get(tree).is_some_and(|c| c.is_whitespace()) {
                tree += 1;
            }
            // `use ::name` is an outside crate.
            if chars[tree..].starts_with(&[':', ':']) {
                i = tree + 2;
                continue;
            }
            i = tree + expand(&chars[tree..], &[], &mut imports);
            continue;
        }
        let mut path = Vec::new();
        loop {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            path.push(chars[start..i].iter().collect::<String>());
            if chars[i..].starts_with(&[':', ':']) && chars.get(i + 2).is_some_and(|c| is_ident(*c))
            {
                i += 2;
            } else {
                break;
            }
        }
        if path.len() >= 2 {
            paths.push(path);
        }
    }
    Source {
        file,
        imports,
        paths,
    }
}

/// The modules of a crate and the names each module's imports bring in.
struct Crate {
    sources: BTreeMap<Module, Source>,
}

impl Crate {
    fn is_module(&self, path: &[String]) -> bool {
        self.sources.contains_key(path)
    }

    /// The path from the crate root that `written` means in `module`:
    /// through `crate`, `self`, `super`, a name an import brings in, a
    /// child module, or a module a glob import brings in. `None` for a
    /// path outside the crate (another crate, a local type's item).
    fn absolute(&self, written: &[String], module: &[String], depth: usize) -> Option<Vec<String>> {
        let (first, rest) = written.split_first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => {
                let mut up = module.to_vec();
                up.pop()?;
                let supers = rest.iter().take_while(|s| *s == "super").count();
                for _ in 0..supers {
                    up.pop()?;
                }
                up.extend_from_slice(&rest[supers..]);
                return Some(up);
            }
            _ => self.in_scope(first, module, depth)?,
        };
        base.extend_from_slice(rest);
        Some(base)
    }

    /// The path from the crate root of a name in scope in `module`.
    fn in_scope(&self, name: &str, module: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 8 {
            return None;
        }
        let source = self.sources.get(module)?;
        if let Some(import) = source
            .imports
            .iter()
            .find(|i| i.name.as_deref() == Some(name))
        {
            // `use tokio;` names the outside crate, not itself.
            if import.path.len() > 1 || import.path[0] != name {
                return self.absolute(&import.path, module, depth + 1);
            }
        }
        let mut child = module.to_vec();
        child.push(name.to_string());
        if self.is_module(&child) {
            return Some(child);
        }
        source
            .imports
            .iter()
            .filter(|i| i.name.is_none())
            .filter_map(|i| self.absolute(&i.path, module, depth + 1))
            .map(|mut glob| {
                glob.push(name.to_string());
                glob
            })
            .find(|p| self.is_module(p))
    }

    /// Every module a path from the crate root names: each module it goes
    /// through, and the one that defines its item, found through the
    /// imports (`pub use` or not) of the module it is named in. The
    /// modules `from` goes through itself (its ancestors) are left out as
    /// ways: every module sees its ancestors.
    fn named_by(&self, path: &[String], from: &[String], out: &mut BTreeSet<Module>, depth: usize) {
        let n = (0..=path.len())
            .rev()
            .find(|n| self.is_module(&path[..*n]))
            .unwrap_or(0);
        for k in 1..n {
            if !from.starts_with(&path[..k]) {
                out.insert(path[..k].to_vec());
            }
        }
        let owner = &path[..n];
        if n > 0 {
            out.insert(owner.to_vec());
        }
        let Some(name) = path.get(n) else {
            return;
        };
        if depth > 8 {
            return;
        }
        let Some(source) = self.sources.get(owner) else {
            return;
        };
        let imports = &source.imports;
        if imports.iter().any(|i| i.name.as_ref() == Some(name)) {
            if let Some(mut full) = self.in_scope(name, owner, 0) {
                full.extend_from_slice(&path[n + 1..]);
                self.named_by(&full, from, out, depth + 1);
            }
        } else {
            // A name a glob brings in may come from any module it names.
            for glob in imports.iter().filter(|i| i.name.is_none()) {
                if let Some(glob) = self.absolute(&glob.path, owner, 0) {
                    self.named_by(&glob, from, out, depth + 1);
                }
            }
        }
    }
}

/// A module, named by its path from the crate root.
pub type Module = Vec<String>;

/// The modules of one crate and what each names.
pub struct ModuleGraph {
    /// Module → (its file, relative to the crate's parent directory, and the
    /// modules it names).
    pub edges: BTreeMap<Module, (String, BTreeSet<Module>)>,
}

impl ModuleGraph {
    /// Reads the library sources under `crate_dir/src`.
    pub fn read(crate_dir: &Path) -> ModuleGraph {
        let src = crate_dir.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.retain(|f| !f.ends_with("main.rs") && !f.starts_with(src.join("bin")));
        let base = crate_dir.parent().unwrap_or(crate_dir);
        let mut sources = BTreeMap::new();
        for file in &files {
            let text = fs::read_to_string(file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            // A file's inline test module (`super::` there is the file itself)
            // is not part of the layers.
            let text = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
            let rel = file
                .strip_prefix(base)
                .unwrap_or(file)
                .display()
                .to_string();
            sources.insert(module_of(&src, file), read_source(rel, &code_only(text)));
        }
        let krate = Crate { sources };
        let mut edges = BTreeMap::new();
        for (module, source) in &krate.sources {
            if module.is_empty() {
                continue;
            }
            let mut named = BTreeSet::new();
            let imported = source.imports.iter().map(|i| &i.path);
            for written in imported.chain(&source.paths) {
                if let Some(path) = krate.absolute(written, module, 0) {
                    krate.named_by(&path, module, &mut named, 0);
                }
            }
            named.remove(module);
            edges.insert(module.clone(), (source.file.clone(), named));
        }
        ModuleGraph { edges }
    }

    /// Every set of modules that import each other, directly or round a
    /// circle (the strongly connected components of two or more modules),
    /// each sorted, shown as `a::b`.
    pub fn circles(&self) -> Vec<Vec<String>> {
        // Tarjan's strongly connected components.
        struct Walk<'a> {
            edges: &'a BTreeMap<Module, (String, BTreeSet<Module>)>,
            index: BTreeMap<&'a Module, usize>,
            low: BTreeMap<&'a Module, usize>,
            stack: Vec<&'a Module>,
            circles: Vec<Vec<String>>,
        }
        impl<'a> Walk<'a> {
            fn visit(&mut self, v: &'a Module) {
                let n = self.index.len();
                self.index.insert(v, n);
                self.low.insert(v, n);
                self.stack.push(v);
                for w in &self.edges[v].1 {
                    let Some((w, _)) = self.edges.get_key_value(w) else {
                        continue;
                    };
                    if !self.index.contains_key(w) {
                        self.visit(w);
                        let low = self.low[v].min(self.low[w]);
                        self.low.insert(v, low);
                    } else if self.stack.contains(&w) {
                        let low = self.low[v].min(self.index[w]);
                        self.low.insert(v, low);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut circle = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        circle.push(show(w));
                        if w == v {
                            break;
                        }
                    }
                    if circle.len() > 1 {
                        circle.sort();
                        self.circles.push(circle);
                    }
                }
            }
        }
        let mut walk = Walk {
            edges: &self.edges,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            circles: Vec::new(),
        };
        for v in self.edges.keys() {
            if !walk.index.contains_key(v) {
                walk.visit(v);
            }
        }
        walk.circles
    }
}

/// A module as Rust writes it: `a::b`, or `crate` for the root.
pub fn show(module: &[String]) -> String {
    if module.is_empty() {
        String::from("crate")
    } else {
        module.join("::")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_sees_imports_as_the_compiler_does() {
        let code = code_only(
            "use crate::{a, b::{c, d as e, self as g}, f::*};\n\
             // crate::in_a_comment\n\
             let s = \"crate::in_a_string\";\n\
             use super::super::g::h;\n\
             x::crate::not_a_path;\n\
             crate::i::j(1);",
        );
        let source = read_source(String::new(), &code);
        let imports: Vec<(String, Option<&str>)> = source
            .imports
            .iter()
            .map(|i| (i.path.join("::"), i.name.as_deref()))
            .collect();
        assert_eq!(
            imports,
            vec![
                (String::from("crate::a"), Some("a")),
                (String::from("crate::b::c"), Some("c")),
                (String::from("crate::b::d"), Some("e")),
                (String::from("crate::b"), Some("g")),
                (String::from("crate::f"), None),
                (String::from("super::super::g::h"), Some("h")),
            ]
        );
        let paths: Vec<String> = source.paths.iter().map(|p| p.join("::")).collect();
        assert_eq!(paths, vec!["x::crate::not_a_path", "crate::i::j"]);
    }

    /// A crate of `files` (path under `src`, text) written to a scratch directory.
    fn graph_of(files: &[(&str, &str)]) -> ModuleGraph {
        let dir = tempfile::tempdir().unwrap();
        let krate = dir.path().join("synthetic");
        for (path, text) in files {
            let file = krate.join("src").join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, text).unwrap();
        }
        ModuleGraph::read(&krate)
    }

    /// The one circle of a crate whose module `a` names `b` (with the line
    /// `a_names_b`) and whose `b` names `a` by the path form under test.
    fn circle_of(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        let graph = graph_of(files);
        let circles = graph.circles();
        assert_eq!(circles.len(), 1, "{:?}", graph.edges);
        circles
    }

    #[test]
    fn a_circle_through_three_modules_and_a_folder_is_found() {
        let graph = graph_of(&[
            ("lib.rs", "mod a; mod b; mod c; pub use a::A;"),
            ("a/mod.rs", "use crate::b::B;\nmod inner;"),
            ("a/inner.rs", "use super::super::c::C;"),
            ("b.rs", "use crate::c;"),
            ("c.rs", "use crate::{a::inner::I, b};"),
            ("main.rs", "use crate::a;"),
            ("bin/tool.rs", "use crate::b;"),
        ]);
        assert_eq!(
            graph.circles(),
            vec![vec!["a", "a::inner", "b", "c"]],
            "{:?}",
            graph.edges
        );
    }

    #[test]
    fn a_circle_through_a_reexport_is_found() {
        let graph = graph_of(&[
            (
                "lib.rs",
                "mod a; mod b;\npub use a::A;\npub(crate) use b::{B, C};",
            ),
            ("a.rs", "use crate::C;"),
            ("b.rs", "fn f() -> crate::A { todo!() }"),
        ]);
        assert_eq!(graph.circles(), vec![vec!["a", "b"]], "{:?}", graph.edges);
    }

    #[test]
    fn a_renamed_reexport_is_known_by_its_new_name() {
        let circles = circle_of(&[
            ("lib.rs", "mod a; mod b;\npub use b::Inner as Outer;"),
            ("a.rs", "pub struct A;\nfn f(_: crate::Outer) {}"),
            ("b.rs", "pub struct Inner(crate::a::A);"),
        ]);
        assert_eq!(circles, vec![vec!["a", "b"]]);
    }

    #[test]
    fn a_reexport_in_a_folder_leads_to_where_the_item_is_defined() {
        let circles = circle_of(&[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "pub struct A;\nimpl crate::b::Trait for A {}"),
            ("b/mod.rs", "mod deep;\npub use self::deep::Trait;"),
            ("b/deep.rs", "pub trait Trait {}\nfn f(_: crate::a::A) {}"),
        ]);
        assert_eq!(circles, vec![vec!["a", "b", "b::deep"]]);
    }

    #[test]
    fn a_renamed_import_is_followed_where_the_code_uses_it() {
        let circles = circle_of(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "use crate::b as other;\nfn f() { other::inner::g() }",
            ),
            ("b/mod.rs", "pub mod inner;"),
            ("b/inner.rs", "pub fn g() { let _ = crate::a::A; }"),
        ]);
        assert_eq!(circles, vec![vec!["a", "b::inner"]]);
    }

    #[test]
    fn a_child_module_named_without_a_prefix_is_named() {
        let circles = circle_of(&[
            ("lib.rs", "mod a;"),
            ("a/mod.rs", "mod child;\nuse child::C;\npub struct A;"),
            ("a/child.rs", "pub struct C(super::A);"),
        ]);
        assert_eq!(circles, vec![vec!["a", "a::child"]]);
    }

    #[test]
    fn a_self_path_in_code_is_named() {
        let circles = circle_of(&[
            ("lib.rs", "mod a;"),
            (
                "a/mod.rs",
                "mod child;\npub struct A;\nfn f() { self::child::g() }",
            ),
            ("a/child.rs", "pub fn g() -> super::A { super::A }"),
        ]);
        assert_eq!(circles, vec![vec!["a", "a::child"]]);
    }

    #[test]
    fn a_path_through_a_module_names_that_module() {
        let circles = circle_of(&[
            ("lib.rs", "mod spine; mod store;"),
            (
                "spine/mod.rs",
                "pub mod values;\nfn f() { crate::store::keep() }",
            ),
            ("spine/values.rs", "pub struct Trail;"),
            ("store.rs", "pub fn keep(_: crate::spine::values::Trail) {}"),
        ]);
        assert_eq!(circles, vec![vec!["spine", "store"]]);
    }

    #[test]
    fn a_private_import_reached_through_its_module_is_followed() {
        let graph = graph_of(&[
            ("lib.rs", "mod a; mod b; mod c;"),
            ("a.rs", "use crate::b::Thing;"),
            ("b.rs", "use crate::c::Thing;"),
            ("c.rs", "pub struct Thing;"),
        ]);
        let module = |name: &str| vec![name.to_string()];
        assert_eq!(
            graph.edges[&module("a")].1,
            BTreeSet::from([module("b"), module("c")])
        );
    }

    #[test]
    fn a_glob_import_names_the_modules_it_brings_in() {
        let circles = circle_of(&[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "use crate::b::*;\nfn f() { inner::g() }"),
            ("b/mod.rs", "pub mod inner;"),
            ("b/inner.rs", "pub fn g() { crate::a::f() }"),
        ]);
        assert_eq!(circles, vec![vec!["a", "b::inner"]]);
    }

    #[test]
    fn an_intra_doc_link_names_what_it_links_to() {
        let circles = circle_of(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "//! Checked by [`crate::b`], and [the check](crate::b::check).\npub struct A;",
            ),
            ("b.rs", "pub fn check(_: crate::a::A) {}"),
        ]);
        assert_eq!(circles, vec![vec!["a", "b"]]);
    }

    #[test]
    fn layers_and_test_modules_make_no_circle() {
        let graph = graph_of(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "use crate::b::B;\n// crate::a in a comment\n/// not a link: crate::a\n",
            ),
            (
                "b.rs",
                "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
            ),
        ]);
        assert!(graph.circles().is_empty(), "{:?}", graph.edges);
        assert_eq!(graph.edges.len(), 2);
    }
}

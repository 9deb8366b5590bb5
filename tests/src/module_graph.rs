//! A crate's module graph, read from its sources: which module names which.
//! Every `crate::` and `super::` path (grouped `use` trees included) is
//! resolved to the module file it names. The crate root (`lib.rs`) is left
//! out, as are binaries (`main.rs`, `src/bin/`) and inline test modules.

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
/// or in a message is not taken for an import.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
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

/// Expands the path tree starting at `s` (after `crate::` or `super::`):
/// `a::b`, `a::{b, c::{d, e}}`, `a::*`, `self`. Each full path found is
/// pushed onto `out`, prefixed with `prefix`.
fn expand(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    let mut i = 0;
    let chars: Vec<char> = s.chars().collect();
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i < chars.len() && chars[i] == '{' {
            i += 1;
            loop {
                while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
                    i += 1;
                }
                if i >= chars.len() || chars[i] == '}' {
                    return i + 1;
                }
                let rest: String = chars[i..].iter().collect();
                i += expand(&rest, &path, out);
            }
        }
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        let ident: String = chars[start..i].iter().collect();
        if ident.is_empty() && chars.get(i) == Some(&'*') {
            i += 1;
        }
        if !ident.is_empty() && ident != "self" {
            path.push(ident);
        }
        if chars[i..].starts_with(&[':', ':']) {
            i += 2;
            continue;
        }
        out.push(path);
        // Skip an `as name` rename.
        let rest: String = chars[i..].iter().collect();
        let trimmed = rest.trim_start();
        if let Some(after) = trimmed.strip_prefix("as ") {
            let skipped = rest.len() - trimmed.len() + 3;
            let name_len = after
                .trim_start()
                .chars()
                .take_while(|c| is_ident(*c))
                .count();
            let ws = after.len() - after.trim_start().len();
            i += skipped + ws + name_len;
        }
        return i;
    }
}

/// Every module path named by `crate::` or `super::` paths in `code`, for
/// a file whose module is `module`.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut search = 0;
    while let Some(found) = code[search..]
        .find("crate::")
        .map(|p| (p + search, "crate::"))
        .into_iter()
        .chain(
            code[search..]
                .find("super::")
                .map(|p| (p + search, "super::")),
        )
        .min_by_key(|(p, _)| *p)
    {
        let (at, kind) = found;
        let preceded = code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| is_ident(c) || c == ':');
        search = at + kind.len();
        if preceded {
            continue;
        }
        let prefix: Vec<String> = if kind == "crate::" {
            Vec::new()
        } else {
            // `super` of `a/b.rs` is `a`; of `a/b/mod.rs` it is also `a`.
            let mut up = module.to_vec();
            up.pop();
            let mut rest = &code[search..];
            while let Some(more) = rest.strip_prefix("super::") {
                up.pop();
                rest = more;
                search += "super::".len();
            }
            up
        };
        expand(&code[search..], &prefix, &mut out);
    }
    out
}

/// The paths a module re-exports with `pub use` or `pub(crate) use`, from
/// the crate root: `pub use child::Name` in `a` gives `a::child::Name`. A
/// renamed re-export (`as`) is known by its old name only.
fn reexported_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for opener in ["pub use ", "pub(crate) use "] {
        for (at, _) in code.match_indices(opener) {
            let mut rest = code[at + opener.len()..].trim_start();
            let mut prefix = module.to_vec();
            if let Some(more) = rest.strip_prefix("crate::") {
                prefix.clear();
                rest = more;
            } else if let Some(more) = rest.strip_prefix("self::") {
                rest = more;
            } else {
                while let Some(more) = rest.strip_prefix("super::") {
                    prefix.pop();
                    rest = more;
                }
            }
            expand(rest, &prefix, &mut out);
        }
    }
    out
}

/// What the modules of a crate are, and which module each re-exported name
/// comes from.
struct Names {
    modules: BTreeSet<Module>,
    /// (module, name it re-exports) → the full path it re-exports.
    reexports: BTreeMap<(Module, String), Vec<String>>,
}

impl Names {
    /// The module `path` names: its longest prefix that is a module, or,
    /// when the name after that prefix is a re-export, the module the
    /// re-export comes from. `None` for the crate root itself.
    fn resolve(&self, path: &[String], depth: usize) -> Option<Module> {
        let n = (0..=path.len())
            .rev()
            .find(|n| self.modules.contains(&path[..*n]))?;
        let prefix = path[..n].to_vec();
        if let Some(name) = path.get(n)
            && let Some(target) = self.reexports.get(&(prefix.clone(), name.clone()))
        {
            let mut full = target.clone();
            full.extend_from_slice(&path[n + 1..]);
            if depth < 8 && full != path {
                return self.resolve(&full, depth + 1);
            }
        }
        (!prefix.is_empty()).then_some(prefix)
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
        let mut code = BTreeMap::new();
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
            code.insert(module_of(&src, file), (rel, code_only(text)));
        }
        let mut names = Names {
            modules: code.keys().cloned().collect(),
            reexports: BTreeMap::new(),
        };
        for (module, (_, text)) in &code {
            for path in reexported_paths(text, module) {
                if let Some(name) = path.last() {
                    names
                        .reexports
                        .insert((module.clone(), name.clone()), path.clone());
                }
            }
        }
        let mut edges = BTreeMap::new();
        for (module, (rel, text)) in code {
            if module.is_empty() {
                continue;
            }
            let named: BTreeSet<Module> = named_paths(&text, &module)
                .iter()
                .filter_map(|p| names.resolve(p, 0))
                .filter(|m| *m != module)
                .collect();
            edges.insert(module, (rel, named));
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
        let module = vec![String::from("stage"), String::from("approval")];
        let code = code_only(
            "use crate::{a, b::{c, d as e}, f::*};\n\
             // crate::in_a_comment\n\
             let s = \"crate::in_a_string\";\n\
             use super::super::g::h;\n\
             x::crate::not_a_path;\n\
             crate::i::j(1);",
        );
        let mut got = named_paths(&code, &module);
        got.sort();
        let want: Vec<Vec<String>> = [
            vec!["a"],
            vec!["b", "c"],
            vec!["b", "d"],
            vec!["f"],
            vec!["g", "h"],
            vec!["i", "j"],
        ]
        .iter()
        .map(|p| p.iter().map(|s| s.to_string()).collect())
        .collect();
        assert_eq!(got, want);
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
            vec![vec!["a::inner", "b", "c"]],
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
    fn layers_and_test_modules_make_no_circle() {
        let graph = graph_of(&[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "use crate::b::B;\n// crate::a in a comment\n"),
            (
                "b.rs",
                "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
            ),
        ]);
        assert!(graph.circles().is_empty(), "{:?}", graph.edges);
        assert_eq!(graph.edges.len(), 2);
    }
}

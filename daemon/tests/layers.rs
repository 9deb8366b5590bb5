//! "No module imports its caller": the daemon's modules form layers. This
//! test reads the daemon's sources, resolves every `crate::` and `super::`
//! path (grouped `use` trees included) to the module file it names, and
//! fails when
//! - a stage (`src/stage/<name>`) names the pipeline's spine
//!   (`pipeline/mod.rs`) or another stage: stages take values and return
//!   typed outcomes, and name only the types of `pipeline::gate`, which sit
//!   below them;
//! - any two daemon modules import each other, directly or round a circle.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use common::rust_files;

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

/// The longest prefix of `path` that is a module of the crate.
fn resolve(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

struct Crate {
    /// Module → (file relative to the workspace, modules it names).
    edges: BTreeMap<Vec<String>, (String, BTreeSet<Vec<String>>)>,
}

fn daemon() -> Crate {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .filter(|f| !f.ends_with("main.rs"))
        .map(|f| module_of(&src, f))
        .collect();
    let mut edges = BTreeMap::new();
    for file in files.iter().filter(|f| !f.ends_with("main.rs")) {
        let module = module_of(&src, file);
        let text = fs::read_to_string(file).unwrap();
        // A file's inline test module (`super::` there is the file itself)
        // is not part of the layers.
        let text = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        let code = code_only(text);
        let named: BTreeSet<Vec<String>> = named_paths(&code, &module)
            .iter()
            .filter_map(|p| resolve(p, &modules))
            .filter(|m| *m != module)
            .collect();
        let rel = file
            .strip_prefix(root.parent().unwrap())
            .unwrap()
            .display()
            .to_string();
        edges.insert(module, (rel, named));
    }
    Crate { edges }
}

fn show(module: &[String]) -> String {
    if module.is_empty() {
        String::from("crate")
    } else {
        module.join("::")
    }
}

#[test]
fn a_stage_names_neither_the_pipeline_nor_another_stage() {
    let krate = daemon();
    let stages: Vec<_> = krate
        .edges
        .keys()
        .filter(|m| m.len() >= 2 && m[0] == "stage")
        .collect();
    assert!(
        stages.len() >= 10,
        "found only {} stage modules",
        stages.len()
    );
    let spine = vec![String::from("pipeline")];
    let mut offenders = Vec::new();
    for module in stages {
        let (file, named) = &krate.edges[module];
        for target in named {
            let other_stage =
                target.first().is_some_and(|t| t == "stage") && target.get(1) != module.get(1);
            if *target == spine || other_stage {
                offenders.push(format!("{file} names {}", show(target)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "a stage imports its caller or another stage:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn no_daemon_module_imports_its_caller() {
    let krate = daemon();
    // Tarjan's strongly connected components: any with two or more modules is a circle.
    struct Walk<'a> {
        edges: &'a BTreeMap<Vec<String>, (String, BTreeSet<Vec<String>>)>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        circles: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
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
        edges: &krate.edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        circles: Vec::new(),
    };
    for v in krate.edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    assert!(
        walk.circles.is_empty(),
        "daemon modules that import each other:\n{}",
        walk.circles
            .iter()
            .map(|c| c.join(" ↔ "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

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

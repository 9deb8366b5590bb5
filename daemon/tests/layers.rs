//! The daemon's folders are its layers, from the top: `front/` (what takes
//! requests), `pipeline/` (the spine), `stage/` (one module a stage),
//! `store/` (what keeps state on disk), and the gate (`pipeline/gate.rs`,
//! the values passed between stages) below them all: it lives in the
//! pipeline's folder so that only the spine can seal a `Permit`, but ranks
//! below every layer. The modules at the crate root outside
//! these (`config`, `conn`, `spawn`, `state`, …) are the ground every layer
//! may use. This test reads the daemon's sources, resolves every `crate::`
//! and `super::` path (grouped `use` trees included) to the module file it
//! names, and fails when
//! - a module names a module of a layer above its own, or a ground module
//!   names `front/` or `pipeline/`;
//! - a stage names another stage;
//! - a stage names the daemon's whole state instead of taking what it uses;
//! - any two daemon modules import each other, directly or round a circle.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use common::rust_files;

/// The module path of a source file, relative to `src` (`stage/approval/mod.rs` →
/// `["stage", "approval"]`; `lib.rs` and `main.rs` are the roots, `[]`).
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.with_extension("");
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

/// The module graph of a crate whose sources are `files`: each a path
/// relative to `src` and its text.
fn graph(files: &[(PathBuf, String)]) -> Crate {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(f, _)| module_of(f)).collect();
    let mut edges = BTreeMap::new();
    for (file, text) in files {
        let module = module_of(file);
        // A file's inline test module (`super::` there is the file itself)
        // is not part of the layers.
        let text = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        let code = code_only(text);
        let named: BTreeSet<Vec<String>> = named_paths(&code, &module)
            .iter()
            .filter_map(|p| resolve(p, &modules))
            .filter(|m| *m != module)
            .collect();
        edges.insert(module, (format!("src/{}", file.display()), named));
    }
    Crate { edges }
}

/// The daemon's library: every source file but the binary's `main.rs`.
fn daemon() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    assert!(paths.len() > 20, "found only {} files", paths.len());
    let files: Vec<(PathBuf, String)> = paths
        .iter()
        .filter(|f| !f.ends_with("main.rs"))
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().to_path_buf();
            (rel, fs::read_to_string(f).unwrap())
        })
        .collect();
    graph(&files)
}

fn show(module: &[String]) -> String {
    if module.is_empty() {
        String::from("crate")
    } else {
        module.join("::")
    }
}

/// The layers, from the top; `gate` is the module `pipeline::gate`.
const LAYERS: [&str; 5] = ["front", "pipeline", "stage", "store", "gate"];

/// The layer of a module: its index in [`LAYERS`], by its first name (the
/// gate by its second), or `None` for a ground module at the crate root.
fn layer_of(module: &[String]) -> Option<usize> {
    let name = match module {
        [pipeline, gate, ..] if pipeline == "pipeline" && gate == "gate" => gate,
        [first, ..] => first,
        [] => return None,
    };
    LAYERS.iter().position(|l| l == name)
}

/// Every import that goes up: a layered module naming a layer above its
/// own, or a ground module naming `front/` or `pipeline/`.
fn upward_imports(krate: &Crate) -> Vec<String> {
    let mut offenders = Vec::new();
    for (module, (file, named)) in &krate.edges {
        let own = layer_of(module);
        for target in named {
            let Some(theirs) = layer_of(target) else {
                continue;
            };
            let up = match own {
                Some(own) => theirs < own,
                None => theirs <= 1,
            };
            if up {
                offenders.push(format!("{file} names {}", show(target)));
            }
        }
    }
    offenders
}

#[test]
fn no_module_names_a_layer_above_its_own() {
    let krate = daemon();
    for (n, layer) in LAYERS.iter().enumerate() {
        assert!(
            krate.edges.keys().any(|m| layer_of(m) == Some(n)),
            "no module in the layer `{layer}`"
        );
    }
    let offenders = upward_imports(&krate);
    assert!(
        offenders.is_empty(),
        "a module imports a layer above its own (front > pipeline > stage > store > gate):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_layer_rule_fails_on_a_stage_that_imports_the_front() {
    // A small crate laid out as the daemon is, with what a stage (`parse`)
    // and a ground module (`config`) name.
    let tree = |parse: &str, config: &str| -> Crate {
        let files: Vec<(PathBuf, String)> = [
            (
                "lib.rs",
                "pub mod front; pub mod pipeline; pub mod stage; pub mod store; pub mod config;",
            ),
            ("front/mod.rs", "pub mod server;"),
            (
                "front/server.rs",
                "use crate::pipeline::run; use crate::config::Config;",
            ),
            (
                "pipeline/mod.rs",
                "pub mod gate; use crate::stage::parse; use gate::Trail;",
            ),
            ("pipeline/gate.rs", "use crate::config::Config;"),
            ("stage/mod.rs", "pub mod parse;"),
            ("stage/parse.rs", parse),
            ("store/mod.rs", "use crate::pipeline::gate::Trail;"),
            ("config.rs", config),
        ]
        .iter()
        .map(|(f, text)| (PathBuf::from(f), text.to_string()))
        .collect();
        graph(&files)
    };
    let stage_ok = "use crate::store::x; use crate::pipeline::gate::Trail;";
    let clean = tree(stage_ok, "pub struct Config;");
    assert_eq!(upward_imports(&clean), Vec::<String>::new());
    let planted = tree(
        "use crate::{pipeline::gate::Trail, front::server::Peer};",
        "pub struct Config;",
    );
    assert_eq!(
        upward_imports(&planted),
        vec![String::from("src/stage/parse.rs names front::server")]
    );
    let ground_up = tree(stage_ok, "use crate::pipeline::run;");
    assert_eq!(
        upward_imports(&ground_up),
        vec![String::from("src/config.rs names pipeline")]
    );
}

#[test]
fn a_stage_names_no_other_stage() {
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
    let mut offenders = Vec::new();
    for module in stages {
        let (file, named) = &krate.edges[module];
        for target in named {
            if target.first().is_some_and(|t| t == "stage") && target.get(1) != module.get(1) {
                offenders.push(format!("{file} names {}", show(target)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "a stage imports another stage:\n{}",
        offenders.join("\n")
    );
}

/// Stages that still take the daemon's whole state, and why.
const TAKES_THE_DAEMON: [&str; 1] = [
    // The sandbox's spec reads the layout, the egress hub, the policy and
    // the running children; its body is left as it is while the spawn path
    // changes.
    "execute",
];

#[test]
fn a_stage_takes_what_it_uses() {
    let krate = daemon();
    let state = vec![String::from("state")];
    let offenders: Vec<String> = krate
        .edges
        .iter()
        .filter(|(m, _)| m.first().is_some_and(|f| f == "stage"))
        .filter(|(m, _)| {
            !m.get(1)
                .is_some_and(|s| TAKES_THE_DAEMON.contains(&s.as_str()))
        })
        .filter(|(_, (_, named))| named.contains(&state))
        .map(|(_, (file, _))| file.clone())
        .collect();
    assert!(
        offenders.is_empty(),
        "a stage takes the daemon's whole state instead of what it uses:\n{}",
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

//! Program knowledge is data: no string literal in `policy/src` that names a
//! program of the built-in tables is compared with anything. The check reads
//! the sources (comments and inline test modules left out) and flags a
//! program name written as a literal that is compared (`==`, `!=`), matched
//! (`=>`, `|` alternatives) or listed in an array (`&["rm", …]`, which code
//! only writes to look words up in). A program's behaviour belongs in
//! `patterns.toml`, where a `[[detector]]` entry names the routine.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use praxis_policy::BUILTIN_PATTERNS;

/// Every program name of the built-in `[[program]]` and `[[wrapper]]`
/// tables that is a word: `.`, `[` and `:` are also path and shell syntax,
/// which the code compares as such.
fn program_names() -> BTreeSet<String> {
    let file: toml::Value = toml::from_str(BUILTIN_PATTERNS).unwrap();
    let mut names = BTreeSet::new();
    for table in ["program", "wrapper"] {
        for entry in file[table].as_array().unwrap() {
            for name in entry["names"].as_array().unwrap() {
                let name = name.as_str().unwrap();
                if name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
                    names.insert(name.to_owned());
                }
            }
        }
    }
    assert!(names.len() > 300, "found only {} programs", names.len());
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The string literals of `code` that are compared, matched or listed, each
/// with its line. Comments are skipped; escapes are kept as written.
fn compared_literals(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let (mut i, mut line) = (0, 1);
    let mut brackets: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    while i < bytes.len() {
        let b = bytes[i];
        if code[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if code[i..].starts_with("/*") {
            let end = code[i..].find("*/").map_or(bytes.len(), |e| i + e + 2);
            line += code[i..end].matches('\n').count();
            i = end;
            continue;
        }
        if b == b'\'' && bytes.get(i + 2) == Some(&b'\'') {
            // A char literal such as '"' or '[' is neither a string nor a bracket.
            i += 3;
            continue;
        }
        if b == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            let text = &code[start..j.min(bytes.len())];
            let before = code[..i].trim_end();
            let after = code[(j + 1).min(code.len())..].trim_start();
            let compared = ["==", "!=", "|"].iter().any(|op| before.ends_with(op))
                || ["==", "!=", "=>", "|"]
                    .iter()
                    .any(|op| after.starts_with(op) && !after.starts_with("||"))
                || brackets.last() == Some(&b'[');
            if compared {
                out.push((line, text.to_owned()));
            }
            line += text.matches('\n').count();
            i = j + 1;
            continue;
        }
        match b {
            b'\n' => line += 1,
            b'(' | b'[' | b'{' => brackets.push(b),
            b')' | b']' | b'}' => {
                brackets.pop();
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[test]
fn no_program_name_is_compared_in_the_policy_code() {
    let names = program_names();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("tests.rs")) {
        let text = fs::read_to_string(file).unwrap();
        // A file's inline test module states inputs and outputs, not behaviour.
        let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        for (line, literal) in compared_literals(code) {
            if names.contains(&literal) {
                offenders.push(format!(
                    "{}:{line}: `\"{literal}\"`",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "program names compared in code; make them data in patterns.toml:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_reader_sees_comparisons_matches_and_lists() {
    let code = r#"
        if p == "git" {}
        match p { "sed" | "gsed" => {}, _ => {} }
        const DELETERS: &[&str] = &["rm", "shred"];
        call(&word, "https", schemes); // "find" in a comment
        let message = format!("`{}` is not git", p);
    "#;
    let found: Vec<String> = compared_literals(code)
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert_eq!(found, ["git", "sed", "gsed", "rm", "shred"]);
}

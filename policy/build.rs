//! Writes the `[[env]]` entries of `patterns.toml` out as Rust constants.
//! Every client (`praxis-run`, each hook) needs only that table to choose
//! the variables it sends, once per start: parsing even a TOML file of the
//! table alone took a tenth of a hook's time, most of it spent faulting in
//! the parser's code and heap.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=patterns.toml");
    let text = std::fs::read_to_string("patterns.toml").expect("patterns.toml is readable");
    let patterns: toml::Table = text.parse().expect("patterns.toml parses");
    let entries = patterns
        .get("env")
        .and_then(toml::Value::as_array)
        .expect("patterns.toml has an [[env]] array of tables");
    let mut rust = String::from("&[\n");
    for entry in entries {
        let field = |key: &str| -> Vec<String> {
            entry
                .get(key)
                .and_then(toml::Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|v| v.as_str().expect("env names are strings").to_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let role = entry
            .get("role")
            .and_then(toml::Value::as_str)
            .expect("every [[env]] entry has a role");
        // `code_path` is `EnvRole::CodePath`: an unknown role fails to compile.
        let variant: String = role
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                chars
                    .next()
                    .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            })
            .collect();
        writeln!(
            rust,
            "    (EnvRole::{variant}, &{:?}, &{:?}),",
            field("names"),
            field("prefixes")
        )
        .expect("writing to a String");
    }
    rust.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("env_table.rs"), rust).expect("OUT_DIR is writable");
}

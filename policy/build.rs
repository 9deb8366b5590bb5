//! Copies the `[[env]]` entries of `patterns.toml` into a small TOML file of
//! their own. Every client (`praxis-run`, each hook) needs only that table
//! to choose the variables it sends, and parsing the whole file cost each
//! of them more than the rest of its work.

use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-changed=patterns.toml");
    let text = std::fs::read_to_string("patterns.toml").expect("patterns.toml is readable");
    let mut patterns: toml::Table = text.parse().expect("patterns.toml parses");
    let env = patterns
        .remove("env")
        .expect("patterns.toml has an [[env]] table");
    let mut only_env = toml::Table::new();
    only_env.insert(String::from("env"), env);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(
        out.join("env.toml"),
        toml::to_string(&only_env).expect("a TOML table serializes"),
    )
    .expect("OUT_DIR is writable");
}

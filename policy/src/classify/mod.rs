//! Tier classifier: what each simple command does, driven by `patterns.toml`.

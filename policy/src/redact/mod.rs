//! Redactor: masks secrets in text before it is shown, audited or logged.
//!
//! Two sources of secrets, applied in one pass:
//! - **rules** from the policy's `[redact]` section ([`RedactConfig`]): an
//!   aho-corasick keyword prefilter picks the rules whose keywords occur, and
//!   only those run their regex; entropy floors and allowlists drop
//!   placeholders. Every rule's examples are checked when the redactor is built.
//! - **known values** ([`Redactor::with_known_values`]): the broker's exact
//!   secrets and their encoded forms, in one leftmost-longest automaton.
//!
//! A secret becomes `[REDACTED:<rule-id or value name>]`. Overlapping matches
//! are merged, so no part of either survives. [`StreamRedactor`] does the same
//! over a byte stream, holding back a tail so a secret split between chunks is
//! still caught.

mod config;
mod error;
mod known;
mod redactor;
mod rule;
mod stream;

pub use config::{
    AllowlistConfig, DEFAULT_STREAM_WINDOW, Examples, OutputExamples, OutputFilter, RedactConfig,
    RuleConfig,
};
pub use error::RedactError;
pub use known::MIN_KNOWN_VALUE_LEN;
pub use redactor::{Finding, Redactor};
pub use rule::shannon_entropy;
pub use stream::StreamRedactor;

/// The shipped redaction rules: the `[redact]` section of the built-in
/// `patterns.toml`.
pub fn builtin_config() -> Result<RedactConfig, RedactError> {
    let mut patterns: toml::Table = toml::from_str(crate::BUILTIN_PATTERNS)?;
    let section = patterns
        .remove("redact")
        .ok_or(RedactError::MissingSection)?;
    Ok(section.try_into()?)
}

#[cfg(test)]
mod tests;

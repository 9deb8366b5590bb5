//! The redaction rules as data: the `[redact]` section of the policy.

use serde::Deserialize;

use super::error::RedactError;

/// Bytes the streaming redactor holds back when the section does not say.
pub const DEFAULT_STREAM_WINDOW: usize = 8 * 1024;

/// The redaction section: rules that recognise secrets, the allowlist shared
/// by every rule, and the streaming window.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactConfig {
    /// Bytes the streaming redactor keeps back between chunks. It must exceed
    /// the longest text any rule can match, or a secret split across chunks
    /// may be missed.
    #[serde(default = "default_stream_window")]
    pub stream_window: usize,
    /// Values no rule reports (placeholders, variable references, …).
    #[serde(default)]
    pub allowlist: AllowlistConfig,
    /// The rules, in the order they are reported when their matches tie.
    #[serde(rename = "rule", default)]
    pub rules: Vec<RuleConfig>,
}

impl RedactConfig {
    /// Parses the section from TOML text (unknown keys are errors).
    pub fn from_toml(text: &str) -> Result<Self, RedactError> {
        Ok(toml::from_str(text)?)
    }
}

fn default_stream_window() -> usize {
    DEFAULT_STREAM_WINDOW
}

/// One gitleaks-class rule.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Stable name, used in `[REDACTED:<id>]` and in findings.
    pub id: String,
    /// What the rule recognises, for reviewers.
    pub description: String,
    /// Case-insensitive substrings of every match; the regex only runs on
    /// text that contains one of them.
    pub keywords: Vec<String>,
    /// The pattern, over bytes with ASCII classes. The first capture group
    /// that takes part in a match is the secret (and the only part masked);
    /// without groups the whole match is.
    pub regex: String,
    /// Minimum Shannon entropy of the secret, in bits per byte.
    #[serde(default)]
    pub entropy: Option<f64>,
    /// Matches of this rule that are not secrets.
    #[serde(default)]
    pub allowlist: AllowlistConfig,
    /// Texts the rule must and must not catch, checked when the rules load.
    pub examples: Examples,
    /// For output the agent reads (and may edit and write back): the
    /// stricter test a match must pass there too. Without it, output is
    /// masked as the audit store is.
    #[serde(default)]
    pub output: Option<OutputFilter>,
}

/// A generic rule's stricter test in the agent's output, so that reading a
/// config file and writing it back does not replace `api_key = "test"` by a
/// mask: the secret must reach the entropy floor and contain no stopword.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputFilter {
    /// Minimum Shannon entropy of the secret, in bits per byte.
    pub entropy: f64,
    /// Case-insensitive substrings that mark a value as a placeholder.
    #[serde(default)]
    pub stopwords: Vec<String>,
    pub examples: OutputExamples,
}

/// Texts the output filter must leave as they are, and must still mask.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputExamples {
    pub kept: Vec<String>,
    pub masked: Vec<String>,
}

/// What is not a secret even though a rule matched it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowlistConfig {
    /// Patterns tested against the secret part.
    #[serde(default)]
    pub regexes: Vec<String>,
    /// Patterns tested against the whole match (secret and its context).
    #[serde(default)]
    pub match_regexes: Vec<String>,
    /// Case-insensitive substrings that make a secret a placeholder.
    #[serde(default)]
    pub stopwords: Vec<String>,
}

/// A rule's inline examples.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Examples {
    /// Texts in which the rule must find a secret.
    pub true_positives: Vec<String>,
    /// Texts in which the rule must find nothing.
    pub false_positives: Vec<String>,
}

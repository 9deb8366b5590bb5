//! Why a redactor could not be built.

/// Smallest stream window accepted from a policy.
pub(super) const MIN_STREAM_WINDOW: usize = 256;

/// Why a redactor could not be built. Any of these means the policy is bad.
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    #[error("redact rules: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("the built-in patterns have no [redact] section")]
    MissingSection,
    #[error("redact rule id {id:?} must be non-empty ASCII letters, digits, '-' or '_'")]
    BadRuleId { id: String },
    #[error("redact rule {rule:?} is declared twice")]
    DuplicateRule { rule: String },
    #[error("redact rule {rule:?} has no keywords (every rule needs a prefilter keyword)")]
    NoKeywords { rule: String },
    #[error("redact rule {rule:?}: entropy {bits} is outside (0, 8] bits per byte")]
    BadEntropy { rule: String, bits: f64 },
    #[error("redact rule {rule:?} needs at least one true and one false positive example")]
    MissingExamples { rule: String },
    #[error("redact {scope}: bad regex: {source}")]
    Regex {
        scope: String,
        source: Box<regex::Error>,
    },
    #[error("redact {scope}: cannot build matcher: {source}")]
    Automaton {
        scope: String,
        source: aho_corasick::BuildError,
    },
    #[error("redact rule {rule:?} misses its true positive example {example:?}")]
    MissedTruePositive { rule: String, example: String },
    #[error("redact rule {rule:?} catches its false positive example {example:?}")]
    CaughtFalsePositive { rule: String, example: String },
    #[error("redact stream_window {window} is below the minimum of {MIN_STREAM_WINDOW} bytes")]
    WindowTooSmall { window: usize },
}

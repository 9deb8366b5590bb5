//! Compiled rules: regex, entropy floor and allowlists, checked against text.

use std::ops::Range;

use aho_corasick::AhoCorasick;
use regex::bytes::{Regex, RegexBuilder};

use super::config::{AllowlistConfig, RuleConfig};
use super::error::RedactError;

/// Compiled size cap per regex; generous for the alternations rules use,
/// small enough that a hostile policy cannot exhaust memory.
const REGEX_SIZE_LIMIT: usize = 16 << 20;

/// One match worth masking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Hit {
    /// The bytes to replace.
    pub secret: Range<usize>,
    /// The whole match including its context; the stream never cuts inside it.
    pub span: Range<usize>,
    /// Index into the redactor's label table.
    pub label: usize,
}

/// A compiled allowlist.
#[derive(Clone, Debug)]
pub(super) struct Allowlist {
    regexes: Vec<Regex>,
    match_regexes: Vec<Regex>,
    stopwords: Option<AhoCorasick>,
}

impl Allowlist {
    pub fn compile(config: &AllowlistConfig, scope: &str) -> Result<Self, RedactError> {
        let build = |patterns: &[String]| -> Result<Vec<Regex>, RedactError> {
            patterns.iter().map(|p| compile_regex(p, scope)).collect()
        };
        let stopwords = if config.stopwords.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(&config.stopwords)
                    .map_err(|source| RedactError::Automaton {
                        scope: scope.to_owned(),
                        source,
                    })?,
            )
        };
        Ok(Self {
            regexes: build(&config.regexes)?,
            match_regexes: build(&config.match_regexes)?,
            stopwords,
        })
    }

    /// True when the match (`whole`) with its `secret` part is allowlisted.
    fn allows(&self, whole: &[u8], secret: &[u8]) -> bool {
        self.stopwords
            .as_ref()
            .is_some_and(|ac| ac.is_match(secret))
            || self.regexes.iter().any(|r| r.is_match(secret))
            || self.match_regexes.iter().any(|r| r.is_match(whole))
    }
}

/// A rule ready to run.
#[derive(Clone, Debug)]
pub(super) struct Rule {
    pub id: String,
    pub keywords: Vec<String>,
    regex: Regex,
    entropy: Option<f64>,
    allowlist: Allowlist,
    /// The stricter test in the agent's output: entropy floor and stopwords.
    output: Option<(f64, Option<AhoCorasick>)>,
}

impl Rule {
    pub fn compile(config: &RuleConfig) -> Result<Self, RedactError> {
        let id = config.id.clone();
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(RedactError::BadRuleId { id });
        }
        if config.keywords.is_empty() || config.keywords.iter().any(String::is_empty) {
            return Err(RedactError::NoKeywords { rule: id });
        }
        if let Some(bits) = config.entropy
            && !(bits > 0.0 && bits <= 8.0)
        {
            return Err(RedactError::BadEntropy { rule: id, bits });
        }
        if config.examples.true_positives.is_empty() || config.examples.false_positives.is_empty() {
            return Err(RedactError::MissingExamples { rule: id });
        }
        let output = match &config.output {
            None => None,
            Some(filter) => {
                if !(filter.entropy > 0.0 && filter.entropy <= 8.0) {
                    return Err(RedactError::BadEntropy {
                        rule: id,
                        bits: filter.entropy,
                    });
                }
                let stopwords = (!filter.stopwords.is_empty())
                    .then(|| {
                        AhoCorasick::builder()
                            .ascii_case_insensitive(true)
                            .build(&filter.stopwords)
                            .map_err(|source| RedactError::Automaton {
                                scope: id.clone(),
                                source,
                            })
                    })
                    .transpose()?;
                Some((filter.entropy, stopwords))
            }
        };
        Ok(Self {
            regex: compile_regex(&config.regex, &id)?,
            allowlist: Allowlist::compile(&config.allowlist, &id)?,
            keywords: config.keywords.clone(),
            entropy: config.entropy,
            output,
            id,
        })
    }

    /// Whether a secret this rule found is left as it is in the agent's
    /// output: below the output entropy floor, or a placeholder.
    fn kept_in_output(&self, secret: &[u8]) -> bool {
        self.output.as_ref().is_some_and(|(floor, stopwords)| {
            shannon_entropy(secret) < *floor
                || stopwords.as_ref().is_some_and(|ac| ac.is_match(secret))
        })
    }

    /// Appends this rule's hits in `text` (labelled `label`) to `out`; for
    /// the agent's output (`for_output`), only those that pass its output test.
    pub fn find(
        &self,
        text: &[u8],
        global: &Allowlist,
        label: usize,
        for_output: bool,
        out: &mut Vec<Hit>,
    ) {
        for caps in self.regex.captures_iter(text) {
            let Some(whole) = caps.get(0) else { continue };
            let secret = caps.iter().skip(1).flatten().next().unwrap_or(whole);
            if secret.is_empty() {
                continue;
            }
            if self
                .entropy
                .is_some_and(|min| shannon_entropy(secret.as_bytes()) < min)
            {
                continue;
            }
            if self.allowlist.allows(whole.as_bytes(), secret.as_bytes())
                || global.allows(whole.as_bytes(), secret.as_bytes())
                || (for_output && self.kept_in_output(secret.as_bytes()))
            {
                continue;
            }
            out.push(Hit {
                secret: secret.range(),
                span: whole.range(),
                label,
            });
        }
    }
}

/// Patterns are byte-oriented: `\w`, `\s`, `\b`, `(?i)` are ASCII and a
/// negated class matches any byte. Secrets are ASCII, output may be any
/// bytes, and ASCII classes keep the lazy DFA small (Unicode classes with
/// bounded repetitions made it thrash, 100× slower).
fn compile_regex(pattern: &str, scope: &str) -> Result<Regex, RedactError> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|source| RedactError::Regex {
            scope: scope.to_owned(),
            source: Box::new(source),
        })
}

/// Shannon entropy of `bytes` in bits per byte (0 for empty input).
#[must_use]
pub fn shannon_entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let len = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_uniform_and_constant_text() {
        assert_eq!(shannon_entropy(b""), 0.0);
        assert_eq!(shannon_entropy(b"aaaaaaaa"), 0.0);
        assert!((shannon_entropy(b"abcd") - 2.0).abs() < 1e-9);
        let all: Vec<u8> = (0..=255).collect();
        assert!((shannon_entropy(&all) - 8.0).abs() < 1e-9);
    }
}

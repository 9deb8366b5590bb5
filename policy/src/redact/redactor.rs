//! The redactor: compiled rules and known values, applied to a text in one pass.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use aho_corasick::AhoCorasick;

use super::config::RedactConfig;
use super::error::{MIN_STREAM_WINDOW, RedactError};
use super::known::KnownValues;
use super::rule::{Allowlist, Hit, Rule};

/// A secret found in a text: which rule (or known value name) and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding<'a> {
    pub rule_id: &'a str,
    pub range: Range<usize>,
}

/// The compiled rules, shared by every redactor derived from one config.
#[derive(Debug)]
struct RuleSet {
    rules: Vec<Rule>,
    global: Allowlist,
    /// Keyword automaton; pattern `i` triggers the rules in `triggers[i]`.
    keywords: AhoCorasick,
    triggers: Vec<Vec<usize>>,
    window: usize,
}

/// Masks secrets in text. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Redactor {
    rules: Arc<RuleSet>,
    known: Option<Arc<KnownValues>>,
    /// Label `i < rules.len()` is rule `i`; the rest name known values.
    labels: Arc<[Label]>,
    /// Masking output the agent reads: generic rules apply their stricter
    /// output test; known values are masked all the same.
    for_output: bool,
}

#[derive(Debug)]
struct Label {
    name: String,
    replacement: Vec<u8>,
}

impl Label {
    fn new(name: String) -> Self {
        let replacement = format!("[REDACTED:{name}]").into_bytes();
        Self { name, replacement }
    }
}

impl Redactor {
    /// Compiles `config` and checks every rule against its examples.
    pub fn new(config: &RedactConfig) -> Result<Self, RedactError> {
        if config.stream_window < MIN_STREAM_WINDOW {
            return Err(RedactError::WindowTooSmall {
                window: config.stream_window,
            });
        }
        let mut rules: Vec<Rule> = Vec::with_capacity(config.rules.len());
        for rc in &config.rules {
            let rule = Rule::compile(rc)?;
            if rules.iter().any(|r| r.id == rule.id) {
                return Err(RedactError::DuplicateRule { rule: rule.id });
            }
            rules.push(rule);
        }
        let mut words: Vec<String> = Vec::new();
        let mut triggers: Vec<Vec<usize>> = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            for word in &rule.keywords {
                let word = word.to_ascii_lowercase();
                match words.iter().position(|w| *w == word) {
                    Some(p) => triggers[p].push(index),
                    None => {
                        words.push(word);
                        triggers.push(vec![index]);
                    }
                }
            }
        }
        let keywords = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&words)
            .map_err(|source| RedactError::Automaton {
                scope: "keywords".to_owned(),
                source,
            })?;
        let labels: Arc<[Label]> = rules.iter().map(|r| Label::new(r.id.clone())).collect();
        let set = RuleSet {
            global: Allowlist::compile(&config.allowlist, "allowlist")?,
            rules,
            keywords,
            triggers,
            window: config.stream_window,
        };
        let redactor = Self {
            rules: Arc::new(set),
            known: None,
            labels,
            for_output: false,
        };
        redactor.check_examples(config)?;
        redactor.for_output().check_output_examples(config)?;
        Ok(redactor)
    }

    /// The same rules and values, masking output the agent reads: a generic
    /// rule's match is left as it is there when it is below its output
    /// entropy floor or a placeholder, so a file read and written back is
    /// not corrupted. The audit store and logs keep the full rules.
    #[must_use]
    pub fn for_output(&self) -> Self {
        Self {
            for_output: true,
            ..self.clone()
        }
    }

    /// Each output filter keeps its `kept` examples and masks its `masked` ones.
    fn check_output_examples(&self, config: &RedactConfig) -> Result<(), RedactError> {
        for (index, rc) in config.rules.iter().enumerate() {
            let Some(filter) = &rc.output else { continue };
            let caught = |example: &str| {
                let mut hits = Vec::new();
                self.rule_hits(example.as_bytes(), &mut hits, Some(index));
                !hits.is_empty()
            };
            if let Some(example) = filter.examples.masked.iter().find(|e| !caught(e)) {
                return Err(RedactError::MissedTruePositive {
                    rule: format!("{} (output)", rc.id),
                    example: example.clone(),
                });
            }
            if let Some(example) = filter.examples.kept.iter().find(|e| caught(e)) {
                return Err(RedactError::CaughtFalsePositive {
                    rule: format!("{} (output)", rc.id),
                    example: example.clone(),
                });
            }
        }
        Ok(())
    }

    /// Each rule, run as in real use (prefilter included), must catch each of
    /// its true positives and none of its false positives.
    fn check_examples(&self, config: &RedactConfig) -> Result<(), RedactError> {
        for (index, rc) in config.rules.iter().enumerate() {
            let caught = |example: &str| {
                let mut hits = Vec::new();
                self.rule_hits(example.as_bytes(), &mut hits, Some(index));
                !hits.is_empty()
            };
            if let Some(example) = rc.examples.true_positives.iter().find(|e| !caught(e)) {
                return Err(RedactError::MissedTruePositive {
                    rule: rc.id.clone(),
                    example: example.clone(),
                });
            }
            if let Some(example) = rc.examples.false_positives.iter().find(|e| caught(e)) {
                return Err(RedactError::CaughtFalsePositive {
                    rule: rc.id.clone(),
                    example: example.clone(),
                });
            }
        }
        Ok(())
    }

    /// A redactor with the same rules that also masks exactly `values`
    /// (name, value) and their encoded forms as `[REDACTED:<name>]`. It
    /// replaces any known values of `self`. Values shorter than
    /// [`MIN_KNOWN_VALUE_LEN`](super::known::MIN_KNOWN_VALUE_LEN) bytes are ignored.
    pub fn with_known_values(&self, values: &[(&str, &[u8])]) -> Result<Self, RedactError> {
        let rule_count = self.rules.rules.len();
        let mut labels: Vec<Label> = self.labels[..rule_count]
            .iter()
            .map(|l| Label::new(l.name.clone()))
            .collect();
        let mut names: Vec<&str> = Vec::new();
        let known = KnownValues::build(values, |i| {
            let name = sanitize_name(values[i].0);
            let position = names
                .iter()
                .position(|n| *n == values[i].0)
                .unwrap_or_else(|| {
                    names.push(values[i].0);
                    labels.push(Label::new(name));
                    names.len() - 1
                });
            rule_count + position
        })?;
        Ok(Self {
            rules: Arc::clone(&self.rules),
            known: known.map(Arc::new),
            labels: labels.into(),
            for_output: self.for_output,
        })
    }

    /// Bytes the streaming redactor holds back: the policy's window, or more
    /// when a known value's longest form needs it.
    #[must_use]
    pub fn stream_window(&self) -> usize {
        let known = self.known.as_ref().map_or(0, |k| k.longest + 1);
        self.rules.window.max(known)
    }

    /// Where the secrets in `text` are, merged and in order.
    #[must_use]
    pub fn matches(&self, text: &[u8]) -> Vec<Finding<'_>> {
        merge(self.hits(text))
            .into_iter()
            .map(|h| Finding {
                rule_id: &self.labels[h.label].name,
                range: h.secret,
            })
            .collect()
    }

    /// `text` with every secret replaced; borrowed when nothing was found.
    #[must_use]
    pub fn redact_bytes<'t>(&self, text: &'t [u8]) -> Cow<'t, [u8]> {
        let hits = merge(self.hits(text));
        if hits.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = Vec::with_capacity(text.len());
        self.apply(text, &hits, &mut out);
        Cow::Owned(out)
    }

    /// As [`Self::redact_bytes`] for text. A known value that splits a UTF-8
    /// character leaves a broken byte sequence, shown as U+FFFD.
    #[must_use]
    pub fn redact_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// Writes `text` to `out` with the merged `hits` replaced.
    pub(super) fn apply(&self, text: &[u8], hits: &[Hit], out: &mut Vec<u8>) {
        let mut at = 0;
        for hit in hits {
            out.extend_from_slice(&text[at..hit.secret.start]);
            out.extend_from_slice(&self.labels[hit.label].replacement);
            at = hit.secret.end;
        }
        out.extend_from_slice(&text[at..]);
    }

    /// Every hit of every rule and known value, unmerged.
    pub(super) fn hits(&self, text: &[u8]) -> Vec<Hit> {
        let mut hits = Vec::new();
        self.rule_hits(text, &mut hits, None);
        if let Some(known) = &self.known {
            known.find(text, &mut hits);
        }
        hits
    }

    /// Hits of the rules whose keywords occur in `text` (only rule `only`
    /// when given).
    fn rule_hits(&self, text: &[u8], out: &mut Vec<Hit>, only: Option<usize>) {
        let set = &*self.rules;
        let mut triggered = vec![false; set.rules.len()];
        let mut pending = only.map_or(set.rules.len(), |_| 1);
        for m in set.keywords.find_overlapping_iter(text) {
            for &rule in &set.triggers[m.pattern().as_usize()] {
                if !triggered[rule] && only.is_none_or(|o| o == rule) {
                    triggered[rule] = true;
                    pending -= 1;
                }
            }
            if pending == 0 {
                break;
            }
        }
        for (index, rule) in set.rules.iter().enumerate() {
            if triggered[index] {
                rule.find(text, &set.global, index, self.for_output, out);
            }
        }
    }
}

/// Value names go into output and audit records: keep them to one safe token.
fn sanitize_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "secret".to_owned()
    } else {
        cleaned
    }
}

/// Sorts hits and merges overlapping secrets into one, so no fragment of
/// either survives; the label is the one covering the earliest, longest part.
pub(super) fn merge(mut hits: Vec<Hit>) -> Vec<Hit> {
    hits.sort_by(|a, b| {
        a.secret
            .start
            .cmp(&b.secret.start)
            .then(b.secret.end.cmp(&a.secret.end))
    });
    let mut merged: Vec<Hit> = Vec::with_capacity(hits.len());
    for hit in hits {
        match merged.last_mut() {
            Some(last) if hit.secret.start < last.secret.end => {
                last.secret.end = last.secret.end.max(hit.secret.end);
                last.span.start = last.span.start.min(hit.span.start);
                last.span.end = last.span.end.max(hit.span.end);
            }
            _ => merged.push(hit),
        }
    }
    merged
}

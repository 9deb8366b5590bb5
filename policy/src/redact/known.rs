//! Exact known values (brokered credentials) and the encoded forms in which
//! a command might print them.

use std::collections::BTreeSet;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use super::error::RedactError;
use super::rule::Hit;

/// Values shorter than this are ignored: masking every occurrence of a
/// two- or three-byte string would shred ordinary output.
pub const MIN_KNOWN_VALUE_LEN: usize = 4;

/// Partial base64 forms (the stable middle of an unaligned encoding) shorter
/// than this are skipped: they would match random base64 text.
const MIN_PARTIAL_FORM_LEN: usize = 8;

/// Line length of `base64` (coreutils) output.
const BASE64_WRAP: usize = 76;

/// One automaton over every form of every known value.
#[derive(Clone, Debug)]
pub(super) struct KnownValues {
    automaton: AhoCorasick,
    /// Pattern index → label index.
    labels: Vec<usize>,
    /// Length of the longest form, which the stream must hold back.
    pub longest: usize,
}

impl KnownValues {
    /// Builds the automaton; `label_of(i)` is the label of `values[i]`.
    /// Returns `None` when no value is long enough to mask.
    pub fn build(
        values: &[(&str, &[u8])],
        mut label_of: impl FnMut(usize) -> usize,
    ) -> Result<Option<Self>, RedactError> {
        let mut forms: Vec<Vec<u8>> = Vec::new();
        let mut labels = Vec::new();
        for (i, (_, value)) in values.iter().enumerate() {
            if value.len() < MIN_KNOWN_VALUE_LEN {
                continue;
            }
            let label = label_of(i);
            for form in encoded_forms(value) {
                forms.push(form);
                labels.push(label);
            }
        }
        if forms.is_empty() {
            return Ok(None);
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            // A few hundred short patterns: the full DFA is small and the
            // fastest to scan with, since this runs over every output byte.
            .kind(Some(AhoCorasickKind::DFA))
            .build(&forms)
            .map_err(|source| RedactError::Automaton {
                scope: "known values".to_owned(),
                source,
            })?;
        let longest = forms.iter().map(Vec::len).max().unwrap_or(0);
        Ok(Some(Self {
            automaton,
            labels,
            longest,
        }))
    }

    pub fn find(&self, text: &[u8], out: &mut Vec<Hit>) {
        for m in self.automaton.find_iter(text) {
            out.push(Hit {
                secret: m.range(),
                span: m.range(),
                label: self.labels[m.pattern().as_usize()],
            });
        }
    }
}

/// Every form of `value` that is masked: the raw bytes, hex (both cases),
/// base64 and base64url (padded, unpadded, wrapped as `base64` prints it, and
/// the stable middle of the encoding at each of the three alignments a value
/// can have inside a longer stream) and percent-encoding.
pub(super) fn encoded_forms(value: &[u8]) -> BTreeSet<Vec<u8>> {
    let mut forms = BTreeSet::new();
    forms.insert(value.to_vec());
    let lower = hex::encode(value);
    forms.insert(lower.to_ascii_uppercase().into_bytes());
    forms.insert(lower.into_bytes());

    let padded = STANDARD.encode(value);
    if padded.len() > BASE64_WRAP {
        let lines: Vec<&str> = padded
            .as_bytes()
            .chunks(BASE64_WRAP)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        forms.insert(lines.join("\n").into_bytes());
    }
    forms.insert(padded.into_bytes());
    forms.insert(URL_SAFE.encode(value).into_bytes());
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        forms.insert(engine.encode(value).into_bytes());
        for lead in 0..3 {
            let middle = stable_middle(engine, value, lead);
            if middle.len() >= MIN_PARTIAL_FORM_LEN {
                forms.insert(middle);
            }
        }
    }

    for upper in [true, false] {
        forms.insert(percent_encode(value, upper, false));
        forms.insert(percent_encode(value, upper, true));
    }
    forms
}

/// The base64 characters of `value` that do not depend on its neighbours when
/// it is preceded by `lead` bytes (0..3) inside a longer encoded stream:
/// character `i` covers bits `6i..6i+6`, and only those wholly inside the
/// value's bits `8·lead..8·(lead+len)` are fixed.
fn stable_middle(engine: &impl base64::Engine, value: &[u8], lead: usize) -> Vec<u8> {
    let mut input = vec![0u8; lead];
    input.extend_from_slice(value);
    let encoded = engine.encode(&input).into_bytes();
    let first = (8 * lead).div_ceil(6);
    let end = (8 * (lead + value.len())) / 6;
    encoded
        .get(first..end)
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// RFC 3986 percent-encoding of everything but unreserved bytes; `form`
/// writes a space as `+` (HTML form encoding).
fn percent_encode(value: &[u8], upper: bool, form: bool) -> Vec<u8> {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = Vec::with_capacity(value.len() * 3);
    for &b in value {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else if form && b == b' ' {
            out.push(b'+');
        } else {
            out.extend_from_slice(&[
                b'%',
                digits[usize::from(b >> 4)],
                digits[usize::from(b & 15)],
            ]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_middle_appears_in_every_alignment() {
        let value = b"s3cr3t-value-0123456789";
        for lead in 0..3 {
            for trail in 0..3 {
                let mut stream = b"xyz"[..lead].to_vec();
                stream.extend_from_slice(value);
                stream.extend_from_slice(&b"\n!?"[..trail]);
                let encoded = STANDARD.encode(&stream);
                let middle = stable_middle(&STANDARD_NO_PAD, value, lead);
                assert!(
                    middle.len() >= 28,
                    "lead {lead}: middle too short: {}",
                    middle.len()
                );
                assert!(
                    encoded
                        .as_bytes()
                        .windows(middle.len())
                        .any(|w| w == middle.as_slice()),
                    "lead {lead} trail {trail}: {encoded} lacks {}",
                    String::from_utf8_lossy(&middle)
                );
            }
        }
    }

    #[test]
    fn percent_encoding_forms() {
        assert_eq!(percent_encode(b"a b/c~", true, false), b"a%20b%2Fc~");
        assert_eq!(percent_encode(b"a b/c~", false, true), b"a+b%2fc~");
    }

    #[test]
    fn wrapped_form_matches_coreutils_layout() {
        let value = [7u8; 100];
        let forms = encoded_forms(&value);
        let padded = STANDARD.encode(value);
        let wrapped = format!("{}\n{}", &padded[..76], &padded[76..]);
        assert!(forms.contains(wrapped.as_bytes()));
    }
}

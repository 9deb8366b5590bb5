//! Bounded errors: every failure the daemon reports is one line of bounded
//! length, never a backtrace or a multi-line dump.

use std::fmt::Display;

/// Longest reason sent to a client or written to the audit log.
pub const MAX_REASON: usize = 400;

/// `err` as one line: whitespace runs collapsed, control characters dropped,
/// cut at [`MAX_REASON`] bytes on a character boundary.
pub fn one_line(err: &dyn Display) -> String {
    let text = err.to_string();
    let mut out = String::with_capacity(text.len().min(MAX_REASON));
    for word in text.split_whitespace() {
        let word: String = word.chars().filter(|c| !c.is_control()).collect();
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&word);
        if out.len() >= MAX_REASON {
            break;
        }
    }
    if out.len() > MAX_REASON {
        let mut cut = MAX_REASON - 3;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_and_bounds() {
        assert_eq!(
            one_line(&"spawn failed:\n  at foo\n\tat bar\x07"),
            "spawn failed: at foo at bar"
        );
        let long = "é".repeat(1000);
        let line = one_line(&long);
        assert!(line.len() <= MAX_REASON && line.ends_with("..."));
    }
}

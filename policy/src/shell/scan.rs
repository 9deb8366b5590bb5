//! Linear pre-scan run before the shell parser sees any text.
//!
//! The parser is recursive descent; deep nesting would exhaust the stack and a
//! huge token count costs too much time. This scan measures both in one pass
//! with an explicit stack (no recursion), so hostile input is refused cheaply.

use thiserror::Error;

/// Why the text is refused before parsing. The message is the hold reason.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ScanError {
    #[error(
        "shell text nested deeper than {limit} levels of (), {{}}, $(), quotes or if/case/loops"
    )]
    TooDeep { limit: usize },
    #[error("nested subshell written `( (`, which the parser would misread as arithmetic")]
    SpacedDoubleParen,
    #[error(
        "shell text too large to analyse: more than {limit} tokens in total, nested scripts included"
    )]
    TooManyTokens { limit: usize },
}

/// What the scan measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Approximate number of shell tokens (words and operators) plus
    /// expansions and escapes, which each cost the parser a word piece.
    pub tokens: usize,
}

/// One open construct on the scan stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// `(`, `$(`, `<(`, `>(`, `$((`: closed by `)`.
    Paren,
    /// `${` or a `{` word: closed by `}`.
    Brace,
    /// `"`: closed by `"`.
    Double,
    /// A backquoted command substitution.
    Backtick,
    /// `if`, `case`, `while`, `until`, `for`, `select`: closed by `fi`, `esac`, `done`.
    Keyword,
}

/// A here-document whose body starts after the next newline.
struct PendingHereDoc {
    delimiter: Vec<u8>,
    strip_tabs: bool,
}

/// Scans `src`, refusing nesting deeper than `max_depth` or more than
/// `max_tokens` tokens. Runs in time linear in `src.len()`.
pub fn scan(src: &str, max_depth: usize, max_tokens: usize) -> Result<Stats, ScanError> {
    let b = src.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending: Vec<PendingHereDoc> = Vec::new();
    let mut tokens = 0usize;
    let mut i = 0usize;
    // True when the previous byte ended a word, so the next word char starts one.
    let mut at_word_start = true;

    let push = |stack: &mut Vec<Frame>, f: Frame| -> Result<(), ScanError> {
        stack.push(f);
        if stack.len() > max_depth {
            Err(ScanError::TooDeep { limit: max_depth })
        } else {
            Ok(())
        }
    };
    let count = |tokens: &mut usize| -> Result<(), ScanError> {
        *tokens += 1;
        if *tokens > max_tokens {
            Err(ScanError::TooManyTokens { limit: max_tokens })
        } else {
            Ok(())
        }
    };

    while i < b.len() {
        let c = b[i];
        let in_double = stack.last() == Some(&Frame::Double);
        if in_double {
            if matches!(c, b'\\' | b'$' | b'`') {
                count(&mut tokens)?;
            }
            match c {
                b'\\' => i += 2,
                b'"' => {
                    stack.pop();
                    i += 1;
                }
                b'$' if b.get(i + 1) == Some(&b'(') => {
                    push(&mut stack, Frame::Paren)?;
                    i += 2;
                    at_word_start = true;
                    refuse_spaced_double_paren(b, i)?;
                }
                b'$' if b.get(i + 1) == Some(&b'{') => {
                    push(&mut stack, Frame::Brace)?;
                    i += 2;
                }
                b'`' => {
                    push(&mut stack, Frame::Backtick)?;
                    i += 1;
                    at_word_start = true;
                }
                _ => i += 1,
            }
            continue;
        }
        if matches!(c, b'\\' | b'$') {
            count(&mut tokens)?;
        }
        match c {
            b'\\' => {
                at_word_start = false;
                i += 2;
            }
            b'\'' => {
                if at_word_start {
                    count(&mut tokens)?;
                }
                at_word_start = false;
                i = skip_single(b, i + 1);
            }
            b'$' if b.get(i + 1) == Some(&b'\'') => {
                if at_word_start {
                    count(&mut tokens)?;
                }
                at_word_start = false;
                i = skip_ansi_c(b, i + 2);
            }
            b'"' => {
                if at_word_start {
                    count(&mut tokens)?;
                }
                at_word_start = false;
                push(&mut stack, Frame::Double)?;
                i += 1;
            }
            b'`' => {
                if stack.last() == Some(&Frame::Backtick) {
                    stack.pop();
                    at_word_start = false;
                } else {
                    if at_word_start {
                        count(&mut tokens)?;
                    }
                    push(&mut stack, Frame::Backtick)?;
                    at_word_start = true;
                }
                i += 1;
            }
            b'$' if b.get(i + 1) == Some(&b'(') => {
                if at_word_start {
                    count(&mut tokens)?;
                }
                push(&mut stack, Frame::Paren)?;
                i += 2;
                at_word_start = true;
                refuse_spaced_double_paren(b, i)?;
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                if at_word_start {
                    count(&mut tokens)?;
                }
                push(&mut stack, Frame::Brace)?;
                i += 2;
                at_word_start = false;
            }
            b'(' => {
                count(&mut tokens)?;
                push(&mut stack, Frame::Paren)?;
                i += 1;
                at_word_start = true;
                refuse_spaced_double_paren(b, i)?;
            }
            b')' => {
                count(&mut tokens)?;
                // A `)` that closes no paren is a case pattern end; it must not
                // pop another frame, or the depth would be under-counted.
                if stack.last() == Some(&Frame::Paren) {
                    stack.pop();
                }
                i += 1;
                at_word_start = true;
            }
            b'}' if stack.last() == Some(&Frame::Brace) => {
                stack.pop();
                i += 1;
                at_word_start = false;
            }
            b'#' if at_word_start => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\n' => {
                count(&mut tokens)?;
                i += 1;
                at_word_start = true;
                if !pending.is_empty() {
                    i = skip_here_doc_bodies(b, i, &mut pending);
                }
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                at_word_start = true;
            }
            b'<' if b.get(i + 1) == Some(&b'<') && b.get(i + 2) != Some(&b'<') => {
                count(&mut tokens)?;
                i += 2;
                let strip_tabs = b.get(i) == Some(&b'-');
                if strip_tabs {
                    i += 1;
                }
                let (delimiter, next) = here_doc_delimiter(b, i);
                if !delimiter.is_empty() {
                    pending.push(PendingHereDoc {
                        delimiter,
                        strip_tabs,
                    });
                    count(&mut tokens)?;
                }
                i = next;
                at_word_start = true;
            }
            b';' | b'&' | b'|' | b'<' | b'>' => {
                count(&mut tokens)?;
                i += 1;
                at_word_start = true;
            }
            _ => {
                if at_word_start {
                    count(&mut tokens)?;
                    let end = word_end(b, i);
                    match &b[i..end] {
                        b"if" | b"case" | b"while" | b"until" | b"for" | b"select" => {
                            push(&mut stack, Frame::Keyword)?;
                        }
                        b"fi" | b"esac" | b"done" if stack.last() == Some(&Frame::Keyword) => {
                            stack.pop();
                        }
                        b"{" | b"[[" => push(&mut stack, Frame::Brace)?,
                        b"]]" if stack.last() == Some(&Frame::Brace) => {
                            stack.pop();
                        }
                        _ => {}
                    }
                    at_word_start = false;
                }
                i += 1;
            }
        }
    }
    Ok(Stats { tokens })
}

/// The parser reads `( (cmd) )` as an arithmetic command, while the shell
/// runs `cmd` in nested subshells; such text is refused. `i` is just past a `(`.
/// Each blank run follows one `(`, so the look-ahead keeps the scan linear.
fn refuse_spaced_double_paren(b: &[u8], i: usize) -> Result<(), ScanError> {
    let blanks = b[i.min(b.len())..]
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .count();
    if blanks > 0 && b.get(i + blanks) == Some(&b'(') {
        Err(ScanError::SpacedDoubleParen)
    } else {
        Ok(())
    }
}

/// Index just past the closing `'` of a single-quoted string whose body starts at `i`.
fn skip_single(b: &[u8], i: usize) -> usize {
    b[i.min(b.len())..]
        .iter()
        .position(|&c| c == b'\'')
        .map_or(b.len(), |p| i + p + 1)
}

/// Index just past the closing `'` of a `$'…'` string whose body starts at `i`.
fn skip_ansi_c(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\'' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// End of a run of plain word bytes starting at `i`.
fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len()
        && !matches!(
            b[i],
            b' ' | b'\t'
                | b'\r'
                | b'\n'
                | b';'
                | b'&'
                | b'|'
                | b'<'
                | b'>'
                | b'('
                | b')'
                | b'"'
                | b'\''
                | b'`'
                | b'$'
                | b'\\'
        )
    {
        i += 1;
    }
    i
}

/// Reads a here-doc delimiter word at `i` (after blanks), with quotes removed.
/// Returns the delimiter and the index after it.
fn here_doc_delimiter(b: &[u8], mut i: usize) -> (Vec<u8>, usize) {
    while i < b.len() && matches!(b[i], b' ' | b'\t') {
        i += 1;
    }
    let mut out = Vec::new();
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    out.push(b[i]);
                    i += 1;
                }
                i += 1;
            }
            b'\\' => {
                if let Some(&n) = b.get(i + 1) {
                    out.push(n);
                }
                i += 2;
            }
            b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')' => break,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    (out, i.min(b.len()))
}

/// Skips the bodies of all pending here-docs, starting at line start `i`.
fn skip_here_doc_bodies(b: &[u8], mut i: usize, pending: &mut Vec<PendingHereDoc>) -> usize {
    for doc in pending.drain(..) {
        while i < b.len() {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            let mut line = &b[i..end];
            if doc.strip_tabs {
                let tabs = line.iter().take_while(|&&c| c == b'\t').count();
                line = &line[tabs..];
            }
            i = (end + 1).min(b.len());
            if line == doc.delimiter.as_slice() {
                break;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(src: &str, depth: usize) -> bool {
        scan(src, depth, usize::MAX).is_ok()
    }

    #[test]
    fn counts_nesting_of_each_construct() {
        for open in ["(", "$(", "{ ", "${", "if a; then ", "\"$(", "while a; do "] {
            let src = open.repeat(10);
            assert!(depth_ok(&src, 30), "{open}");
            assert!(!depth_ok(&src, 5), "{open}");
        }
        assert!(!depth_ok(&"`(".repeat(10), 5));
    }

    #[test]
    fn closed_constructs_do_not_accumulate() {
        let src = "(a); { b; }; $(c); if x; then y; fi; ".repeat(1000);
        assert!(depth_ok(&src, 3));
        let case = "case x in a) b;; c) d;; esac; ".repeat(100);
        assert!(depth_ok(&case, 2));
    }

    #[test]
    fn case_pattern_paren_does_not_pop_outer_frames() {
        // Each level really nests a subshell and a case; the `a)` must not undo the `(`.
        let src = "( case x in a) ".repeat(10);
        assert!(!depth_ok(&src, 15));
    }

    #[test]
    fn quotes_and_comments_hide_openers() {
        assert!(depth_ok(&"'((((('".repeat(100), 1));
        assert!(depth_ok(&format!("# {}\necho", "(".repeat(100)), 1));
        assert!(depth_ok(&"\\(".repeat(100), 1));
        assert!(depth_ok(&"$'(\\''".repeat(100), 1));
    }

    #[test]
    fn here_doc_bodies_are_skipped() {
        let body = "((((( $( { if\n".repeat(50);
        let src = format!("cat <<'EOF'\n{body}EOF\necho done\n");
        assert!(depth_ok(&src, 1));
        let tabbed = format!("cat <<-EOF\n{body}\tEOF\necho done\n");
        assert!(depth_ok(&tabbed, 1));
        let stats = scan(
            &format!("cat <<E\n{}E\n", "a b c\n".repeat(1000)),
            5,
            usize::MAX,
        )
        .unwrap();
        assert!(stats.tokens < 10, "{stats:?}");
    }

    #[test]
    fn spaced_double_paren_is_refused() {
        for src in [
            "( ( rm ) )",
            "$( (rm) )",
            "echo \"$(\n(rm))\"",
            "cat <( (rm) )",
        ] {
            assert_eq!(
                scan(src, 64, 100),
                Err(ScanError::SpacedDoubleParen),
                "{src}"
            );
        }
        for src in ["((x++))", "$((1 + 2))", "(a) (b)", "'( ('"] {
            assert_ne!(
                scan(src, 64, 100),
                Err(ScanError::SpacedDoubleParen),
                "{src}"
            );
        }
    }

    #[test]
    fn counts_tokens() {
        let stats = scan("a b | c && d; e", 8, 100).unwrap();
        assert_eq!(stats.tokens, 9);
        // Expansions and escapes cost word pieces; quoted text does not.
        assert_eq!(scan("a$x${y}\\z", 8, 100).unwrap().tokens, 4);
        assert_eq!(scan("\"$x\\\"\"", 8, 100).unwrap().tokens, 3);
        assert_eq!(scan("'$x\\'", 8, 100).unwrap().tokens, 1);
        assert_eq!(
            scan(&"a ".repeat(101), 8, 100),
            Err(ScanError::TooManyTokens { limit: 100 })
        );
    }
}

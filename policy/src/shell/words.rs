//! Word canonicalization: quote removal as the shell performs it, with every
//! expansion whose value is unknown kept in source form and flagged.

use brush_parser::ParserOptions;
use brush_parser::word::{
    self, Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource,
};
use thiserror::Error;

use super::Word;
use super::scope::Known;

/// Why a word could not be canonicalized. The message is the hold reason.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum WordError {
    #[error("cannot parse shell word `{0}`")]
    Unparsable(String),
}

/// A canonical word plus the command texts of the substitutions inside it,
/// which the shell would run before the command itself.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Canon {
    pub word: Word,
    pub substitutions: Vec<String>,
    /// Holds an expansion that may assign a variable (`${x:=v}`, `$((x=1))`).
    pub assigns: bool,
}

/// Canonicalizes one raw shell word (as the tokenizer delivered it); an
/// expansion of a variable in `known` is its literal value.
pub fn canonicalize(raw: &str, options: &ParserOptions, known: &Known) -> Result<Canon, WordError> {
    let pieces =
        guarded(|| word::parse(raw, options)).ok_or_else(|| WordError::Unparsable(excerpt(raw)))?;
    let mut out = Canon::default();
    for p in &pieces {
        append_piece(raw, p, false, known, &mut out);
    }
    if !out.word.dynamic && is_brace_expansion(&out.word.text, &pieces) {
        // `{rm,-rf,/}` becomes several words; its value is not this one text.
        out.word.dynamic = true;
    }
    Ok(out)
}

/// Command texts of the substitutions in `text` read as a here-document body,
/// an arithmetic expression or a parameter expansion operand.
pub fn substitutions_in(text: &str, options: &ParserOptions) -> Result<Vec<String>, WordError> {
    if !has_substitution_marker(text) {
        return Ok(Vec::new());
    }
    let pieces = guarded(|| word::parse_heredoc(text, options))
        .ok_or_else(|| WordError::Unparsable(excerpt(text)))?;
    let mut out = Canon::default();
    for p in &pieces {
        append_piece(text, p, true, &Known::default(), &mut out);
    }
    Ok(out.substitutions)
}

/// Runs a parser call, turning both its error and a panic inside it into `None`.
pub fn guarded<T, E>(f: impl FnOnce() -> Result<T, E>) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .ok()?
        .ok()
}

/// `s` as one shell word: as it is when it holds nothing the shell reads,
/// else single-quoted.
pub fn quoted(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^~".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// At most 60 characters of `s`, for hold reasons.
pub fn excerpt(s: &str) -> String {
    const MAX: usize = 60;
    let mut chars = s.chars();
    let head: String = chars.by_ref().take(MAX).collect();
    let head = head.replace('\n', " ");
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

fn has_substitution_marker(s: &str) -> bool {
    s.contains("$(") || s.contains('`')
}

/// Whether unquoted text is a pathname pattern. A `[` only opens a bracket
/// expression when a `]` follows, so the `[` of `[ -f x ]` is a plain word.
fn is_glob_pattern(t: &str) -> bool {
    t.contains(['*', '?']) || t.find('[').is_some_and(|i| t[i + 1..].contains(']'))
}

fn append_piece(raw: &str, p: &WordPieceWithSource, quoted: bool, known: &Known, out: &mut Canon) {
    let source = raw.get(p.start_index..p.end_index).unwrap_or_default();
    match &p.piece {
        WordPiece::Text(t) => {
            if !quoted && is_glob_pattern(t) {
                out.word.glob = true;
            }
            out.word.text.push_str(t);
        }
        WordPiece::SingleQuotedText(t) => out.word.text.push_str(t),
        WordPiece::AnsiCQuotedText(t) => out.word.text.push_str(&decode_ansi_c(t)),
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            for q in inner {
                append_piece(raw, q, true, known, out);
            }
        }
        WordPiece::TildeExpansion(TildeExpr::Home) => out.word.text.push('~'),
        WordPiece::TildeExpansion(TildeExpr::UserHome(user)) => {
            out.word.text.push('~');
            out.word.text.push_str(user);
        }
        WordPiece::TildeExpansion(_) => dynamic(source, out),
        WordPiece::ParameterExpansion(expr) => {
            if let Some(value) = known_value(expr, known) {
                out.word.text.push_str(value);
                return;
            }
            out.assigns |= matches!(expr, ParameterExpr::AssignDefaultValues { .. });
            if let Some(home) = home_spelling(expr) {
                out.word.text.push_str(home);
                return;
            }
            dynamic(source, out);
            // `${x:-$(cmd)}`: the operand may itself run commands.
            if has_substitution_marker(source)
                && let Ok(found) = substitutions_in(
                    source.get(1..).unwrap_or_default(),
                    &ParserOptions::default(),
                )
            {
                out.substitutions.extend(found);
            }
        }
        WordPiece::CommandSubstitution(cmd) | WordPiece::BackquotedCommandSubstitution(cmd) => {
            dynamic(source, out);
            out.substitutions.push(cmd.clone());
        }
        WordPiece::ArithmeticExpression(expr) => {
            dynamic(source, out);
            out.assigns = true;
            if let Ok(found) = substitutions_in(&expr.value, &ParserOptions::default()) {
                out.substitutions.extend(found);
            }
        }
        WordPiece::EscapeSequence(seq) => {
            // `\x` → `x`; a backslash-newline is a line continuation and vanishes.
            let mut chars = seq.chars();
            chars.next();
            out.word.text.extend(chars.filter(|&c| c != '\n'));
        }
    }
}

/// The literal a plain `$name` / `${name}` stands for, when `known` has it.
fn known_value<'k>(expr: &ParameterExpr, known: &'k Known) -> Option<&'k str> {
    match expr {
        ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } => known.get(name),
        _ => None,
    }
}

/// The text an expansion of `HOME` stands for, when its value is known:
/// `$HOME`, a default, assigned or required value (`${HOME:-x}`,
/// `${HOME:?}`: the home is always set), trailing slashes removed
/// (`${HOME%/}`), and the last component removed (`${HOME%/*}`: its parent).
fn home_spelling(expr: &ParameterExpr) -> Option<&'static str> {
    let is_home = |p: &Parameter, indirect: bool| {
        !indirect && matches!(p, Parameter::Named(name) if name == "HOME")
    };
    match expr {
        ParameterExpr::Parameter {
            parameter,
            indirect,
        }
        | ParameterExpr::UseDefaultValues {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::AssignDefaultValues {
            parameter,
            indirect,
            ..
        }
        | ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            ..
        } if is_home(parameter, *indirect) => Some("~"),
        ParameterExpr::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern,
        } if is_home(parameter, *indirect) => match pattern.as_deref() {
            None => Some("~"),
            Some(p) if p.chars().all(|c| c == '/') => Some("~"),
            Some("/*") => Some("~/.."),
            Some(_) => None,
        },
        _ => None,
    }
}

fn dynamic(source: &str, out: &mut Canon) {
    out.word.dynamic = true;
    out.word.text.push_str(source);
}

/// An unquoted `{a,b}` or `{1..3}` in the word's literal text.
fn is_brace_expansion(text: &str, pieces: &[WordPieceWithSource]) -> bool {
    text.contains('{')
        && text.contains('}')
        && pieces.iter().any(|p| match &p.piece {
            WordPiece::Text(t) => t.find('{').zip(t.rfind('}')).is_some_and(|(a, b)| {
                a < b && {
                    let inner = &t[a + 1..b];
                    inner.contains(',') || inner.contains("..")
                }
            }),
            _ => false,
        })
}

/// Decodes the body of a `$'…'` string as bash does.
pub fn decode_ansi_c(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                push_code(&mut out, v & 0xff);
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v = 0u32;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            v = v.wrapping_mul(16).wrapping_add(d);
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    push_code(&mut out, v);
                }
            }
            'c' => match chars.next() {
                Some(k) => push_code(&mut out, u32::from(k) & 0x1f),
                None => out.push_str("\\c"),
            },
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

fn push_code(out: &mut String, v: u32) {
    out.push(char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(raw: &str) -> Canon {
        canonicalize(raw, &ParserOptions::default(), &Known::default()).unwrap()
    }

    fn text(raw: &str) -> String {
        canon(raw).word.text
    }

    #[test]
    fn quote_removal() {
        for raw in [
            r"r\m",
            "r''m",
            "\"rm\"",
            "'rm'",
            "$'rm'",
            "r\"\"m",
            r"$'\x72m'",
            r"$'\162m'",
            r"$'\u0072m'",
        ] {
            let c = canon(raw);
            assert_eq!(c.word.text, "rm", "{raw}");
            assert!(!c.word.dynamic && !c.word.glob, "{raw}");
        }
    }

    #[test]
    fn home_forms_become_tilde() {
        assert_eq!(text("~"), "~");
        assert_eq!(text("~/x"), "~/x");
        assert_eq!(text("$HOME/.ssh"), "~/.ssh");
        assert_eq!(text("${HOME}/.ssh"), "~/.ssh");
        assert_eq!(text("\"$HOME\"/.bashrc"), "~/.bashrc");
        assert_eq!(text("~root/x"), "~root/x");
        assert!(!canon("$HOME").word.dynamic);
        for raw in [
            "${HOME%/}",
            "${HOME%%/}",
            "${HOME:-/tmp}",
            "${HOME:?}",
            "\"${HOME%/}\"/",
        ] {
            assert_eq!(text(raw).trim_end_matches('/'), "~", "{raw}");
            assert!(!canon(raw).word.dynamic, "{raw}");
        }
        assert_eq!(text("${HOME%/*}"), "~/..");
        assert!(canon("${HOME%/.ssh}").word.dynamic);
        assert!(canon("${HOME+x}").word.dynamic);
    }

    #[test]
    fn expansions_are_dynamic_with_source_kept() {
        for raw in [
            "$CMD", "${X}", "$(pwd)", "`pwd`", "$((1+2))", "a${IFS}b", "\"$@\"", "${x:-y}",
        ] {
            assert!(canon(raw).word.dynamic, "{raw}");
        }
        assert_eq!(text("$DIR/x"), "$DIR/x");
        assert_eq!(text("a${IFS}b"), "a${IFS}b");
        assert_eq!(text("\"$(pwd)\""), "$(pwd)");
    }

    #[test]
    fn substitutions_are_collected() {
        assert_eq!(canon("$(echo rm)").substitutions, vec!["echo rm"]);
        assert_eq!(canon("`which rm`").substitutions, vec!["which rm"]);
        assert_eq!(canon("\"a$(id)b\"").substitutions, vec!["id"]);
        assert_eq!(canon("${x:-$(rm -rf /)}").substitutions, vec!["rm -rf /"]);
        assert_eq!(canon("$(( $(id -u) + 1 ))").substitutions, vec!["id -u"]);
        assert!(canon("'$(rm)'").substitutions.is_empty());
        assert!(canon("\\$(rm)").substitutions.is_empty());
    }

    #[test]
    fn globs_only_when_unquoted() {
        assert!(canon("*.txt").word.glob);
        assert!(canon("/bin/r?").word.glob);
        assert!(canon("[ab]").word.glob);
        assert!(!canon("[").word.glob, "the test command is not a pattern");
        assert!(canon("/bin/[mr]m").word.glob);
        assert!(!canon("'*.txt'").word.glob);
        assert!(!canon("\"a?\"").word.glob);
        assert!(!canon(r"\*").word.glob);
    }

    #[test]
    fn brace_expansion_is_dynamic() {
        assert!(canon("{rm,-rf,/}").word.dynamic);
        assert!(canon("x{1..3}").word.dynamic);
        assert!(!canon("'{a,b}'").word.dynamic);
        assert!(!canon("{}").word.dynamic);
    }

    #[test]
    fn here_doc_substitutions() {
        let found =
            substitutions_in("hello $(whoami)\n`id` \\$(no)\n", &ParserOptions::default()).unwrap();
        assert_eq!(found, vec!["whoami", "id"]);
        assert!(
            substitutions_in("plain text\n", &ParserOptions::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn ansi_c_decoding() {
        assert_eq!(decode_ansi_c(r"a\tb\n"), "a\tb\n");
        assert_eq!(decode_ansi_c(r"\x41\101\u00e9\'"), "AAé'");
        assert_eq!(decode_ansi_c(r"\q\x"), r"\q\x");
        assert_eq!(decode_ansi_c(r"\cA"), "\u{1}");
        assert_eq!(decode_ansi_c("end\\"), "end\\");
    }

    #[test]
    fn excerpt_is_bounded() {
        assert_eq!(excerpt("short\nx"), "short x");
        assert_eq!(excerpt(&"é".repeat(100)).chars().count(), 61);
    }
}

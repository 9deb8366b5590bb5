//! Just enough shell lexing for the hook adapters and praxisd: the words of
//! a command with quotes removed, to see whether it already calls
//! `praxis-run`, or calls the operator CLI or carries an approval token.
//! Judging is the policy's job; this only finds words.

/// Characters that end a word and make a command more than one simple command.
const OPERATORS: &[char] = &[';', '|', '&', '<', '>', '(', ')', '`', '\n'];

fn end(word: &mut String, in_word: &mut bool, words: &mut Vec<String>) {
    if *in_word {
        words.push(std::mem::take(word));
        *in_word = false;
    }
}

/// The words of `text`, quotes and backslashes removed, and whether it is one
/// simple command of literal words (no operators, no expansions).
pub fn split(text: &str) -> (Vec<String>, bool) {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut simple = true;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                word.push(n);
                            }
                        }
                        '$' | '`' => {
                            simple = false;
                            word.push(q);
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            '$' | '*' | '?' | '[' | '{' | '~' => {
                simple = false;
                in_word = true;
                word.push(c);
            }
            c if c.is_whitespace() && c != '\n' => end(&mut word, &mut in_word, &mut words),
            c if OPERATORS.contains(&c) => {
                simple = false;
                end(&mut word, &mut in_word, &mut words);
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end(&mut word, &mut in_word, &mut words);
    (words, simple)
}

/// The last path component of a word (`/usr/bin/praxis` → `praxis`).
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Quotes `word` for bash: single quotes, with embedded ones spliced in.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_quotes_like_the_shell() {
        let (w, simple) = split(r#"p''raxis "approve" r\m 'a b'"#);
        assert_eq!(w, ["praxis", "approve", "rm", "a b"]);
        assert!(simple);
    }

    #[test]
    fn operators_and_expansions_are_not_simple() {
        for text in [
            "ls; praxis approve x",
            "a | b",
            "echo $(x)",
            "echo \"$HOME\"",
            "a && b",
        ] {
            assert!(!split(text).1, "{text}");
        }
        let (w, _) = split("ls;praxis approve x");
        assert_eq!(w, ["ls", "praxis", "approve", "x"]);
    }

    #[test]
    fn quoting_round_trips_through_split() {
        for text in ["it's", "a b", "$(rm -rf /)", "'\"'", ""] {
            assert_eq!(split(&quote(text)), (vec![text.to_owned()], true), "{text}");
        }
    }
}

//! Tests of the redactor against the shipped rules.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

use super::*;

fn config() -> RedactConfig {
    builtin_config().expect("the patterns' [redact] section parses")
}

fn redactor() -> Redactor {
    Redactor::new(&config()).expect("shipped rules load and pass their examples")
}

fn redact(r: &Redactor, text: &str) -> String {
    r.redact_str(text).into_owned()
}

#[test]
fn every_rule_catches_its_true_positives_alone() {
    let full = config();
    for rule in &full.rules {
        let single = RedactConfig {
            rules: vec![rule.clone()],
            ..full.clone()
        };
        let r = Redactor::new(&single).unwrap();
        for example in &rule.examples.true_positives {
            let found = r.matches(example.as_bytes());
            assert!(!found.is_empty(), "{}: missed {example:?}", rule.id);
            assert!(found.iter().all(|f| f.rule_id == rule.id));
            let out = redact(&r, example);
            assert!(
                out.contains(&format!("[REDACTED:{}]", rule.id)),
                "{}: {out}",
                rule.id
            );
            for f in &found {
                let secret = &example[f.range.clone()];
                assert!(
                    !out.contains(secret),
                    "{}: {secret:?} survives in {out:?}",
                    rule.id
                );
            }
        }
        for example in &rule.examples.false_positives {
            assert_eq!(redact(&r, example), *example, "{}: false positive", rule.id);
        }
    }
}

#[test]
fn shipped_rules_cover_the_required_families() {
    let ids: Vec<String> = config().rules.into_iter().map(|r| r.id).collect();
    for id in [
        "aws-access-key-id",
        "aws-secret-access-key",
        "github-token",
        "github-fine-grained-pat",
        "gitlab-token",
        "slack-token",
        "slack-webhook",
        "stripe-key",
        "openai-key",
        "anthropic-key",
        "google-api-key",
        "gcp-service-account-key",
        "private-key",
        "jwt",
        "npm-token",
        "pypi-token",
        "twilio",
        "sendgrid-key",
        "azure-storage-key",
        "authorization-bearer",
        "authorization-basic",
        "secret-cli-option",
        "secret-assignment",
        "url-userinfo",
    ] {
        assert!(ids.iter().any(|i| i == id), "missing rule {id}");
    }
}

fn with_rule_edit(edit: impl FnOnce(&mut RuleConfig)) -> Result<Redactor, RedactError> {
    let mut c = config();
    let rule = c.rules.iter_mut().find(|r| r.id == "github-token").unwrap();
    edit(rule);
    Redactor::new(&c)
}

#[test]
fn a_missed_true_positive_fails_the_load_naming_rule_and_example() {
    let err =
        with_rule_edit(|r| r.examples.true_positives.push("ghp_tooShort".into())).unwrap_err();
    let RedactError::MissedTruePositive { rule, example } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (rule.as_str(), example.as_str()),
        ("github-token", "ghp_tooShort")
    );
    assert!(err.to_string().contains("github-token"));
}

#[test]
fn a_caught_false_positive_fails_the_load() {
    let example = "ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp";
    let err = with_rule_edit(|r| r.examples.false_positives.push(example.into())).unwrap_err();
    assert!(
        matches!(&err, RedactError::CaughtFalsePositive { rule, example: e } if rule == "github-token" && e == example)
    );
}

#[test]
fn a_keyword_that_does_not_occur_in_matches_is_caught_by_the_examples() {
    // The prefilter runs during the example check, so a wrong keyword fails.
    let err = with_rule_edit(|r| r.keywords = vec!["ghx_".into()]).unwrap_err();
    assert!(
        matches!(err, RedactError::MissedTruePositive { .. }),
        "{err}"
    );
}

#[test]
fn malformed_rules_are_rejected() {
    assert!(matches!(
        with_rule_edit(|r| r.keywords.clear()),
        Err(RedactError::NoKeywords { .. })
    ));
    assert!(matches!(
        with_rule_edit(|r| r.regex = "(".into()),
        Err(RedactError::Regex { .. })
    ));
    assert!(matches!(
        with_rule_edit(|r| r.entropy = Some(9.0)),
        Err(RedactError::BadEntropy { .. })
    ));
    assert!(matches!(
        with_rule_edit(|r| r.id = "bad id]".into()),
        Err(RedactError::BadRuleId { .. })
    ));
    assert!(matches!(
        with_rule_edit(|r| r.examples.false_positives.clear()),
        Err(RedactError::MissingExamples { .. })
    ));
    let mut c = config();
    c.rules.push(c.rules[0].clone());
    assert!(matches!(
        Redactor::new(&c),
        Err(RedactError::DuplicateRule { .. })
    ));
    c = config();
    c.stream_window = 10;
    assert!(matches!(
        Redactor::new(&c),
        Err(RedactError::WindowTooSmall { .. })
    ));
}

#[test]
fn unknown_keys_are_rejected() {
    let rule = "[[rule]]\nid = \"jwt\"\ndescription = \"d\"\nkeywords = [\"eyj\"]\nregex = 'eyJ'\n\
                examples = { true_positives = [\"eyJ\"], false_positives = [\"x\"] }\n";
    assert!(RedactConfig::from_toml(rule).is_ok());
    let text = format!("{rule}severity = \"high\"\n");
    assert!(matches!(
        RedactConfig::from_toml(&text),
        Err(RedactError::Parse(_))
    ));
    assert!(RedactConfig::from_toml("window = 5").is_err());
}

#[test]
fn only_the_value_of_an_assignment_is_masked() {
    let r = redactor();
    assert_eq!(
        redact(&r, "DB_PASSWORD=hunter2 ./run"),
        "DB_PASSWORD=[REDACTED:secret-assignment] ./run"
    );
    assert_eq!(
        redact(&r, r#"{"user": "admin", "password": "s3cr3t!"}"#),
        r#"{"user": "admin", "password": "[REDACTED:secret-assignment]"}"#
    );
    assert_eq!(
        redact(&r, "mysql --password=hunter2 db"),
        "mysql --password=[REDACTED:secret-cli-option] db"
    );
    assert_eq!(
        redact(&r, "vault login --token s.8f2KxQ7vLm3Pz9Rt"),
        "vault login --token [REDACTED:secret-cli-option]"
    );
    assert_eq!(
        redact(&r, "postgres://app:s3cr3tP4ss@db:5432/prod"),
        "postgres://app:[REDACTED:url-userinfo]@db:5432/prod"
    );
    assert_eq!(
        redact(
            &r,
            "Authorization: Bearer 6w8ZniqT3Ul4_ffqkOkg_Wrdioyq-KvCiSGuPJ6s\n"
        ),
        "Authorization: Bearer [REDACTED:authorization-bearer]\n"
    );
}

#[test]
fn overlapping_rules_leave_no_fragment() {
    let r = redactor();
    let text = "git remote add origin https://oauth2:glpat-z9w3QlY7Zkuvqdt7s8St@gitlab.com/g/r.git";
    let out = redact(&r, text);
    assert!(!out.contains("z9w3QlY7"), "{out}");
    assert_eq!(out.matches("[REDACTED:").count(), 1, "{out}");
}

/// Ordinary developer output that must come through untouched.
const DEV_OUTPUT: &[&str] = &[
    "commit 3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e",
    "Author: Jane Doe <jane@example.org>",
    "Merge: 1a2b3c4 5d6e7f8",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  target/release/app",
    "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "request_id=123e4567-e89b-12d3-a456-426614174000 status=200",
    r#"checksum = "a1f5a8d3c0b6f6c3e6d8b5a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f0e1""#,
    r#""integrity": "sha512-Qm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYQ==","#,
    r#""resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz","#,
    "   Compiling tokenizers v0.15.2",
    "   Compiling proc-macro2 v1.0.86",
    "warning: unused variable: `token`",
    "error[E0308]: mismatched types: expected `&str`, found `Token`",
    "    Finished `release` profile [optimized] target(s) in 42.17s",
    "added 1342 packages, and audited 1343 packages in 12s",
    "npm warn deprecated inflight@1.0.6: This module is not supported",
    "To github.com:owner/repo.git\n   1a2b3c4..5d6e7f8  main -> main",
    "PWD=/home/dev/project",
    "SSH_AUTH_SOCK=/run/user/1000/keyring/ssh",
    "https://docs.rs/regex/latest/regex/",
    "let token = lexer.next_token()?;",
    "passwordless sudo is configured",
    "The secret to fast builds is caching.",
    "max_tokens: 4096",
];

#[test]
fn ordinary_developer_output_is_untouched() {
    let r = redactor();
    for line in DEV_OUTPUT {
        assert_eq!(
            redact(&r, line),
            *line,
            "false positive: {:?}",
            r.matches(line.as_bytes())
        );
    }
}

#[test]
fn base64_of_binary_data_is_untouched() {
    // Pseudo-random bytes (an image, say) encoded as a data URL.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let bytes: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let text = format!(
        "<img src=\"data:image/png;base64,{}\">",
        STANDARD.encode(&bytes)
    );
    let r = redactor();
    let found = r.matches(text.as_bytes());
    assert!(found.is_empty(), "unexpected findings: {found:?}");
}

#[test]
fn redaction_is_idempotent() {
    let r = redactor();
    let token = b"tok-\x01secret/value+42";
    let r = r.with_known_values(&[("deploy", token)]).unwrap();
    let mut texts: Vec<String> = config()
        .rules
        .iter()
        .flat_map(|c| c.examples.true_positives.clone())
        .collect();
    texts.push(format!(
        "a {} b {}",
        STANDARD.encode(token),
        hex::encode(token)
    ));
    for text in texts {
        let once = redact(&r, &text);
        assert_ne!(once, text);
        assert_eq!(redact(&r, &once), once, "not stable: {text:?}");
    }
}

#[test]
fn invalid_utf8_does_not_panic_and_keeps_bytes() {
    let r = redactor();
    let mut input = b"\xff\xfe garbage \xc3 DB_PASSWORD=hunter2 \xe2\x82 end".to_vec();
    let out = r.redact_bytes(&input).into_owned();
    assert!(out.starts_with(b"\xff\xfe garbage \xc3 DB_PASSWORD=[REDACTED:secret-assignment]"));
    assert!(out.ends_with(b" \xe2\x82 end"));
    input.extend((0..=255u8).cycle().take(4096));
    let _ = r.redact_bytes(&input);
    let mut stream = r.stream();
    let mut streamed = stream.push(&input);
    streamed.extend(stream.finish());
    assert_eq!(streamed, r.redact_bytes(&input).into_owned());
}

#[test]
fn unicode_text_around_secrets_is_preserved() {
    let r = redactor();
    assert_eq!(
        redact(&r, "héllo ✓ TOKEN=abc123déf ✓"),
        "héllo ✓ TOKEN=[REDACTED:secret-assignment] ✓"
    );
}

#[test]
fn nothing_found_borrows() {
    let r = redactor();
    assert!(matches!(
        r.redact_str("cargo build --release"),
        Cow::Borrowed(_)
    ));
    assert!(matches!(r.redact_bytes(b"ls -la"), Cow::Borrowed(_)));
}

#[test]
fn matches_reports_rule_and_range() {
    let r = redactor();
    let text = "x GITHUB=ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp y";
    let found = r.matches(text.as_bytes());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule_id, "github-token");
    assert_eq!(
        &text[found[0].range.clone()],
        "ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp"
    );
}

// ---- known values ----

const TOKEN: &str = "Zq3-vT9_kLm2Np8Rw/x+Y7bC";

fn known() -> Redactor {
    redactor()
        .with_known_values(&[("deploy_token", TOKEN.as_bytes()), ("tiny", b"abc")])
        .unwrap()
}

/// What `printf '<prefix>%s<suffix>' "$TOKEN" | base64` prints, unwrapped.
fn shell_base64(prefix: &str, suffix: &str) -> String {
    STANDARD.encode(format!("{prefix}{TOKEN}{suffix}"))
}

#[test]
fn known_value_is_masked_in_every_encoding() {
    let r = known();
    let forms = [
        TOKEN.to_owned(),
        hex::encode(TOKEN),
        hex::encode_upper(TOKEN),
        STANDARD.encode(TOKEN),
        URL_SAFE_NO_PAD.encode(TOKEN),
        "Zq3-vT9_kLm2Np8Rw%2Fx%2BY7bC".to_owned(),
        "Zq3-vT9_kLm2Np8Rw%2fx%2bY7bC".to_owned(),
    ];
    for form in forms {
        let text = format!("value: {form} (end)");
        assert_eq!(
            redact(&r, &text),
            "value: [REDACTED:deploy_token] (end)",
            "form {form}"
        );
    }
}

#[test]
fn known_value_inside_a_longer_base64_stream_is_masked_at_every_alignment() {
    let r = known();
    for prefix in ["", "x", "xy", "xyz", "export T="] {
        for suffix in ["", "\n", "!\n", " tail of the stream"] {
            let encoded = shell_base64(prefix, suffix);
            let out = redact(&r, &encoded);
            assert!(
                out.contains("[REDACTED:deploy_token]"),
                "prefix {prefix:?} suffix {suffix:?}: {out}"
            );
            // At most 2 characters of the value's own encoding may survive at
            // each edge (they also depend on the neighbouring bytes).
            let leftover = out.replace("[REDACTED:deploy_token]", "");
            assert!(
                leftover.len() <= shell_base64(prefix, suffix).len() - 28,
                "{out}"
            );
        }
    }
}

#[test]
fn known_value_wrapped_by_base64_is_masked() {
    let long = "L0ng-Secret-".repeat(8);
    let r = redactor()
        .with_known_values(&[("long", long.as_bytes())])
        .unwrap();
    let encoded = STANDARD.encode(&long);
    let wrapped = format!("{}\n{}\n", &encoded[..76], &encoded[76..]);
    assert_eq!(redact(&r, &wrapped), "[REDACTED:long]\n");
}

#[test]
fn short_known_values_are_ignored_and_names_sanitized() {
    let r = known();
    assert_eq!(redact(&r, "abc abc"), "abc abc");
    let r = redactor()
        .with_known_values(&[("bad name]\n", b"s3cret-v4lue")])
        .unwrap();
    assert_eq!(redact(&r, "x s3cret-v4lue"), "x [REDACTED:bad_name__]");
    let none = redactor().with_known_values(&[("tiny", b"ab")]).unwrap();
    assert_eq!(none.stream_window(), DEFAULT_STREAM_WINDOW);
}

#[test]
fn known_values_replace_previous_ones() {
    let first = redactor()
        .with_known_values(&[("a", b"first-secret")])
        .unwrap();
    let second = first.with_known_values(&[("b", b"second-secret")]).unwrap();
    assert_eq!(
        redact(&second, "first-secret second-secret"),
        "first-secret [REDACTED:b]"
    );
}

// ---- streaming ----

fn small_window_redactor() -> Redactor {
    let mut c = config();
    c.stream_window = 256;
    Redactor::new(&c)
        .unwrap()
        .with_known_values(&[("deploy_token", TOKEN.as_bytes())])
        .unwrap()
}

fn stream_samples() -> Vec<Vec<u8>> {
    let filler =
        "   Compiling serde v1.0.210\n   Compiling regex v1.11.0\nwarning: unused import\n";
    let secrets = [
        "export GITHUB_TOKEN=ghp_8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVp\n".to_owned(),
        format!("echo {TOKEN} | base64 -> {}\n", shell_base64("x", "\n")),
        "-----BEGIN RSA PRIVATE KEY-----\n5+7nYV7zXzDkm0guFcrnUAcgHhJhew/tp+Fkd5b/AivqjtAqgqF1kw8jN803lMUi\n-----END RSA PRIVATE KEY-----\n".to_owned(),
        "curl -H 'Authorization: Bearer 6w8ZniqT3Ul4_ffqkOkg_Wrdioyq-KvCiSGuPJ6s' https://x/\n".to_owned(),
    ];
    let mut samples = Vec::new();
    for (i, secret) in secrets.iter().enumerate() {
        let mut s = filler.repeat(i + 4);
        s.push_str(secret);
        s.push_str(&filler.repeat(5 - i));
        samples.push(s.into_bytes());
    }
    // Secrets back to back with no newline anywhere near the window edge.
    let mut dense = String::new();
    for _ in 0..8 {
        dense.push_str(&format!(
            "k={TOKEN} DB_PASSWORD=hunter2 padding-padding-padding-padding "
        ));
    }
    samples.push(dense.into_bytes());
    samples
}

fn stream_through(r: &Redactor, pieces: &[&[u8]]) -> Vec<u8> {
    let mut s = r.stream();
    let mut out = Vec::new();
    for piece in pieces {
        out.extend(s.push(piece));
    }
    out.extend(s.finish());
    out
}

#[test]
fn stream_equals_whole_redaction_at_every_split_point() {
    let r = small_window_redactor();
    for input in stream_samples() {
        assert!(
            input.len() > 2 * r.stream_window(),
            "sample must exceed the window"
        );
        let whole = r.redact_bytes(&input).into_owned();
        assert_ne!(whole, input);
        for split in 0..=input.len() {
            let (a, b) = input.split_at(split);
            let got = stream_through(&r, &[a, b]);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&whole),
                "split at {split}"
            );
        }
    }
}

#[test]
fn stream_equals_whole_redaction_with_small_chunks() {
    let r = small_window_redactor();
    for input in stream_samples() {
        let whole = r.redact_bytes(&input).into_owned();
        for size in [1, 3, 7, 64, 255, 4096] {
            for offset in 0..size.min(8) {
                let (head, rest) = input.split_at(offset.min(input.len()));
                let mut pieces: Vec<&[u8]> = vec![head];
                pieces.extend(rest.chunks(size));
                assert_eq!(
                    stream_through(&r, &pieces),
                    whole,
                    "chunk size {size}, offset {offset}"
                );
            }
        }
    }
}

#[test]
fn stream_memory_is_bounded() {
    let r = small_window_redactor();
    let mut s = r.stream();
    let mut emitted = 0;
    // One endless run of secret-looking characters: a single ever-growing
    // match that would otherwise be held back forever.
    let chunk = [b'a'; 100];
    let mut total = s.push(b"DB_PASSWORD=").len();
    for _ in 0..200 {
        emitted += s.push(&chunk).len();
        assert!(
            s.held() <= 4 * r.stream_window() + chunk.len(),
            "{}",
            s.held()
        );
    }
    total += emitted + s.finish().len();
    assert!(emitted > 0);
    assert!(total > 0);
}

#[test]
fn flush_emits_complete_lines_but_holds_a_match_that_may_grow() {
    let r = small_window_redactor();
    let mut s = r.stream();
    assert!(
        s.push(b"building...\nDB_PASSWORD=hunter2\npartial li")
            .is_empty()
    );
    // The password line is the last complete line: held, it might go on
    // (with the newline before it, which its match uses as left context).
    assert_eq!(s.flush(), b"building...");
    assert!(s.flush().is_empty());
    assert!(s.push(b"ne\n").is_empty());
    assert_eq!(
        s.flush(),
        b"\nDB_PASSWORD=[REDACTED:secret-assignment]\npartial line\n"
    );
    assert_eq!(s.held(), 0);
    let key_head = b"-----BEGIN RSA PRIVATE KEY-----\n5+7nYV7zXzDkm0guFcrnUAcgHhJhew/tp+Fkd5b/AivqjtAqgqF1kw8jN803lMUi\n";
    assert!(s.push(key_head).is_empty());
    assert!(
        s.flush().is_empty(),
        "a key block being printed must stay held"
    );
    assert!(
        s.push(b"B8PCBiQpLjs=\n-----END RSA PRIVATE KEY-----\n")
            .is_empty()
    );
    assert!(s.flush().is_empty());
    assert_eq!(s.push(b"done\n"), b"");
    assert_eq!(s.flush(), b"[REDACTED:private-key]\ndone\n");
    assert!(s.finish().is_empty());
}

#[test]
fn stream_output_leaves_in_batches_and_is_complete() {
    let r = small_window_redactor();
    let line = b"   Compiling serde v1.0.210\n";
    let mut s = r.stream();
    let mut out = Vec::new();
    let mut pushes_with_output = 0;
    for _ in 0..200 {
        let got = s.push(line);
        pushes_with_output += usize::from(!got.is_empty());
        out.extend(got);
        assert!(s.held() < 2 * r.stream_window() + line.len());
    }
    assert!(pushes_with_output > 5, "output must not wait for finish");
    out.extend(s.finish());
    assert_eq!(out, line.repeat(200));
}

/// Ordinary code and config files an agent reads and may write back: in its
/// output they come through byte for byte, while the audit form still masks
/// what the generic rule matches in them.
#[test]
fn ordinary_files_are_not_corrupted_in_the_agents_output() {
    let full = redactor();
    let output = full.for_output();
    let files = [
        // .env.example
        "API_KEY=your-api-key-here\nDB_PASSWORD=changeme\nSESSION_SECRET=dummy-session-secret\n",
        // docker-compose.yml
        "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: example\n      POSTGRES_USER: app\n",
        // settings.py
        "SECRET_KEY = 'django-insecure-placeholder'\nDEBUG = True\n",
        // a test fixture
        "def test_login():\n    login(user='admin', password='test')\n",
        // config.toml
        "[auth]\ntoken = \"${AUTH_TOKEN}\"\napi_key = \"test\"\n",
    ];
    for file in files {
        assert_eq!(output.redact_str(file), file, "changed in output:\n{file}");
    }
    // The audit form keeps the full rule: these are masked there.
    for line in [
        "echo secret=blocked",
        "api_key = \"test\"",
        "token: hunter2hunter2",
    ] {
        assert_ne!(full.redact_str(line), line, "{line}");
        assert_eq!(output.redact_str(line), line, "{line}");
    }
    // A real-looking secret is masked in output too.
    let real = "GITHUB_TOKEN=ghp_9f8e7d6c5b4a3210ZYXWVU\n";
    assert!(output.redact_str(real).contains("[REDACTED:"));
}

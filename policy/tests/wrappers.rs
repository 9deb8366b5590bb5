//! The `[[wrapper]]` and `[git_config]` tables of `patterns.toml` drive the
//! front end of the policy that loads them, and are checked when they load.

use praxis_policy::engine::example_context;
use praxis_policy::{BUILTIN_PATTERNS, CommandText, Policy, Request, Source};

fn load(text: &str) -> Result<Policy, String> {
    Policy::load(
        Source {
            name: "patterns.toml",
            text,
        },
        None,
    )
    .map_err(|e| e.to_string())
}

/// The builtin text with `from` replaced once by `to`.
fn edited(from: &str, to: &str) -> String {
    let text = BUILTIN_PATTERNS.replacen(from, to, 1);
    assert_ne!(
        text, BUILTIN_PATTERNS,
        "`{from}` is gone from patterns.toml"
    );
    text
}

fn rule_ids(policy: &Policy, command: &str) -> Vec<String> {
    let request = Request {
        command: CommandText::Shell(command),
        role: "agent",
    };
    let analysis = policy.analyze(&request);
    policy
        .decide(&request, &analysis, &example_context::context())
        .rule_ids
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn the_loaded_wrapper_table_decides_what_is_unwrapped() {
    let builtin = Policy::builtin().unwrap();
    assert!(rule_ids(&builtin, "nohup rm -rf /").contains(&"rm-recursive-root".to_owned()));
    let text = edited(
        "names = [\"builtin\", \"nohup\", \"setsid\"]",
        "names = [\"builtin\", \"setsid\"]",
    )
    .replacen(
        "  { command = \"nohup make test\", runs = \"make test\" },\n",
        "",
        1,
    );
    let without_nohup = load(&text).unwrap();
    let ids = rule_ids(&without_nohup, "nohup rm -rf /");
    assert!(!ids.contains(&"rm-recursive-root".to_owned()), "{ids:?}");
}

#[test]
fn a_failing_wrapper_example_refuses_the_file_at_its_line() {
    let text = edited("\"-u\", \"-g\", \"-C\"", "\"-g\", \"-C\"");
    let err = load(&text).unwrap_err();
    let line = line_of(&text, "sudo -u root rm -rf /srv/x");
    assert!(err.starts_with(&format!("patterns.toml:{line}:")), "{err}");
    assert!(err.contains("wrapper `sudo`"), "{err}");
}

#[test]
fn a_field_its_unwrap_does_not_read_is_refused() {
    let text = edited(
        "names = [\"eval\"]\nunwrap = \"eval\"\n",
        "names = [\"eval\"]\nunwrap = \"eval\"\nskip = 1\n",
    );
    let err = load(&text).unwrap_err();
    assert!(err.contains("`skip` means nothing"), "{err}");
}

#[test]
fn an_option_must_be_written_as_an_option() {
    let text = edited("value_options = [\"-a\"]", "value_options = [\"a\"]");
    let err = load(&text).unwrap_err();
    assert!(err.contains("`a` is not an option"), "{err}");
}

#[test]
fn git_config_lists_are_validated() {
    let err = load(&edited("\"GIT_PAGER\"", "\"git_pager\"")).unwrap_err();
    assert!(err.contains("`git_pager` is not a variable name"), "{err}");
    let err = load(&edited("\"core.quotepath\"", "\"core.quotePath\"")).unwrap_err();
    assert!(err.contains("core.quotePath"), "{err}");
}

#[test]
fn git_config_env_is_what_makes_git_run_commands() {
    let builtin = Policy::builtin().unwrap();
    let command = "GIT_TEMPLATE_DIR=/tmp/t git status";
    assert!(rule_ids(&builtin, command).contains(&"git-config-write".to_owned()));
    let text = edited(
        "\"GIT_PROXY_COMMAND\", \"GIT_TEMPLATE_DIR\",",
        "\"GIT_PROXY_COMMAND\",",
    );
    let ids = rule_ids(&load(&text).unwrap(), command);
    assert!(!ids.contains(&"git-config-write".to_owned()), "{ids:?}");
}

//! The built-in patterns load, their examples hold, and load errors are located.

use praxis_policy::engine::example_context;
use praxis_policy::{BUILTIN_PATTERNS, CommandText, Policy, Request, Source, Verdict};

/// Why `patterns` (an edited copy of the built-in file) fails to load.
fn builtin_load_error(patterns: &str) -> String {
    Policy::load(
        Source {
            name: "patterns.toml",
            text: patterns,
        },
        None,
    )
    .unwrap_err()
    .to_string()
}

/// Why `patterns` fails to load, which must name the line starting `start`.
fn load_error_at_line_of(patterns: &str, start: &str) -> String {
    let line = patterns.lines().position(|l| l.starts_with(start)).unwrap() + 1;
    let err = builtin_load_error(patterns);
    assert!(err.starts_with(&format!("patterns.toml:{line}:")), "{err}");
    err
}

fn judge(policy: &Policy, command: &str, role: &str) -> praxis_policy::Decision {
    let request = Request {
        command: CommandText::Shell(command),
        role,
    };
    let analysis = policy.analyze(&request);
    policy.decide(&request, &analysis, &example_context::context())
}

#[test]
fn builtin_patterns_load_with_their_examples() {
    let policy = Policy::builtin().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(policy.revision().len(), 64);
    assert!(policy.rules().len() > 30);
}

#[test]
fn a_broken_example_is_a_load_error_naming_rule_and_example() {
    let broken = BUILTIN_PATTERNS.replacen(
        "match = [\"shutdown -h now\",",
        "match = [\"ls -la\", \"shutdown -h now\",",
        1,
    );
    assert_ne!(broken, BUILTIN_PATTERNS, "the example to break is gone");
    let err = builtin_load_error(&broken);
    assert!(
        err.contains("host-power") && err.contains("ls -la"),
        "{err}"
    );
    assert!(err.starts_with("patterns.toml:"), "{err}");
}

#[test]
fn an_unknown_key_is_a_load_error_with_its_line() {
    let text = BUILTIN_PATTERNS.replacen(
        "[meta]\nversion = 1\n",
        "[meta]\nversion = 1\nsurprise = true\n",
        1,
    );
    let err = load_error_at_line_of(&text, "surprise");
    assert!(err.contains("surprise"), "{err}");
}

#[test]
fn operator_policy_is_validated_and_changes_the_revision() {
    let builtin = Policy::builtin().unwrap();
    let operator = "[[uid]]\nuid = 1000\nroles = [\"agent\", \"ci\"]\ndefault_role = \"agent\"\n";
    let with_op = Policy::load(
        Source {
            name: "patterns.toml",
            text: BUILTIN_PATTERNS,
        },
        Some(Source {
            name: "policy.toml",
            text: operator,
        }),
    )
    .unwrap();
    assert_ne!(builtin.revision(), with_op.revision());
    let bad_role = "[[uid]]\nuid = 1000\nroles = [\"wizard\"]\ndefault_role = \"wizard\"\n";
    let err = Policy::load(
        Source {
            name: "patterns.toml",
            text: BUILTIN_PATTERNS,
        },
        Some(Source {
            name: "policy.toml",
            text: bad_role,
        }),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("policy.toml:3:") && err.contains("wizard"),
        "{err}"
    );
}

#[test]
fn operator_rules_apply_to_their_roles() {
    let operator = r#"
[roles.deployer]
read_only = "allow"
reversible_write = "allow"
external_side_effect = "allow"
high_risk = "hold"

[[rule]]
id = "deployer-no-kubectl-delete"
decision = "stop"
reason = "deployers never delete cluster objects"
program = ["kubectl"]
subcommand = ["delete"]
roles = ["deployer"]
match = ["kubectl delete pod x"]
not_match = ["kubectl get pods"]
"#;
    let policy = Policy::load(
        Source {
            name: "patterns.toml",
            text: BUILTIN_PATTERNS,
        },
        Some(Source {
            name: "policy.toml",
            text: operator,
        }),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        judge(&policy, "kubectl delete pod x", "deployer").decision,
        Verdict::Stop
    );
    assert_eq!(
        judge(&policy, "kubectl delete pod x", "agent").decision,
        Verdict::Hold
    );
    assert_eq!(
        judge(&policy, "gh pr create --title x", "deployer").decision,
        Verdict::Allow
    );
    assert_eq!(judge(&policy, "ls", "nobody").decision, Verdict::Hold);
}

#[test]
fn displayed_commands_are_redacted() {
    let policy = Policy::builtin().unwrap();
    let token = "ghp_0123456789abcdefABCDEF0123456789abcd";
    let d = judge(
        &policy,
        &format!("curl -H 'Authorization: Bearer {token}' https://api.github.com/user"),
        "agent",
    );
    assert_eq!(d.commands.len(), 1);
    assert!(
        !d.commands[0].command.contains(token),
        "{}",
        d.commands[0].command
    );
    assert!(
        d.commands[0].command.contains("[REDACTED:"),
        "{}",
        d.commands[0].command
    );
}

#[test]
fn path_resolution_holds_planted_and_unknown_programs_only() {
    use praxis_policy::Resolution;
    use std::path::PathBuf;

    let policy = Policy::builtin().unwrap();
    let mut context = example_context::context();
    context.resolution_skipped = false;
    context.resolved.insert("rg".into(), Resolution::NotFound);
    context
        .resolved
        .insert("frobnicate".into(), Resolution::NotFound);
    context.resolved.insert(
        "ls".into(),
        Resolution::Found {
            path: PathBuf::from("/home/dev/project/bin/ls"),
            in_writable_root: true,
        },
    );
    context.resolved.insert(
        "pytest".into(),
        Resolution::VirtualEnvEntry {
            path: PathBuf::from("/home/dev/project/.venv/bin/pytest"),
        },
    );
    context.resolved.insert(
        "cat".into(),
        Resolution::Found {
            path: PathBuf::from("/usr/bin/cat"),
            in_writable_root: false,
        },
    );
    let judge_in = |command: &str| {
        let request = Request {
            command: CommandText::Shell(command),
            role: "agent",
        };
        let analysis = policy.analyze(&request);
        policy.decide(&request, &analysis, &context).decision
    };
    assert_eq!(judge_in("cat README.md"), Verdict::Allow);
    assert_eq!(
        judge_in("rg TODO"),
        Verdict::Allow,
        "not installed: cannot run"
    );
    assert_eq!(judge_in("frobnicate"), Verdict::Hold, "unknown program");
    assert_eq!(judge_in("ls"), Verdict::Hold, "planted binary");
    assert_eq!(
        judge_in("pytest -q"),
        Verdict::Allow,
        "the workspace's virtual environment runs its own entry points"
    );
    assert_eq!(judge_in("grep x f"), Verdict::Hold, "not looked up");
    assert_eq!(
        judge_in("frobnicate() { echo hi; }; frobnicate"),
        Verdict::Allow
    );
    assert_eq!(
        judge_in("ls() { echo hi; }; ls"),
        Verdict::Hold,
        "a known program is judged as the program"
    );
}

#[test]
fn grants_are_summarized_and_unknown_destinations_explained() {
    let policy = Policy::builtin().unwrap_or_else(|e| panic!("{e}"));
    let held = judge(&policy, "curl https://pypi.org/simple/", "agent");
    assert_eq!(held.decision, Verdict::Hold);
    assert!(held.network());
    assert_eq!(held.grants_summary(), "will connect to pypi.org:443");
    let fetch = judge(&policy, "git fetch upstream", "agent");
    assert!(!fetch.network());
    assert!(
        fetch.reason.contains("no connect grant")
            && fetch
                .reason
                .contains("`upstream` is not in this repository's config"),
        "{}",
        fetch.reason
    );
    let dynamic = judge(&policy, "curl \"$URL\"", "agent");
    assert!(
        dynamic.reason.contains("only known at run time"),
        "{}",
        dynamic.reason
    );
    let stop = judge(&policy, "rm -rf / && curl https://pypi.org/", "agent");
    assert_eq!(stop.decision, Verdict::Stop);
    assert!(stop.grants.is_empty(), "a STOP carries no grants");
}

#[test]
fn connect_lists_are_validated_at_load() {
    let unknown = BUILTIN_PATTERNS.replacen(
        "connect = [\"registry:go\"]",
        "connect = [\"registry:gopher\"]",
        1,
    );
    assert_ne!(unknown, BUILTIN_PATTERNS);
    let err = builtin_load_error(&unknown);
    assert!(err.contains("unknown registry `gopher`"), "{err}");
    let operator = r#"
[[rule]]
id = "deploy-internal"
decision = "allow"
reason = "deploys go to the internal host"
program = ["make"]
subcommand = ["deploy"]
connect = ["deploy.internal:443", "registry:npm"]
match = ["make deploy"]
"#;
    let builtin = Source {
        name: "patterns.toml",
        text: BUILTIN_PATTERNS,
    };
    let policy = Policy::load(
        builtin,
        Some(Source {
            name: "policy.toml",
            text: operator,
        }),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let d = judge(&policy, "make deploy", "agent");
    assert_eq!(
        d.grants_summary(),
        "will connect to deploy.internal:443, registry.npmjs.org:443, registry.yarnpkg.com:443"
    );
    let kinds = operator.replace("\"deploy.internal:443\"", "\"url-operands\"");
    let err = Policy::load(
        builtin,
        Some(Source {
            name: "policy.toml",
            text: &kinds,
        }),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("program table"), "{err}");
}

#[test]
fn a_command_shape_separates_subcommand_flags_operands_and_paths() {
    let policy = Policy::builtin().unwrap_or_else(|e| panic!("{e}"));
    let push = judge(
        &policy,
        "git push --force-with-lease origin feature/login",
        "agent",
    );
    let shape = &push.commands[0].shape;
    assert_eq!(shape.subcommand, ["push"]);
    assert_eq!(shape.flags, ["--force-with-lease"]);
    assert_eq!(shape.operands, ["origin", "feature/login"]);
    assert!(shape.paths.is_empty());

    let rm = judge(&policy, "rm -rf build", "agent");
    let shape = &rm.commands[0].shape;
    assert!(shape.flags.contains(&"-r".to_owned()), "{shape:?}");
    assert_eq!(shape.paths.len(), 1, "{shape:?}");
    assert_eq!(shape.paths[0].0, "build");
    assert!(
        shape.paths[0].1.contains(&"workspace".to_owned()),
        "{shape:?}"
    );
}

#[test]
fn a_table_example_with_the_wrong_decision_is_a_load_error_at_its_line() {
    let example = "{ command = \"tar -xf a.tar --to-command='rm -rf ~'\", decision = \"STOP\" }";
    let broken = BUILTIN_PATTERNS.replacen(
        example,
        "{ command = \"tar -xf a.tar --to-command='rm -rf ~'\", decision = \"ALLOW\" }",
        1,
    );
    assert_ne!(broken, BUILTIN_PATTERNS, "the example to break is gone");
    let line = BUILTIN_PATTERNS
        .lines()
        .position(|l| l.contains(example))
        .unwrap()
        + 1;
    let err = builtin_load_error(&broken);
    assert!(err.starts_with(&format!("patterns.toml:{line}:")), "{err}");
    assert!(err.contains("must be ALLOW, is STOP"), "{err}");
}

#[test]
fn an_exec_option_naming_an_unknown_language_is_refused() {
    let broken = BUILTIN_PATTERNS.replacen("language = \"javascript\"", "language = \"cobol\"", 1);
    assert_ne!(broken, BUILTIN_PATTERNS);
    let err = builtin_load_error(&broken);
    assert!(err.contains("`cobol` is not in [interpreters]"), "{err}");
}

#[test]
fn a_command_value_reaches_the_rules_as_a_command_of_its_own() {
    let policy = Policy::builtin().unwrap();
    let d = judge(&policy, "GIT_SSH_COMMAND='rm -rf /' git fetch", "agent");
    assert_eq!(d.decision, Verdict::Stop, "{}", d.reason);
    let rm = d
        .commands
        .iter()
        .find(|c| c.program == "rm")
        .expect("the value is judged as its own command");
    assert_eq!(rm.verdict, Verdict::Stop);
    let d = judge(&policy, "PAGER=cat git log", "agent");
    assert_eq!(d.decision, Verdict::Allow, "{}", d.reason);
}

#[test]
fn a_hold_from_a_rule_marked_not_relaxable_says_so_and_others_do_not() {
    let policy = Policy::builtin().unwrap();
    let secret = judge(&policy, "cat ~/.ssh/id_rsa", "agent");
    assert_eq!(secret.decision, Verdict::Hold);
    assert!(secret.rule_ids.contains(&"read-secret".to_owned()));
    assert!(secret.not_relaxable);
    // A compound request is not relaxable when any held part is not.
    let mixed = judge(
        &policy,
        "git push origin feature/x; cat ~/.ssh/id_rsa",
        "agent",
    );
    assert!(mixed.not_relaxable);
    let push = judge(&policy, "git push origin feature/x", "agent");
    assert_eq!(push.decision, Verdict::Hold);
    assert!(!push.not_relaxable);
}

#[test]
fn not_relaxable_on_a_rule_that_does_not_hold_is_a_load_error() {
    let broken = BUILTIN_PATTERNS.replacen(
        "id = \"host-power\"\ndecision = \"stop\"\n",
        "id = \"host-power\"\ndecision = \"stop\"\nnot_relaxable = true\n",
        1,
    );
    assert_ne!(broken, BUILTIN_PATTERNS, "the rule to mark is gone");
    let err = builtin_load_error(&broken);
    assert!(
        err.contains("host-power") && err.contains("not_relaxable"),
        "{err}"
    );
}

#[test]
fn commands_that_change_the_repository_config_are_granted_that_file_alone() {
    let policy = Policy::builtin().unwrap_or_else(|e| panic!("{e}"));
    let config = format!("{}/.git/config", example_context::WORKSPACE);
    let granted =
        |d: &praxis_policy::Decision| d.grants.write == [std::path::PathBuf::from(&config)];
    for allowed in [
        "git config user.email a@b",
        "git config set user.name A",
        "git config --unset pull.rebase",
        "git remote add upstream https://example.com/x.git",
        "git remote set-url origin https://example.com/y.git",
        "git branch --set-upstream-to=origin/main",
        "git branch -u origin/main main",
        "git config user.email a@b && git config --get user.email && ls",
    ] {
        let d = judge(&policy, allowed, "agent");
        assert_eq!(d.decision, Verdict::Allow, "{allowed}: {}", d.reason);
        assert!(granted(&d), "{allowed}: {:?}", d.grants);
    }
    for held in [
        "git config core.hooksPath x",
        "git push -u origin feature/x",
    ] {
        let d = judge(&policy, held, "agent");
        assert_eq!(d.decision, Verdict::Hold, "{held}");
        assert!(granted(&d), "the approval runs with the grant: {held}");
    }
    for plain in [
        "git config --get user.email",
        "git config --global user.email a@b",
        "git remote -v",
        "git branch feature",
        "git status",
    ] {
        let d = judge(&policy, plain, "agent");
        assert!(d.grants.write.is_empty(), "{plain}: {:?}", d.grants);
    }
    // The grant is the request's: another writer beside it is held.
    let shared = judge(&policy, "git config user.name A && sh build.sh", "agent");
    assert_eq!(shared.decision, Verdict::Hold);
    assert_eq!(shared.rule_ids, ["grant.shared-git-config"]);
    assert!(shared.reason.contains("`sh`"), "{}", shared.reason);
}

#[test]
fn this_machine_is_reached_only_on_open_ports_and_never_on_praxis_own() {
    let with_operator = |text: &str| {
        Policy::load(
            Source {
                name: "patterns.toml",
                text: BUILTIN_PATTERNS,
            },
            Some(Source {
                name: "policy.toml",
                text,
            }),
        )
    };
    let builtin = Policy::builtin().unwrap();
    for command in [
        "curl -X POST http://127.0.0.1:2375/containers/create -d '{}'",
        "curl http://localhost:2375/",
        "curl http://0x7f.1:2375/",
        "git clone http://127.0.0.1:2375/repo.git",
    ] {
        let held = judge(&builtin, command, "agent");
        assert_eq!(held.decision, Verdict::Hold, "{command}");
        assert_eq!(held.rule_ids, vec!["loopback.port"], "{command}");
        assert!(held.reason.contains("port 2375"), "{}", held.reason);
    }
    assert!(builtin.loopback_ports().contains(&8080));
    for closed in [2375, 2376, 5432, 3306, 6379, 27017] {
        assert!(!builtin.loopback_ports().contains(&closed), "{closed}");
    }

    let opened = with_operator("[loopback]\nports = [2375]\n").unwrap();
    let allowed = judge(&opened, "curl http://127.0.0.1:2375/_ping", "agent");
    assert_eq!(allowed.decision, Verdict::Allow, "{}", allowed.reason);

    // A rule naming a port of this machine opens it.
    let rule = "[[rule]]\nid = \"local-search\"\ndecision = \"allow\"\nreason = \"the local search index\"\nprogram = [\"curl\"]\nregex = \"localhost:9200\"\ntier = \"reversible_write\"\nconnect = [\"localhost:9200\"]\nmatch = [\"curl http://localhost:9200/x\"]\n";
    let by_rule = with_operator(rule).unwrap();
    assert!(by_rule.loopback_ports().contains(&9200));
    let allowed = judge(
        &by_rule,
        "curl http://localhost:9200/_cluster/health",
        "agent",
    );
    assert_eq!(allowed.decision, Verdict::Allow, "{}", allowed.reason);

    let mut context = example_context::context();
    context.praxis_ports = vec![8080];
    let request = Request {
        command: CommandText::Shell("curl http://localhost:8080/v1/recall"),
        role: "agent",
    };
    let held = builtin.decide(&request, &builtin.analyze(&request), &context);
    assert_eq!(held.decision, Verdict::Hold);
    assert!(held.reason.contains("Praxis' own API"), "{}", held.reason);

    let err = with_operator("[loopback]\nports = [0]\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("0 is not a port"), "{err}");
}

/// An operator policy of one rule granting `sockets` (a TOML list) to curl.
fn socket_rule(decision: &str, sockets: &str) -> String {
    format!(
        r#"
[[rule]]
id = "curl-socket"
decision = "{decision}"
reason = "curl reaches the service's socket"
program = ["curl"]
sockets = {sockets}
tier = "read_only"
match = ["curl http://x/version"]
"#
    )
}

fn load_operator(operator: &str) -> Result<Policy, praxis_policy::LoadError> {
    Policy::load(
        Source {
            name: "patterns.toml",
            text: BUILTIN_PATTERNS,
        },
        Some(Source {
            name: "policy.toml",
            text: operator,
        }),
    )
}

#[test]
fn a_socket_grant_is_a_high_risk_hold_naming_the_socket() {
    let policy = load_operator(&socket_rule("hold", r#"["/srv/svc/api.sock"]"#))
        .unwrap_or_else(|e| panic!("{e}"));
    let d = judge(&policy, "curl http://x/version", "agent");
    assert_eq!(d.decision, Verdict::Hold);
    assert_eq!(d.tier, praxis_policy::Tier::HighRisk, "a socket rule is T3");
    assert_eq!(
        d.grants.sockets,
        [std::path::PathBuf::from("/srv/svc/api.sock")]
    );
    assert!(d.reason.contains("/srv/svc/api.sock"), "{}", d.reason);
    assert!(
        d.grants_summary()
            .contains("will connect to the socket /srv/svc/api.sock"),
        "{}",
        d.grants_summary()
    );
    assert!(d.not_relaxable, "no learned lesson lifts a socket grant");
    // Without the rule, nothing grants a socket.
    let plain = judge(
        &Policy::builtin().unwrap(),
        "curl http://x/version",
        "agent",
    );
    assert!(plain.grants.sockets.is_empty());
}

#[test]
fn socket_grants_are_exact_paths_on_hold_rules_only() {
    for (decision, sockets) in [
        ("allow", r#"["/srv/svc/api.sock"]"#),
        ("hold", r#"["srv/api.sock"]"#),
        ("hold", r#"["/srv/*.sock"]"#),
        ("hold", r#"["/srv/../run/api.sock"]"#),
        ("hold", r#"["~/api.sock"]"#),
    ] {
        let err = load_operator(&socket_rule(decision, sockets))
            .err()
            .unwrap_or_else(|| panic!("{decision} {sockets} loaded"));
        assert!(err.to_string().contains("socket"), "{err}");
    }
}

#[test]
fn a_role_unknown_posture_is_contained_or_hold_and_nothing_else() {
    let text = BUILTIN_PATTERNS.replacen(
        "unknown = \"contained\"          # checkpointed",
        "unknown = \"allow\"          # checkpointed",
        1,
    );
    assert_ne!(text, BUILTIN_PATTERNS, "the agent role's posture is gone");
    let err = load_error_at_line_of(&text, "unknown = \"allow\"");
    assert!(err.contains("contained") && err.contains("hold"), "{err}");
}

#[test]
fn an_unknown_program_asking_for_network_is_held_past_any_lesson() {
    let policy = Policy::builtin().unwrap();
    let d = judge(&policy, "mytool src && npm install", "agent");
    assert_eq!(d.decision, Verdict::Hold);
    assert_eq!(d.rule_ids, ["unknown.not-contained"]);
    assert!(
        d.not_relaxable,
        "memory must not give an unknown program network"
    );
    assert!(d.reason.contains("registry.npmjs.org:443"), "{}", d.reason);
    let alone = judge(&policy, "mytool src", "agent");
    assert_eq!(alone.decision, Verdict::Allow);
    assert_eq!(
        alone.undo.workspace,
        Some(false),
        "a whole checkpoint first"
    );
}

#[test]
fn ci_push_preconditions_check_the_branch_the_push_writes() {
    let policy = Policy::builtin().unwrap();
    let on = |branch: &str, command: &str| {
        let mut context = example_context::context();
        context.git_branch = Some(branch.to_owned());
        context.git_default_branch = Some("trunk".to_owned());
        let request = Request {
            command: CommandText::Shell(command),
            role: "ci",
        };
        let analysis = policy.analyze(&request);
        policy.decide(&request, &analysis, &context)
    };
    for command in [
        "git push origin feature/x",
        "git push origin HEAD:feature/x",
        "git push origin feature/x:refs/heads/feature/y",
    ] {
        let d = on("master", command);
        assert_eq!(d.decision, Verdict::Allow, "{command} on master: {d:?}");
    }
    for (branch, command, protected) in [
        ("master", "git push", "master"),
        ("master", "git push origin HEAD", "master"),
        ("feature/x", "git push origin trunk", "trunk"),
        ("feature/x", "git push origin feature/x:trunk", "trunk"),
        (
            "feature/x",
            "git push origin feature/x refs/heads/trunk",
            "trunk",
        ),
    ] {
        let d = on(branch, command);
        assert_eq!(d.decision, Verdict::Hold, "{command} on {branch}: {d:?}");
        assert!(
            d.reason
                .contains(&format!("branch `{protected}` is protected")),
            "{command} on {branch}: {}",
            d.reason
        );
    }
}

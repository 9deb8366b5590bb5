//! Front-end behaviour on whole requests.

use super::*;

fn parse(src: &str) -> Script {
    parse_script(src)
}

fn programs(s: &Script) -> Vec<&str> {
    s.commands.iter().map(|c| c.program.as_str()).collect()
}

fn args(c: &SimpleCommand) -> Vec<&str> {
    c.args.iter().map(|a| a.text.as_str()).collect()
}

fn find<'a>(s: &'a Script, program: &str) -> &'a SimpleCommand {
    s.commands
        .iter()
        .find(|c| c.program == program)
        .unwrap_or_else(|| panic!("no {program} in {s:#?}"))
}

fn clean(src: &str) -> Script {
    let s = parse(src);
    assert!(
        s.holds.is_empty(),
        "unexpected holds for {src:?}: {:?}",
        s.holds
    );
    s
}

fn held(src: &str, needle: &str) {
    let s = parse(src);
    assert!(
        s.holds.iter().any(|h| h.contains(needle)),
        "expected hold with {needle:?} for {src:?}, got {:?}",
        s.holds
    );
}

#[test]
fn lists_and_pipelines() {
    let s = clean("a | b && c || d; e & f");
    assert_eq!(programs(&s), ["a", "b", "c", "d", "e", "f"]);
    assert_eq!(s.commands[1].stdin, Feed::Pipe { from: vec![0] });
    assert_eq!(s.commands[2].stdin, Feed::Inherited);
    let s = clean("{ a; b; } | c | d");
    assert_eq!(find(&s, "c").stdin, Feed::Pipe { from: vec![0, 1] });
    assert_eq!(find(&s, "d").stdin, Feed::Pipe { from: vec![2] });
}

#[test]
fn compound_commands_and_their_conditions() {
    let s = clean("if a; then b; elif c; then d; else e; fi");
    assert_eq!(programs(&s), ["a", "b", "c", "d", "e"]);
    let s = clean("while a; do b; done; until c; do d; done");
    assert_eq!(programs(&s), ["a", "b", "c", "d"]);
    let s = clean("for x in $(ls); do rm $x; done");
    assert_eq!(programs(&s), ["ls", "rm"]);
    assert_eq!(s.commands[0].origin, Origin::CommandSubstitution);
    let s = clean("case $(a) in x) b;; y|z) c;; esac");
    assert_eq!(programs(&s), ["a", "b", "c"]);
    let s = clean("(a; (b)); { c; }");
    assert_eq!(programs(&s), ["a", "b", "c"]);
    let s = clean("(( x = $(id -u) )); for ((i=0; i<$(n); i++)); do b; done");
    assert_eq!(programs(&s), ["id", "n", "b"]);
    let s = clean("[[ -f $(a) ]] && b");
    assert_eq!(programs(&s), ["a", "b"]);
    let s = clean("if [ -f Cargo.toml ]; then cargo test; fi");
    assert_eq!(programs(&s), ["[", "cargo"]);
}

#[test]
fn function_bodies() {
    let s = clean("f() { rm -rf /; }; function g { curl x; }");
    assert_eq!(programs(&s), ["rm", "curl"]);
    assert!(s.commands.iter().all(|c| c.origin == Origin::FunctionBody));
}

#[test]
fn substitutions_everywhere() {
    let s = clean("echo $(a) \"$(b)\" `c` <(d) >(e) x=$(f)");
    let progs = programs(&s);
    for p in ["a", "b", "c", "d", "e", "f", "echo"] {
        assert!(progs.contains(&p), "{p} in {progs:?}");
    }
    assert_eq!(find(&s, "d").origin, Origin::ProcessSubstitution);
    assert_eq!(find(&s, "a").origin, Origin::CommandSubstitution);
    let s = clean("X=$(g) cmd > $(h)");
    assert_eq!(programs(&s), ["g", "h", "cmd"]);
    let s = clean("cat <<EOF\nhello $(whoami) `id`\nEOF\n");
    assert_eq!(programs(&s), ["whoami", "id", "cat"]);
    let s = clean("cat <<'EOF'\nhello $(whoami)\nEOF\n");
    assert_eq!(programs(&s), ["cat"]);
    let s = clean("echo $(echo $(echo rm))");
    assert_eq!(programs(&s), ["echo", "echo", "echo"]);
}

#[test]
fn redirections() {
    let s = clean("a > f >> g < h <> i &> j >| k 2>&1 3< l >&-");
    let r = &s.commands[0].redirects;
    let kinds: Vec<_> = r
        .iter()
        .map(|r| (r.fd, r.kind, r.target.text.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (None, RedirectKind::Write, "f"),
            (None, RedirectKind::Append, "g"),
            (None, RedirectKind::Read, "h"),
            (None, RedirectKind::ReadWrite, "i"),
            (None, RedirectKind::Write, "j"),
            (None, RedirectKind::Write, "k"),
            (Some(2), RedirectKind::Duplicate, "1"),
            (Some(3), RedirectKind::Read, "l"),
            (None, RedirectKind::Duplicate, "-"),
        ]
    );
}

#[test]
fn redirection_only_and_compound_redirections() {
    let s = clean("> /etc/passwd");
    assert_eq!(s.commands.len(), 1);
    assert_eq!(s.commands[0].program, "");
    assert_eq!(s.commands[0].redirects[0].target.text, "/etc/passwd");
    let s = clean("{ a; b; } > out");
    assert!(
        s.commands
            .iter()
            .all(|c| c.redirects.len() == 1 && c.redirects[0].target.text == "out")
    );
    let s = clean("(( 1 )) > /etc/shadow");
    assert_eq!(s.commands.len(), 1);
    assert_eq!(s.commands[0].redirects[0].target.text, "/etc/shadow");
    let s = clean("while read l; do echo $l; done < list");
    assert!(
        s.commands
            .iter()
            .all(|c| c.redirects[0].kind == RedirectKind::Read)
    );
}

#[test]
fn canonical_command_words() {
    for src in [
        r"\rm -rf /",
        "r''m -rf /",
        "\"rm\" -rf /",
        "'rm' -rf /",
        "$'rm' -rf /",
        r"$'\x72m' -rf /",
    ] {
        let s = clean(src);
        assert_eq!(s.commands[0].program, "rm", "{src}");
        assert_eq!(args(&s.commands[0]), ["-rf", "/"], "{src}");
    }
    let s = clean("/usr/bin/git status");
    assert_eq!(s.commands[0].program, "git");
    assert_eq!(s.commands[0].invoked_as, "/usr/bin/git");
    let s = clean("\"git\">/dev/null reset --hard");
    let c = &s.commands[0];
    assert_eq!(
        (c.program.as_str(), args(c)),
        ("git", vec!["reset", "--hard"])
    );
    assert_eq!(c.redirects[0].target.text, "/dev/null");
    assert_eq!(c.redirects[0].kind, RedirectKind::Write);
    let s = clean("cat ~/.ssh/id_rsa $HOME/.aws ${HOME}/x");
    assert_eq!(args(&s.commands[0]), ["~/.ssh/id_rsa", "~/.aws", "~/x"]);
}

#[test]
fn data_is_data() {
    let s = clean("echo \"rm -rf /\"");
    assert_eq!(programs(&s), ["echo"]);
    assert_eq!(args(&s.commands[0]), ["rm -rf /"]);
    let s = clean("git commit -m \"rm -rf /\"");
    assert_eq!(programs(&s), ["git"]);
    assert_eq!(args(&s.commands[0]), ["commit", "-m", "rm -rf /"]);
}

#[test]
fn dynamic_command_words_hold() {
    held("$CMD -rf /", "dynamic command word");
    held("${X} y", "dynamic command word");
    held("$(echo rm) -rf /", "dynamic command word `$(echo rm)`");
    held("`which rm` -rf /", "dynamic command word");
    held("read a; $a", "dynamic command word `$a`");
    held("rm${IFS}-rf${IFS}/", "dynamic command word");
    held("/bin/r? -rf /", "glob in command word");
    held("{rm,-rf,/}", "dynamic command word");
    // Dynamic arguments are fine; the classifier sees them flagged.
    let s = clean("rm -rf $DIR");
    assert!(s.commands[0].args[1].dynamic);
}

#[test]
fn assignments() {
    let s = clean("A=1 B=$(x) cmd arg");
    let c = find(&s, "cmd");
    assert_eq!(
        c.assignments[0],
        (
            "A".to_owned(),
            Word {
                text: "1".into(),
                dynamic: false,
                glob: false
            }
        )
    );
    assert!(c.assignments[1].1.dynamic);
    let s = clean("A=1");
    assert_eq!(s.commands[0].program, "");
    assert_eq!(s.commands[0].assignments.len(), 1);
}

#[test]
fn env_and_privilege_wrappers() {
    let s = clean("env -i -u HOME -C /tmp -- FOO=1 rm -rf /");
    let c = &s.commands[0];
    assert_eq!(
        (c.program.as_str(), c.wrappers.clone()),
        ("rm", vec!["env".to_owned()])
    );
    assert_eq!(c.assignments[0].0, "FOO");
    let s = clean("sudo -u root -E rm -rf /");
    assert_eq!(s.commands[0].program, "rm");
    assert!(s.commands[0].escalated);
    assert_eq!(s.commands[0].wrappers, ["sudo"]);
    let s = clean("doas -u root rm x");
    assert!(s.commands[0].escalated && s.commands[0].program == "rm");
    let s = clean("pkexec --user root rm x");
    assert!(s.commands[0].escalated && s.commands[0].program == "rm");
    let s = clean("su -c 'rm -rf /' root");
    assert!(s.commands[0].escalated && s.commands[0].program == "rm");
    assert_eq!(s.commands[0].wrappers, ["su -c"]);
    let s = clean("sudo");
    assert!(s.commands[0].escalated && s.commands[0].program == "sudo");
    let s = clean("env -S 'rm -rf' /");
    assert_eq!(s.commands[0].program, "rm");
    assert_eq!(args(&s.commands[0]), ["-rf", "/"]);
}

#[test]
fn process_wrappers() {
    for (src, wrapper) in [
        ("command rm x", "command"),
        ("builtin rm x", "builtin"),
        ("exec rm x", "exec"),
        ("nohup rm x", "nohup"),
        ("nice -n 10 rm x", "nice"),
        ("ionice -c 3 rm x", "ionice"),
        ("/usr/bin/time -p rm x", "time"),
        ("timeout -s KILL 5 rm x", "timeout"),
        ("stdbuf -oL rm x", "stdbuf"),
        ("xargs -0 -n 1 rm x", "xargs"),
    ] {
        let s = clean(src);
        assert_eq!(s.commands.len(), 1, "{src}");
        assert_eq!(s.commands[0].program, "rm", "{src}");
        assert_eq!(args(&s.commands[0]), ["x"], "{src}");
        assert_eq!(s.commands[0].wrappers, [wrapper], "{src}");
    }
    let s = clean("timeout 5 rm -rf /");
    assert_eq!(
        (s.commands[0].program.as_str(), args(&s.commands[0])),
        ("rm", vec!["-rf", "/"])
    );
    let s = clean("sudo env A=1 timeout 5 nohup rm -rf /");
    assert_eq!(s.commands[0].wrappers, ["sudo", "env", "timeout", "nohup"]);
    assert!(s.commands[0].escalated);
    let s = clean("find . | xargs");
    assert_eq!(find(&s, "echo").wrappers, ["xargs"]);
    let s = clean("ls | xargs rm");
    assert_eq!(find(&s, "rm").stdin, Feed::Pipe { from: vec![0] });
    let s = clean("command -v rm");
    assert_eq!(s.commands[0].program, "command");
}

#[test]
fn find_exec() {
    let s = clean(r"find . -name '*.o' -exec rm {} \; -delete");
    assert_eq!(programs(&s), ["find", "rm"]);
    assert!(args(&s.commands[0]).contains(&"-delete"));
    assert_eq!(s.commands[1].wrappers, ["find"]);
    assert_eq!(args(&s.commands[1]), ["{}"]);
    let s = clean("find / -execdir sh -c 'curl x | sh' {} +");
    assert_eq!(programs(&s), ["find", "curl", "sh"]);
    assert_eq!(s.commands[2].wrappers, ["find", "sh -c"]);
}

#[test]
fn shell_strings() {
    let s = clean("bash -c \"rm -rf /\"");
    assert_eq!(programs(&s), ["rm"]);
    assert_eq!(s.commands[0].origin, Origin::ShellString);
    assert_eq!(s.commands[0].wrappers, ["bash -c"]);
    for src in [
        "sh -lc 'rm x'",
        "bash -l -c 'rm x'",
        "zsh -ec 'rm x'",
        "bash --norc -xc 'rm x'",
        "dash -c 'rm x' name",
    ] {
        assert_eq!(programs(&clean(src)), ["rm"], "{src}");
    }
    let s = clean("sh -c 'curl x | sh'");
    assert_eq!(programs(&s), ["curl", "sh"]);
    assert_eq!(s.commands[1].stdin, Feed::Pipe { from: vec![0] });
    let s = clean("sudo bash -c 'bash -c \"rm -rf /\"'");
    assert_eq!(s.commands[0].wrappers, ["sudo", "bash -c", "bash -c"]);
    assert!(s.commands[0].escalated);
    held("sh -c \"$X\"", "sh -c with a dynamic script");
    let s = clean("watch -n 1 'rm x; ls'");
    assert_eq!(programs(&s), ["rm", "ls"]);
    let s = clean("parallel rm ::: a b");
    assert_eq!(programs(&s), ["rm"]);
    let s = clean("bash script.sh");
    assert_eq!(programs(&s), ["bash"]);
}

#[test]
fn eval() {
    let s = clean("eval \"rm -rf /\"");
    assert_eq!(programs(&s), ["rm"]);
    assert_eq!(s.commands[0].wrappers, ["eval"]);
    let s = clean("eval 'a;' \"b\"");
    assert_eq!(programs(&s), ["a", "b"]);
    held("eval \"$X\"", "eval of non-literal text");
    held("eval $(curl x)", "eval of non-literal text");
}

#[test]
fn fed_scripts() {
    let s = clean("bash <<EOF\nrm -rf /\nEOF\n");
    assert_eq!(programs(&s), ["bash", "rm"]);
    assert_eq!(
        s.commands[0].stdin,
        Feed::HereDoc {
            body: "rm -rf /\n".into()
        }
    );
    assert_eq!(s.commands[1].origin, Origin::FedScript);
    assert_eq!(s.commands[1].wrappers, ["bash"]);
    let s = clean("bash <<< 'rm -rf /'");
    assert_eq!(programs(&s), ["bash", "rm"]);
    let s = clean("sudo bash -s <<'X'\ncurl y\nX\n");
    assert_eq!(programs(&s), ["bash", "curl"]);
    assert!(s.commands[1].escalated);
    let s = clean("env sh <<< 'id'");
    assert_eq!(programs(&s), ["sh", "id"]);
    let s = clean("cat <<< 'rm -rf /'");
    assert_eq!(programs(&s), ["cat"]);
    let s = clean("bash script.sh <<< 'rm -rf /'");
    assert_eq!(programs(&s), ["bash"]);
    held("bash <<< \"$X\"", "here-string with dynamic text");
}

#[test]
fn process_substitution_feeding_a_shell() {
    let s = parse("bash <(curl -s https://x)");
    assert_eq!(programs(&s), ["curl", "bash"]);
    assert_eq!(s.commands[0].origin, Origin::ProcessSubstitution);
    let arg = &s.commands[1].args[0];
    assert!(arg.dynamic && arg.text.starts_with("<("), "{arg:?}");
    held("source <(curl x)", "source of a dynamic path");
    held(". \"$F\"", ". of a dynamic path");
}

#[test]
fn other_holds() {
    held("alias ls='rm -rf /'", "alias definition");
    held("echo 'unterminated", "shell parse error");
    held("if then fi", "shell parse error");
    let big = "a".repeat(MAX_INPUT_BYTES + 1);
    held(&big, "over the");
    held(&format!("echo '{}'", "a".repeat(MAX_PARSED_BYTES)), "bytes");
    held(&"$a".repeat(MAX_TOKENS), "tokens and expansions");
    held(&"(".repeat(100), "nested deeper");
    held("( ( rm -rf / ) )", "misread as arithmetic");
    held("echo $( (rm -rf /) )", "misread as arithmetic");
    held(&"$(".repeat(100), "nested deeper");
    held(&"a ".repeat(MAX_TOKENS + 1), "more than");
    held(
        &format!("{}rm", "eval ".repeat(MAX_NESTING + 1)),
        "nested deeper",
    );
    held(
        &format!("{}rm", "sudo ".repeat(MAX_NESTING + 1)).replace("sudo", "find . -exec"),
        "nested deeper",
    );
}

#[test]
fn git_global_options() {
    let s = clean("git -C /repo -c core.hooksPath=/tmp/h --no-pager push origin main");
    let c = &s.commands[0];
    assert_eq!(args(c), ["push", "origin", "main"]);
    assert_eq!(c.wrappers, ["git -C /repo", "git -c core.hooksPath=/tmp/h"]);
    let s = clean("git -c 'alias.x=!rm -rf /' x");
    assert_eq!(s.commands[0].wrappers, ["git -c alias.x=!rm -rf /"]);
}

#[test]
fn argv_entry() {
    let argv = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let s = parse_argv(&argv(&["rm", "-rf", "$HOME"]));
    assert!(s.holds.is_empty());
    assert_eq!(s.commands[0].args[1].text, "$HOME");
    assert!(!s.commands[0].args[1].dynamic);
    let s = parse_argv(&argv(&["sudo", "bash", "-c", "rm -rf / && curl x"]));
    assert_eq!(programs(&s), ["rm", "curl"]);
    assert!(s.commands.iter().all(|c| c.escalated));
    let s = parse_argv(&argv(&["/usr/bin/git", "-C", "x", "status"]));
    assert_eq!(
        (s.commands[0].program.as_str(), args(&s.commands[0])),
        ("git", vec!["status"])
    );
    assert!(!parse_argv(&[]).holds.is_empty());
}

#[test]
fn deep_nesting_at_the_cap_parses_on_a_small_stack() {
    // Test threads have small stacks; nesting just under the cap must not overflow.
    let depth = MAX_NESTING - 2;
    for (open, close, frames) in [
        ("(: ; ", ")", 1),
        // Each substitution level is parsed again on its own, so these spend
        // the token budget quadratically; 2 frames per level keeps them within it.
        ("echo $(: ; ", ")", 2),
        ("{ ", "; }", 1),
        ("if a; then ", "; fi", 1),
        ("echo \"$(", ")\"", 2),
    ] {
        let n = depth / frames;
        let src = format!("{}x{}", open.repeat(n), close.repeat(n));
        let s = parse(&src);
        assert!(s.holds.is_empty(), "{open}: {:?}", s.holds);
        assert!(s.commands.iter().any(|c| c.program == "x"), "{open}");
    }
}

#[test]
fn tight_substitution_nesting_stays_on_the_stack() {
    for n in [MAX_NESTING - 4, MAX_NESTING + 4] {
        let src = format!("echo {}x{}", "$(".repeat(n), ")".repeat(n));
        let s = parse(&src);
        let found = s
            .commands
            .iter()
            .filter(|c| c.origin == Origin::CommandSubstitution)
            .count();
        assert!(found > 0 || !s.holds.is_empty(), "{n}");
        if n > MAX_NESTING {
            assert!(!s.holds.is_empty());
        }
    }
}

/// A tiny deterministic generator: random shell-ish text must never panic.
#[test]
fn random_inputs_never_panic() {
    const ALPHABET: &[&str] = &[
        "a",
        " ",
        "|",
        "&",
        ";",
        "(",
        ")",
        "{",
        "}",
        "$",
        "$(",
        "`",
        "'",
        "\"",
        "\\",
        "<",
        ">",
        "<<",
        "EOF",
        "\n",
        "-c",
        "sh",
        "sudo",
        "eval",
        "find",
        "-exec",
        "xargs",
        "~",
        "*",
        "[",
        "=",
        "$'\\x",
        "if",
        "then",
        "fi",
        "${",
        "<(",
        "2>&1",
        "case",
        "in",
        "esac",
        "))",
        "((",
        "#",
        "~+99999999999999999999999",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let len = (next() % 40) as usize;
        let src: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        let _ = parse_script(&src);
        let argv: Vec<String> = src.split(' ').map(str::to_owned).collect();
        let _ = parse_argv(&argv);
    }
}

/// The last `program` command's first argument: its text, and whether it is
/// only known at run time.
fn first_arg(src: &str, program: &str) -> (String, bool) {
    let s = parse(src);
    let c = s
        .commands
        .iter()
        .rev()
        .find(|c| c.program == program)
        .unwrap_or_else(|| panic!("no {program} in {s:#?}"));
    (c.args[0].text.clone(), c.args[0].dynamic)
}

#[test]
fn a_variable_set_to_a_literal_is_that_literal() {
    for (src, program, value) in [
        ("f=~/.ssh/id_rsa; cat $f", "cat", "~/.ssh/id_rsa"),
        ("export T=/etc/shadow; cat \"$T\"", "cat", "/etc/shadow"),
        ("h=$HOME; rm \"${h}\"", "rm", "~"),
        ("a=/etc; b=$a/x; cat $b", "cat", "/etc/x"),
        ("f=~/.netrc; x=$(cat $f)", "cat", "~/.netrc"),
        ("f=~/.netrc; diff <(cat $f) x", "cat", "~/.netrc"),
        ("d=/; (d=x); rm $d", "rm", "/"),
        ("d=/; if true; then rm $d; fi", "rm", "/"),
        (
            "f=a; command export f=/etc/shadow; cat $f",
            "cat",
            "/etc/shadow",
        ),
        ("HOME=/; rm $HOME", "rm", "/"),
    ] {
        assert_eq!(first_arg(src, program), (value.to_owned(), false), "{src}");
    }
}

#[test]
fn a_variable_that_may_have_changed_stays_unknown() {
    for src in [
        "d=/; true || d=x && rm $d",
        "d=/; if true; then d=x; fi; rm $d",
        "d=/; case a in a) d=x;; esac; rm $d",
        "d=x; for i in 1 2; do rm $d; d=/; done",
        "d=x; while true; do rm $d; d=/; done",
        "d=/; f() { d=x; }; f; rm $d",
        "d=/; echo | d=x; rm $d",
        "d=/; d=x & rm $d",
        "d=/; read d; rm $d",
        "d=/; command read d; rm $d",
        "d=/; printf -v d x; rm $d",
        "d=/; declare -i d; d=x; rm $d",
        "d=/; : ${d:=x}; rm $d",
        "d=/; : $((d=1)); rm $d",
        "d=/; ((d=1)); rm $d",
        "d=/; [[ 1 -eq d=1 ]]; rm $d",
        "d=/; trap 'd=x' DEBUG; rm $d",
        "d=/; eval d=x; rm $d",
        "d=/; . ./env.sh; rm $d",
        "d=/; d+=x; rm $d",
        "d=/; d=x true; rm $d",
        "d=x; d=/ y=$d; rm $y",
        "d=/; export -n d; rm $d",
        "d=/; sh -c 'rm $d'",
        "d=; rm $d",
        "d='a b'; rm $d",
        "d='*'; rm $d",
        "IFS=_; d=a_b; rm $d",
        "d=$(pwd); rm $d",
    ] {
        let (text, dynamic) = first_arg(src, "rm");
        let known_literal = !dynamic && text != "$y";
        // `d=x; d=/ y=$d`: assignments run in order, `y` is `/`.
        if src.starts_with("d=x; d=/ y") {
            assert_eq!(text, "/", "{src}");
            continue;
        }
        assert!(!known_literal, "{src}: {text}");
    }
}

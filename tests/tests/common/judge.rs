//! Judgment memory from outside: the judge API on praxisd's API socket, the
//! contracts' fixtures and JSON Schemas, and a repository whose pushes are
//! held (a T2 action memory can learn about).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::Value;

use super::{Daemon, bin, repo, signal_json};

/// One HTTP/1.1 exchange on the API socket: the status and the JSON body.
pub fn call(d: &Daemon, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let stream = UnixStream::connect(d.socket().with_file_name("praxisd-api.sock")).unwrap();
    exchange(stream, method, path, body, None)
}

/// The inspector's answer on the memory `encoded_id` (its id with `/` as
/// `%2F`), which must be 200.
pub fn inspect(d: &Daemon, encoded_id: &str) -> Value {
    let (status, inspected) = call(
        d,
        "GET",
        &format!("/v1/memories/{encoded_id}/inspector"),
        None,
    );
    assert_eq!(status, 200, "{inspected}");
    inspected
}

/// One HTTP/1.1 request on `stream` (with a bearer token when given): the
/// status and the JSON body.
pub fn exchange(
    mut stream: impl Read + Write,
    method: &str,
    path: &str,
    body: Option<&Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let text = body.map(ToString::to_string).unwrap_or_default();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: praxisd\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status: u16 = answer[9..12].parse().unwrap();
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// A contract fixture of the memory crate.
pub fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(repo().join("memory/tests/fixtures").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The JSON Schema validator of one contract in `contracts/`.
pub fn validator(schema: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        repo()
            .join("contracts")
            .join(format!("{schema}.schema.json")),
    )
    .unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&serde_json::from_str(&text).unwrap())
        .unwrap()
}

/// What `document` breaks of the contract `schema`; empty when valid.
pub fn schema_errors(schema: &str, document: &Value) -> Vec<String> {
    validator(schema)
        .iter_errors(document)
        .map(|e| e.to_string())
        .collect()
}

/// A git work tree whose `origin` records `main` as its default branch and
/// cannot be reached, so a push that runs fails fast.
pub fn pushable_repo(dir: &Path) {
    super::unreachable_origin_repo(dir);
    let refs = dir.join(".git/refs/remotes/origin");
    std::fs::create_dir_all(&refs).unwrap();
    std::fs::write(refs.join("HEAD"), "ref: refs/remotes/origin/main\n").unwrap();
}

/// `praxis-run -- git push origin BRANCH` in the workspace.
pub fn push(d: &Daemon, branch: &str) -> Output {
    d.cmd(&bin("praxis-run"))
        .args(["--", "git", "push", "origin", branch])
        .current_dir(d.work())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The request id of a HOLD, from the audit signal.
pub fn held(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let v = signal_json(out);
    assert_eq!(v["decision"], "HOLD", "{v}");
    v["request_id"].as_str().unwrap().to_owned()
}

/// The stdout of a command that succeeded.
pub fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The decision record of the last request the policy decided.
pub fn last_decision(d: &Daemon) -> Value {
    d.events_of_kind("decided").pop().unwrap()
}

/// Holds a push to `branch`, approves it with `--remember`, and returns the
/// proposed lesson's id.
pub fn remembered(d: &Daemon, branch: &str) -> String {
    let id = held(&push(d, branch));
    let said = ok(&d.praxis(&["approve", &id, "--remember"]));
    assert!(said.contains("proposed for review"), "{said}");
    format!("lesson-{id}")
}

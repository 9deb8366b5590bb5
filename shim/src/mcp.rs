//! `praxis-run mcp`: a stdio MCP server (JSON-RPC 2.0, one message per line,
//! protocol version 2025-06-18) whose one tool, `run_command`, runs a shell
//! command through praxisd's pipeline. A command that is not allowed comes
//! back as a tool error (`isError: true`) carrying the decision.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use praxis_proto::{ClientMsg, Command, ExecRequest, Verdict};
use serde_json::{Value, json};

use crate::client::{self, ClientError};
use crate::exec::{self, Outcome, Sink};
use crate::judge::Caller;

/// The latest protocol revision this server speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// Every revision it speaks; a client asking for one of them gets it.
pub const SUPPORTED: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18"];

/// Name of the one tool.
pub const TOOL: &str = "run_command";

/// Runtime name in the audit record.
pub const RUNTIME: &str = "mcp";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Output of one command, collected for the tool result.
#[derive(Default)]
struct Collected {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    steers: Vec<String>,
}

impl Sink for Collected {
    fn stdout(&mut self, bytes: &[u8]) {
        self.stdout.extend_from_slice(bytes);
    }

    fn stderr(&mut self, bytes: &[u8]) {
        self.stderr.extend_from_slice(bytes);
    }

    fn steer(&mut self, text: &str) {
        self.steers.push(text.to_owned());
    }
}

/// The server: who it acts for, and the directory commands run in by default.
#[derive(Clone)]
pub struct Server {
    pub caller: Caller,
    pub cwd: PathBuf,
}

/// A parsed `run_command` call, ready to run.
pub struct Call {
    command: String,
    cwd: PathBuf,
    timeout_secs: Option<u64>,
    call_id: String,
}

/// What one incoming message asks of the server.
enum Route {
    /// Answered at once.
    Answer(Value),
    /// A notification that needs no answer.
    Silent,
    /// `notifications/cancelled` for the request with this id.
    Cancel(String),
    /// A tool call, run on its own thread so others and pings go on.
    Run { id: Value, call: Call },
}

/// Tool calls under way, by request id: the connection to praxisd (to send
/// a cancel on) and whether the client cancelled the call.
#[derive(Default)]
struct Running {
    stream: Option<UnixStream>,
    cancelled: bool,
}

type InFlight = Arc<Mutex<HashMap<String, Running>>>;

fn key(id: &Value) -> String {
    id.to_string()
}

fn write_line(output: &Mutex<impl Write>, reply: &Value) -> io::Result<()> {
    let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
    writeln!(out, "{reply}")?;
    out.flush()
}

impl Server {
    /// Serves requests from `input` until it closes, one answer per line.
    /// Tool calls run concurrently; `ping` and the rest are answered at once;
    /// a cancelled call's command is ended and its answer not sent.
    pub fn serve(
        &self,
        input: impl BufRead,
        output: impl Write + Send + 'static,
    ) -> io::Result<()> {
        let output = Arc::new(Mutex::new(output));
        let calls: InFlight = Arc::default();
        let mut workers = Vec::new();
        for line in input.lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            match self.route(&line) {
                Route::Answer(reply) => write_line(&output, &reply)?,
                Route::Silent => {}
                Route::Cancel(id) => {
                    let mut calls = calls.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(running) = calls.get_mut(&id) {
                        running.cancelled = true;
                        if let Some(stream) = &running.stream {
                            let _ = client::send(stream, &ClientMsg::Cancel);
                        }
                    }
                }
                Route::Run { id, call } => {
                    let key = key(&id);
                    calls
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key.clone(), Running::default());
                    let (server, calls, output) =
                        (self.clone(), Arc::clone(&calls), Arc::clone(&output));
                    workers.push(std::thread::spawn(move || {
                        let keep = |stream: &UnixStream| {
                            if let Some(running) = calls
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_mut(&key)
                            {
                                running.stream = stream.try_clone().ok();
                            }
                        };
                        let value = server.run(call, keep);
                        let cancelled = calls
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&key)
                            .is_some_and(|r| r.cancelled);
                        // A cancelled request gets no answer (the client stopped waiting).
                        if !cancelled {
                            let _ = write_line(&output, &result(id, value));
                        }
                    }));
                }
            }
        }
        for worker in workers {
            let _ = worker.join();
        }
        Ok(())
    }

    /// The answer to one message, running a tool call in place (for tests
    /// and one-shot use); none for a notification.
    pub fn handle(&self, line: &str) -> Option<Value> {
        match self.route(line) {
            Route::Answer(reply) => Some(reply),
            Route::Silent | Route::Cancel(_) => None,
            Route::Run { id, call } => Some(result(id, self.run(call, |_| {}))),
        }
    }

    fn route(&self, line: &str) -> Route {
        let message: Value = match serde_json::from_str(line) {
            Ok(message) => message,
            Err(e) => {
                return Route::Answer(error(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {e}"),
                ));
            }
        };
        let id = message.get("id").cloned();
        let method = message.get("method").and_then(Value::as_str);
        let valid = message.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
            && matches!(id, None | Some(Value::String(_) | Value::Number(_)));
        let (Some(method), true) = (method, valid) else {
            return Route::Answer(error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "invalid request: a JSON-RPC 2.0 object with a method is expected (batches are not supported)",
            ));
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        // Notifications (no id) get no answer, known or not.
        let Some(id) = id else {
            return match (method, params.get("requestId")) {
                ("notifications/cancelled", Some(request)) => Route::Cancel(key(request)),
                _ => Route::Silent,
            };
        };
        Route::Answer(match method {
            "initialize" => {
                // The client's revision when this server speaks it, else the latest.
                let asked = params.get("protocolVersion").and_then(Value::as_str);
                let version = SUPPORTED
                    .iter()
                    .copied()
                    .find(|v| Some(*v) == asked)
                    .unwrap_or(PROTOCOL_VERSION);
                result(
                    id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": { "tools": { "listChanged": false } },
                        "serverInfo": { "name": "praxis", "version": env!("CARGO_PKG_VERSION") },
                        "instructions": "run_command is the only way to run a shell command here: praxis decides before it runs (ALLOW runs it sandboxed; HOLD waits for an operator; STOP never runs) and audits every call.",
                    }),
                )
            }
            "ping" => result(id, json!({})),
            "tools/list" => result(id, json!({ "tools": [tool_description()] })),
            "tools/call" => match self.prepare(&id, &params) {
                Ok(call) => return Route::Run { id, call },
                Err(why) => error(id, INVALID_PARAMS, &why),
            },
            other => error(id, METHOD_NOT_FOUND, &format!("method not found: {other}")),
        })
    }

    /// Checks a `run_command` call's arguments.
    fn prepare(&self, id: &Value, params: &Value) -> Result<Call, String> {
        let name = params.get("name").and_then(Value::as_str);
        if name != Some(TOOL) {
            return Err(format!("unknown tool: {}", name.unwrap_or("(none)")));
        }
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .ok_or("run_command needs a non-empty string `command`")?;
        let cwd = match args.get("cwd") {
            None | Some(Value::Null) => self.cwd.clone(),
            Some(Value::String(dir)) => self.cwd.join(dir),
            Some(_) => return Err(String::from("`cwd` must be a string")),
        };
        let timeout_secs = match args.get("timeout_s") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .filter(|s| *s > 0)
                    .ok_or("`timeout_s` must be a positive integer")?,
            ),
        };
        let call_id = match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Ok(Call {
            command: command.to_owned(),
            cwd,
            timeout_secs,
            call_id,
        })
    }

    /// Runs a call through praxisd; `connected` gets the connection, to send
    /// a cancel on.
    fn run(&self, call: Call, connected: impl FnOnce(&UnixStream)) -> Value {
        let Call {
            command,
            cwd,
            timeout_secs,
            call_id,
        } = call;
        let refused =
            |frame: Option<&praxis_proto::DecisionFrame>, verdict: Verdict, reason: &str| {
                let decision = exec::refusal_json(verdict, reason, frame);
                json!({
                    "content": [{ "type": "text", "text": decision.to_string() }],
                    "structuredContent": decision,
                    "isError": true,
                })
            };
        let opened = std::fs::File::open(&cwd).and_then(|dir| {
            let stdin: std::os::fd::OwnedFd = std::fs::File::open("/dev/null")?.into();
            Ok((dir, stdin))
        });
        let (cwd_dir, stdin) = match opened {
            Ok(fds) => fds,
            Err(e) => {
                return refused(
                    None,
                    Verdict::Hold,
                    &format!("cannot open {}: {e}", cwd.display()),
                );
            }
        };
        let request = ExecRequest {
            command: Command::Shell(command),
            cwd: cwd.display().to_string(),
            role: self.caller.role.clone(),
            session: self.caller.session.clone(),
            runtime: Some(
                self.caller
                    .runtime
                    .clone()
                    .unwrap_or_else(|| RUNTIME.to_owned()),
            ),
            tool_call_id: Some(call_id),
            env: praxis_proto::forwarded_env(praxis_policy::env::forwarded),
            timeout_secs,
            approval_token: None,
        };
        let mut out = Collected::default();
        match exec::run(request, stdin, cwd_dir, &mut out, connected) {
            Ok(Outcome::Refused(frame)) => refused(Some(&frame), frame.decision, &frame.reason),
            Ok(outcome @ Outcome::Exited(_)) => {
                let code = match outcome.exit_code() {
                    Ok(code) => code,
                    Err(e) => return refused(None, Verdict::Hold, &e.to_string()),
                };
                let timed_out = matches!(&outcome, Outcome::Exited(exit) if exit.status == praxis_proto::ExitStatus::TimedOut);
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                // Steers come first, each on its own line, so the agent
                // reads them before the output they are about.
                let mut text: String = out.steers.iter().map(|s| format!("{s}\n")).collect();
                if timed_out {
                    text.push_str("timed out: the command reached its time limit and was ended\n");
                }
                text.push_str(&format!("exit code: {code}\n"));
                if !stdout.is_empty() {
                    text.push_str(&format!("stdout:\n{stdout}"));
                }
                if !stderr.is_empty() {
                    text.push_str(&format!("stderr:\n{stderr}"));
                }
                // The output goes once, in the text; the structure says what
                // came of it.
                let mut structured = json!({
                    "decision": "ALLOW",
                    "exit_code": code,
                    "timed_out": timed_out,
                    "stdout_bytes": out.stdout.len(),
                    "stderr_bytes": out.stderr.len(),
                });
                if !out.steers.is_empty() {
                    structured["steer"] = out.steers.join("\n").into();
                }
                json!({
                    "content": [{ "type": "text", "text": text }],
                    "structuredContent": structured,
                    "isError": code != 0,
                })
            }
            Err(e @ ClientError::OutcomeUnknown(_)) => {
                let unknown = exec::outcome_unknown_json(&e.to_string());
                json!({
                    "content": [{ "type": "text", "text": unknown.to_string() }],
                    "structuredContent": unknown,
                    "isError": true,
                })
            }
            Err(e) => refused(None, Verdict::Hold, &e.to_string()),
        }
    }
}

fn tool_description() -> Value {
    json!({
        "name": TOOL,
        "title": "Run a shell command through Praxis",
        "description": "Runs one shell command (bash) on this host through the Praxis boundary. It is judged before it runs: ALLOW runs it in a sandbox and returns stdout, stderr and the exit code; HOLD (needs an operator's approval) and STOP (forbidden) do not run it and return the decision as an error.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The shell command line." },
                "cwd": { "type": "string", "description": "Working directory (default: the server's)." },
                "timeout_s": { "type": "integer", "minimum": 1, "description": "Wall-clock limit in seconds; policy may set a lower one." }
            },
            "required": ["command"],
            "additionalProperties": false
        }
    })
}

fn result(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Server {
        Server {
            caller: Caller::default(),
            cwd: PathBuf::from("/"),
        }
    }

    fn ask(line: &str) -> Value {
        server().handle(line).expect("an answer")
    }

    #[test]
    fn initializes_and_lists_the_one_tool() {
        let init = ask(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        );
        assert_eq!(init["result"]["protocolVersion"], PROTOCOL_VERSION);
        assert_eq!(init["id"], 1);
        assert!(
            server()
                .handle(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
                .is_none()
        );
        let list = ask(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#);
        let tools = list["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["name"], TOOL);
        assert_eq!(tools[0]["inputSchema"]["required"], json!(["command"]));
        assert_eq!(
            ask(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)["result"],
            json!({})
        );
    }

    #[test]
    fn clean_errors_for_everything_else() {
        assert_eq!(ask("{not json")["error"]["code"], PARSE_ERROR);
        assert_eq!(
            ask(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)["error"]["code"],
            INVALID_REQUEST
        );
        assert_eq!(
            ask(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#)["error"]["code"],
            INVALID_REQUEST
        );
        assert_eq!(
            ask(r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#)["error"]["code"],
            METHOD_NOT_FOUND
        );
        let call = |params: &str| {
            ask(&format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}"#
            ))
        };
        assert_eq!(
            call(r#"{"name":"rm_rf","arguments":{}}"#)["error"]["code"],
            INVALID_PARAMS
        );
        assert_eq!(
            call(r#"{"name":"run_command","arguments":{}}"#)["error"]["code"],
            INVALID_PARAMS
        );
        assert_eq!(
            call(r#"{"name":"run_command","arguments":{"command":"ls","timeout_s":-1}}"#)["error"]
                ["code"],
            INVALID_PARAMS
        );
    }
}

//! `praxis-run mcp`: a stdio MCP server (JSON-RPC 2.0, one message per line,
//! protocol version 2025-06-18) whose one tool, `run_command`, runs a shell
//! command through praxisd's pipeline. A command that is not allowed comes
//! back as a tool error (`isError: true`) carrying the decision.

use std::io::{self, BufRead, Write};
use std::path::PathBuf;

use praxis_proto::{Command, ExecRequest, Verdict};
use serde_json::{Value, json};

use crate::client::ClientError;
use crate::exec::{self, Outcome, Sink};
use crate::judge::Caller;

/// The protocol revision this server speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

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
}

impl Sink for Collected {
    fn stdout(&mut self, bytes: &[u8]) {
        self.stdout.extend_from_slice(bytes);
    }

    fn stderr(&mut self, bytes: &[u8]) {
        self.stderr.extend_from_slice(bytes);
    }
}

/// The server: who it acts for, and the directory commands run in by default.
pub struct Server {
    pub caller: Caller,
    pub cwd: PathBuf,
}

impl Server {
    /// Serves requests from `input` until it closes, one answer per line.
    pub fn serve(&self, input: impl BufRead, mut output: impl Write) -> io::Result<()> {
        for line in input.lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            if let Some(reply) = self.handle(&line) {
                writeln!(output, "{reply}")?;
                output.flush()?;
            }
        }
        Ok(())
    }

    /// The answer to one message; none for a notification.
    pub fn handle(&self, line: &str) -> Option<Value> {
        let message: Value = match serde_json::from_str(line) {
            Ok(message) => message,
            Err(e) => {
                return Some(error(
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
            return Some(error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "invalid request: a JSON-RPC 2.0 object with a method is expected (batches are not supported)",
            ));
        };
        // Notifications (no id) get no answer, known or not.
        let id = id?;
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        Some(match method {
            "initialize" => result(
                id,
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": { "tools": { "listChanged": false } },
                    "serverInfo": { "name": "praxis", "version": env!("CARGO_PKG_VERSION") },
                    "instructions": "run_command is the only way to run a shell command here: praxis decides before it runs (ALLOW runs it sandboxed; HOLD waits for an operator; STOP never runs) and audits every call.",
                }),
            ),
            "ping" => result(id, json!({})),
            "tools/list" => result(id, json!({ "tools": [tool_description()] })),
            "tools/call" => match self.call(&id, &params) {
                Ok(value) => result(id, value),
                Err(why) => error(id, INVALID_PARAMS, &why),
            },
            other => error(id, METHOD_NOT_FOUND, &format!("method not found: {other}")),
        })
    }

    /// Runs `run_command` and returns the tool result.
    fn call(&self, id: &Value, params: &Value) -> Result<Value, String> {
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
        Ok(self.run(command, cwd, timeout_secs, call_id))
    }

    fn run(
        &self,
        command: &str,
        cwd: PathBuf,
        timeout_secs: Option<u64>,
        call_id: String,
    ) -> Value {
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
            command: Command::Shell(command.to_owned()),
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
            env: praxis_proto::forwarded_env(),
            timeout_secs,
            approval_token: None,
        };
        let mut out = Collected::default();
        match exec::run(request, stdin, cwd_dir, &mut out, |_| {}) {
            Ok(Outcome::Refused(frame)) => refused(Some(&frame), frame.decision, &frame.reason),
            Ok(outcome @ Outcome::Exited(_)) => {
                let code = match outcome.exit_code() {
                    Ok(code) => code,
                    Err(e) => return refused(None, Verdict::Hold, &e.to_string()),
                };
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                let mut text = format!("exit code: {code}\n");
                if !stdout.is_empty() {
                    text.push_str(&format!("stdout:\n{stdout}"));
                }
                if !stderr.is_empty() {
                    text.push_str(&format!("stderr:\n{stderr}"));
                }
                json!({
                    "content": [{ "type": "text", "text": text }],
                    "structuredContent": {
                        "decision": "ALLOW",
                        "exit_code": code,
                        "stdout": stdout,
                        "stderr": stderr,
                    },
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

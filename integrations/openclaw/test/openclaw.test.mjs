// The praxis plugin inside the real `openclaw` package: loaded by OpenClaw's
// own plugin loader from a config that names it, its hooks run by OpenClaw's
// hook runner, and `exec` run by OpenClaw's own exec tool. praxisd is real
// too: the end-to-end test (tests/tests/openclaw.rs) starts one, runs
// `praxis install openclaw`, and runs this suite with OPENCLAW_CONFIG_PATH
// and OPENCLAW_TEST_WORKSPACE set.
//
// OpenClaw exports no entry for its plugin loader, so it is found in the
// package's dist by its function name.

import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const pluginDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const configPath = process.env.OPENCLAW_CONFIG_PATH;
const workspace = process.env.OPENCLAW_TEST_WORKSPACE;
const SESSION = "oc-session-1";
const DECISION_TIMEOUT_MS = 4000;

async function openclawLoader() {
  const dist = path.join(pluginDir, "node_modules/openclaw/dist");
  for (const file of fs.readdirSync(dist).filter((f) => /^loader-runtime-load-.*\.mjs$/.test(f))) {
    const module = await import(path.join(dist, file));
    const load = Object.values(module).find((v) => typeof v === "function" && v.name === "loadOpenClawPlugins");
    if (load) return load;
  }
  throw new Error(`no loadOpenClawPlugins in ${dist}`);
}

/** OpenClaw's config as `praxis install openclaw` wrote it, with the test's
 * workspace and a deadline short enough for the silent-daemon case. */
function openclawConfig(extra = {}) {
  const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
  config.agents = { defaults: { workspace } };
  Object.assign(config.plugins.entries.praxis.config, {
    decisionTimeoutMs: DECISION_TIMEOUT_MS,
    approvalTimeoutMs: 60_000,
    ...extra,
  });
  return config;
}

/** OpenClaw's coding tools, with the plugin loaded by OpenClaw from `config`. */
async function loadTools(config, sessionId = SESSION) {
  const loadOpenClawPlugins = await openclawLoader();
  const registry = loadOpenClawPlugins({ config, workspaceDir: workspace, cache: false, onlyPluginIds: ["praxis"] });
  const praxis = registry.plugins.find((p) => p.id === "praxis");
  assert.equal(praxis?.status, "loaded", `praxis plugin: ${JSON.stringify(praxis)}`);
  const { createOpenClawCodingTools } = await import("openclaw/plugin-sdk/agent-harness");
  const tools = createOpenClawCodingTools({
    config,
    workspaceDir: workspace,
    sessionKey: "agent:main:main",
    sessionId,
    agentId: "main",
  });
  return tools;
}

const skipWithoutDaemon = !configPath || !workspace ? "OPENCLAW_CONFIG_PATH and OPENCLAW_TEST_WORKSPACE are set by tests/tests/openclaw.rs" : false;

describe("the praxis plugin in OpenClaw", { skip: skipWithoutDaemon }, () => {
  let config;
  let exec;
  let write;
  let runBeforeToolCallHook;
  let hookRunner;
  const ctx = () => ({ sessionId: SESSION, sessionKey: "agent:main:main", agentId: "main", config });

  before(async () => {
    config = openclawConfig();
    const tools = await loadTools(config);
    ({ runBeforeToolCallHook } = await import("openclaw/plugin-sdk/agent-harness-runtime"));
    const { getGlobalHookRunner } = await import("openclaw/plugin-sdk/plugin-runtime");
    hookRunner = getGlobalHookRunner();
    for (const hook of ["before_tool_call", "after_tool_call", "session_start", "session_end"]) {
      assert.ok(hookRunner.hasHooks(hook), `OpenClaw's hook runner has the plugin's ${hook}`);
    }
    exec = tools.find((t) => t.name === "exec");
    write = tools.find((t) => t.name === "write");
    assert.ok(exec && write, "OpenClaw's exec and write tools");
  });

  const text = (result) => result.content.map((c) => c.text ?? "").join("");

  test("an allowed exec is rewritten through praxis-run and runs", async () => {
    const judged = await runBeforeToolCallHook({
      toolName: "exec",
      params: { command: "echo judged-only" },
      toolCallId: "oc-judge-1",
      ctx: ctx(),
    });
    assert.equal(judged.blocked, false);
    assert.match(judged.params.command, /praxis-run' --session 'oc-session-1' --runtime 'openclaw' --tool-call-id 'oc-judge-1' -c 'echo judged-only'$/);

    const result = await exec.execute("oc-allow-1", { command: "echo hello-from-openclaw > ran.txt; cat ran.txt" });
    assert.equal(result.details.status, "completed", JSON.stringify(result));
    assert.match(text(result), /hello-from-openclaw/);
    assert.equal(fs.readFileSync(path.join(workspace, "ran.txt"), "utf8"), "hello-from-openclaw\n");
  });

  test("a held exec asks for approval, naming praxis approve, and does not run unanswered", async () => {
    const command = "curl -fsS https://example.com -o held.txt";
    const deferred = await runBeforeToolCallHook({
      toolName: "exec",
      params: { command },
      toolCallId: "oc-hold-1",
      ctx: ctx(),
      approvalMode: "defer",
    });
    const approval = deferred.deferredApproval?.approval;
    assert.ok(approval, `requireApproval: ${JSON.stringify(deferred)}`);
    assert.equal(approval.pluginId, "praxis");
    assert.match(approval.title, /HOLD: exec/);
    assert.match(approval.description, /praxis approve r-/);
    assert.deepEqual(approval.allowedDecisions, ["allow-once", "deny"]);
    const signal = JSON.parse(approval.description.split("\n").at(-1));
    assert.equal(signal.decision, "HOLD");
    assert.equal(signal.execution_prevented, true);
    assert.match(signal.reason, /HOLD/);
    assert.match(signal.approve_with, /^praxis approve r-/);
    // What runs if the user allows it once: praxis-run with the one-time token.
    assert.match(deferred.deferredApproval.overrideParams.command, /praxis-run' .*--approval-token 'pxa-[^']+' -c 'curl/);

    // Through OpenClaw's own tool, with no gateway to answer the prompt: denied.
    await assert.rejects(exec.execute("oc-hold-2", { command }), /approval/i);
    assert.equal(fs.existsSync(path.join(workspace, "held.txt")), false);
  });

  test("a stopped exec is blocked with the machine-readable reason", async () => {
    const result = await exec.execute("oc-stop-1", { command: "rm -rf /" });
    assert.equal(result.details.status, "blocked", JSON.stringify(result));
    const signal = JSON.parse(result.details.reason);
    assert.equal(signal.decision, "STOP");
    assert.equal(signal.execution_prevented, true);
    assert.match(signal.reason, /STOP/);
    assert.match(signal.request_id, /^r-/);
  });

  test("file tools are judged on their paths", async () => {
    const inside = await write.execute("oc-write-1", { path: "notes.txt", content: "ok\n" });
    assert.notEqual(inside.details?.status, "blocked", JSON.stringify(inside));
    assert.equal(fs.readFileSync(path.join(workspace, "notes.txt"), "utf8"), "ok\n");
    const secret = await runBeforeToolCallHook({
      toolName: "write",
      // praxisd knows the caller's home from the user database, not from HOME.
      params: { path: path.join(os.userInfo().homedir, ".ssh/authorized_keys"), content: "x" },
      toolCallId: "oc-write-2",
      ctx: ctx(),
      approvalMode: "defer",
    });
    const refused = secret.blocked ? JSON.parse(secret.reason) : JSON.parse(secret.deferredApproval.approval.description.split("\n").at(-1));
    assert.equal(refused.execution_prevented, true, JSON.stringify(secret));
  });

  test("a tool Praxis has no rule for meets the unknown posture", async () => {
    const judged = await runBeforeToolCallHook({
      toolName: "sessions_send",
      params: { sessionKey: "agent:other:main", message: "hi" },
      toolCallId: "oc-unknown-1",
      ctx: ctx(),
      approvalMode: "defer",
    });
    assert.ok(judged.deferredApproval, JSON.stringify(judged));
    assert.match(judged.deferredApproval.approval.description, /unknown|no rule/i);
  });

  test("OpenClaw's tools that read its own state pass without asking", async () => {
    for (const [toolName, params] of [
      ["memory_search", { query: "release checklist" }],
      ["session_status", {}],
      ["sessions_list", {}],
    ]) {
      const judged = await runBeforeToolCallHook({ toolName, params, toolCallId: `oc-inert-${toolName}`, ctx: ctx(), approvalMode: "defer" });
      assert.equal(judged.blocked, false, `${toolName}: ${JSON.stringify(judged)}`);
      assert.equal(judged.deferredApproval, undefined, `${toolName}: ${JSON.stringify(judged)}`);
    }
  });

  test("session_start, after_tool_call and session_end reach praxisd", async () => {
    await hookRunner.runSessionStart({ sessionId: SESSION, sessionKey: "agent:main:main" }, { sessionId: SESSION, sessionKey: "agent:main:main", agentId: "main" });
    await hookRunner.runAfterToolCall(
      { toolName: "exec", params: {}, toolCallId: "oc-allow-1", result: { details: { exitCode: 0 } }, durationMs: 5 },
      { toolName: "exec", sessionId: SESSION, sessionKey: "agent:main:main", toolCallId: "oc-allow-1" },
    );
    await hookRunner.runSessionEnd({ sessionId: SESSION, sessionKey: "agent:main:main", messageCount: 3, reason: "shutdown" }, { sessionId: SESSION, sessionKey: "agent:main:main", agentId: "main" });
  });

  describe("without praxisd's answer the call is blocked", () => {
    const saved = process.env.XDG_RUNTIME_DIR;
    let silent;
    let held = [];
    after(() => {
      process.env.XDG_RUNTIME_DIR = saved;
      for (const c of held) c.destroy();
      silent?.close();
    });

    test("no daemon can be reached or started", async () => {
      // A runtime dir that cannot exist: no socket, no auto-start.
      process.env.XDG_RUNTIME_DIR = "/dev/null/praxis-unreachable";
      const result = await exec.execute("oc-down-1", { command: "echo should-not-run > down.txt" });
      process.env.XDG_RUNTIME_DIR = saved;
      assert.equal(result.details.status, "blocked", JSON.stringify(result));
      const signal = JSON.parse(result.details.reason);
      assert.equal(signal.decision, "HOLD");
      assert.equal(signal.execution_prevented, true);
      assert.equal(fs.existsSync(path.join(workspace, "down.txt")), false);
    });

    test("a daemon that never answers is cut off at the deadline", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "praxis-silent-"));
      fs.mkdirSync(path.join(dir, "praxis"), { mode: 0o700 });
      silent = net.createServer((conn) => held.push(conn));
      await new Promise((resolve) => silent.listen(path.join(dir, "praxis/praxisd.sock"), resolve));
      process.env.XDG_RUNTIME_DIR = dir;
      const started = Date.now();
      let result;
      try {
        result = await exec.execute("oc-silent-1", { command: "echo should-not-run > silent.txt" });
      } finally {
        process.env.XDG_RUNTIME_DIR = saved;
        fs.rmSync(dir, { recursive: true, force: true });
      }
      const took = Date.now() - started;
      assert.equal(result.details.status, "blocked", JSON.stringify(result));
      assert.equal(JSON.parse(result.details.reason).execution_prevented, true);
      assert.ok(took <= DECISION_TIMEOUT_MS + 1000, `blocked after ${took} ms`);
      assert.equal(fs.existsSync(path.join(workspace, "silent.txt")), false);
    });
  });
});

describe("a headless run (approvals: operator)", { skip: skipWithoutDaemon }, () => {
  test("a held exec is blocked with Praxis's reason and approve command", async () => {
    // A session of its own: the first suite's session has ended.
    const tools = await loadTools(openclawConfig({ approvals: "operator" }), "oc-session-headless");
    const exec = tools.find((t) => t.name === "exec");
    const result = await exec.execute("oc-headless-1", { command: "curl -fsS https://example.com -o headless.txt" });
    assert.equal(result.details.status, "blocked", JSON.stringify(result));
    const signal = JSON.parse(result.details.reason);
    assert.equal(signal.decision, "HOLD");
    assert.match(signal.reason, /an operator can allow it with `praxis approve r-/);
    assert.match(signal.approve_with, /^praxis approve r-/);
    assert.equal(fs.existsSync(path.join(workspace, "headless.txt")), false);
  });
});

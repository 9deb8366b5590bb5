// The plugin's own failure paths, without OpenClaw: whatever goes wrong in
// asking praxisd becomes a block, never an allow.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { failClosed, readConfig, toResult } from "../dist/index.js";
import { callHook, readVerdict } from "../dist/praxis.js";

const event = { hook_event_name: "before_tool_call", session_id: "s", tool_name: "exec", tool_input: { command: "ls" } };

test("a praxis-run that cannot be started is an error, so a block", async () => {
  const err = await callHook(event, { praxisRun: "/nonexistent/praxis-run", deadlineMs: 2000 }).catch((e) => e);
  assert.match(err.message, /cannot run \/nonexistent\/praxis-run/);
  const result = failClosed(err);
  assert.equal(result.block, true);
  const signal = JSON.parse(result.blockReason);
  assert.deepEqual([signal.decision, signal.execution_prevented], ["HOLD", true]);
});

test("a praxis-run that outlives the deadline is killed and the call blocked", async () => {
  const started = Date.now();
  // A client stuck before it answers (a connect, a lock).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "praxis-stuck-"));
  try {
    const stuck = path.join(dir, "praxis-run");
    fs.writeFileSync(stuck, "#!/bin/sh\nexec sleep 30\n", { mode: 0o755 });
    const err = await callHook(event, { praxisRun: stuck, deadlineMs: 700 }).catch((e) => e);
    assert.match(err.message, /did not decide within 700 ms/);
    assert.ok(Date.now() - started < 2000);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("only a well-formed ALLOW with exit 0 allows", () => {
  const allow = JSON.stringify({ decision: "ALLOW", execution_prevented: false, reason: "ok" });
  assert.equal(readVerdict({ code: 0, stdout: allow, stderr: "" }).decision, "ALLOW");
  for (const out of [
    { code: 2, stdout: allow, stderr: "" },
    { code: 0, stdout: "", stderr: "" },
    { code: 0, stdout: "not json", stderr: "" },
    { code: 0, stdout: JSON.stringify({ decision: "MAYBE" }), stderr: "" },
    { code: 0, stdout: JSON.stringify({ decision: "ALLOW", execution_prevented: true, reason: "" }), stderr: "" },
  ]) {
    assert.throws(() => readVerdict(out), JSON.stringify(out));
  }
  const held = JSON.stringify({ decision: "HOLD", execution_prevented: true, reason: "r", request_id: "r-1" });
  const hold = readVerdict({ code: 0, stdout: held, stderr: "" });
  assert.deepEqual([hold.decision, hold.execution_prevented, hold.request_id], ["HOLD", true, "r-1"]);
  // praxis-run's refusal after an error (exit 2) is no decision to approve.
  assert.throws(() => readVerdict({ code: 2, stdout: held, stderr: "" }), /\(exit 2\)/);
});

test("decisions map to OpenClaw's results", () => {
  const cfg = readConfig({});
  assert.equal(cfg.decisionTimeoutMs, 10_000);
  assert.equal(toResult({ decision: "ALLOW", execution_prevented: false, reason: "" }, "read", cfg), undefined);
  assert.deepEqual(toResult({ decision: "ALLOW", execution_prevented: false, reason: "", params: { command: "x" } }, "exec", cfg), { params: { command: "x" } });
  const stop = toResult({ decision: "STOP", execution_prevented: true, reason: "no", request_id: "r-1" }, "exec", cfg);
  assert.equal(stop.block, true);
  assert.deepEqual(JSON.parse(stop.blockReason), { decision: "STOP", execution_prevented: true, reason: "no", request_id: "r-1", tier: null, approve_with: null });
  const hold = toResult({ decision: "HOLD", execution_prevented: true, reason: "held; `praxis approve r-2`", approve_with: "praxis approve r-2" }, "write", cfg);
  assert.equal(hold.block, undefined);
  assert.match(hold.requireApproval.description, /praxis approve r-2/);
  assert.throws(() => readConfig({ decisionTimeoutMs: "10" }));
});

test("a headless HOLD blocks with Praxis's reason and approve command", () => {
  const cfg = readConfig({ approvals: "operator" });
  const verdict = { decision: "HOLD", execution_prevented: true, reason: "praxis HOLD: held; an operator can allow it with `praxis approve r-3`", request_id: "r-3", approve_with: "praxis approve r-3" };
  const hold = toResult(verdict, "exec", cfg);
  assert.equal(hold.requireApproval, undefined);
  assert.equal(hold.block, true);
  const signal = JSON.parse(hold.blockReason);
  assert.equal(signal.decision, "HOLD");
  assert.match(signal.reason, /praxis approve r-3/);
  assert.equal(signal.approve_with, "praxis approve r-3");
  assert.throws(() => readConfig({ approvals: "nobody" }));
});

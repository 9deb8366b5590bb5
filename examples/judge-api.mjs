// A small client of praxisd's judge API (HTTP/1.1 JSON on the
// praxisd-api.sock Unix socket), shared by the examples here. No packages:
// Node's own http module speaks to a Unix socket.

import { createHash } from "node:crypto";
import http from "node:http";
import os from "node:os";
import path from "node:path";

/** The API socket: PRAXIS_API_SOCKET, else beside PRAXIS_SOCKET, else
 * praxisd's user-mode runtime dir. */
export function apiSocket(env = process.env) {
  if (env.PRAXIS_API_SOCKET) return env.PRAXIS_API_SOCKET;
  if (env.PRAXIS_SOCKET) return path.join(path.dirname(env.PRAXIS_SOCKET), "praxisd-api.sock");
  const runtime = env.XDG_RUNTIME_DIR ? path.join(env.XDG_RUNTIME_DIR, "praxis") : `/tmp/praxis-${os.userInfo().uid}`;
  return path.join(runtime, "praxisd-api.sock");
}

/** One request; resolves with the status and the JSON body, rejects with
 * the API's refusal (`error.message`, `error.field`) when it is not 200. */
export function call(method, route, body, socketPath = apiSocket()) {
  const text = body === undefined ? "" : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath,
        method,
        path: route,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) },
      },
      (res) => {
        let raw = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (raw += chunk));
        res.on("end", () => {
          const json = raw ? JSON.parse(raw) : null;
          if (res.statusCode === 200) resolve(json);
          else reject(new Error(`${method} ${route}: ${res.statusCode} ${json?.error?.message ?? raw} (field ${json?.error?.field ?? "-"})`));
        });
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

export const recall = (request) => call("POST", "/v1/judge/recall", request);
export const writeDecision = (decision) => call("POST", "/v1/judge/decisions", decision);
export const reviewQueue = () => call("GET", "/v1/review-queue");
export const review = (itemId, action) => call("POST", `/v1/review-queue/${encodeURIComponent(itemId)}/actions`, action);

/** A recall request (openbrain.judge.recall.v1) for one proposed action. */
export function recallRequest({ requestId, workspace, project = null, taskId = null, actionId, summary, actionType, tool, targetSystem = null, entities = {} }) {
  return {
    schema_version: "openbrain.judge.recall.v1",
    request_id: requestId,
    workspace_id: workspace,
    project_id: project,
    task_id: taskId,
    flow_id: null,
    action_id: actionId,
    query: { summary, action_type: actionType, tool_name: tool, target_system: targetSystem },
    entities: { people: [], orgs: [], repos: [], files: [], customers: [], systems: [], topics: [], ...entities },
    scope: { visibility: "workspace", include_unconfirmed: false, include_disputed: false, include_stale: false },
    limits: { max_items: 10, max_tokens: 2000, recency_days: 90 },
    policy: { allowed_use_policies: ["can_use_as_instruction", "can_use_as_evidence"], require_source_refs: false },
  };
}

const UNCHECKED = { authorization_check: "uncertain", evidence_check: "uncertain", policy_check: "not_applicable", sensitivity_check: "not_applicable", reversibility_check: "uncertain", quality_check: "not_applicable" };

/** A decision write-back (openbrain.judge.decision.v1). Its lessons and
 * constraints enter praxisd's review queue: a human confirms them before
 * they count. */
export function decisionRecord({ workspace, project = null, taskId = null, actionId, decisionId, idempotencyKey, decision, why, confidence = "medium", checks = {}, revision = null, escalation = null, memoryUsed = [], toWrite = {} }) {
  return {
    schema_version: "openbrain.judge.decision.v1",
    workspace_id: workspace,
    project_id: project,
    task_id: taskId,
    flow_id: null,
    action_id: actionId,
    decision_id: decisionId,
    idempotency_key: idempotencyKey,
    decision,
    reasoning_summary: why,
    confidence,
    judge: { kind: "rule", provider: null, model: null, policy_version: null },
    checks: { ...UNCHECKED, ...checks },
    required_revision: { summary: revision, revised_action_constraints: [] },
    escalation: escalation
      ? { required: true, reason: escalation.reason, owner: escalation.owner ?? null, due_at: null }
      : { required: false, reason: null, owner: null, due_at: null },
    memory_used: memoryUsed,
    memory_to_write: { decisions: [], lessons: [], failures: [], constraints: [], open_questions: [], ...toWrite },
    provenance: { default_status: "inferred", requires_review: true },
  };
}

/** The recalled memories a judge may follow as instructions, and those it
 * may only cite. */
export function byUse(recalled) {
  const instructions = recalled.memories.filter((m) => m.use_policy.policy === "can_use_as_instruction");
  const evidence = recalled.memories.filter((m) => m.use_policy.policy === "can_use_as_evidence");
  return { instructions, evidence };
}

/** The memories whose summary or content names one of `words`. */
export function mentioning(memories, words) {
  return memories.filter((m) => words.some((w) => m.summary.includes(w) || m.content.includes(w)));
}

/** The decision id and idempotency key of `verdict` on an action: the same
 * decision from the same memories is the same write (replayed when sent
 * again); a decision that new memories changed is a new one. */
export function keyed(prefix, actionId, verdict) {
  const basis = JSON.stringify([verdict.decision, (verdict.memoryUsed ?? []).map((m) => m.memory_id)]);
  const digest = createHash("sha256").update(basis).digest("hex").slice(0, 12);
  return { decisionId: `${prefix}/${actionId}/${digest}`, idempotencyKey: `${prefix}/${actionId}/${digest}` };
}

/** Runs an example over its proposals: for each, recalls (with the extra
 * recall fields `recallFields(proposal)` gives: `targetSystem`, `entities`),
 * decides with `judge(proposal, recalled)`, and writes the decision back.
 * Prints one line per action on stderr and, on stdout, one JSON object
 * with each action's decision. */
export async function decideAll({ example, prefix, workspace, project, task, proposals, judge, recallFields }) {
  const decisions = [];
  for (const proposal of proposals) {
    const recalled = await recall(
      recallRequest({
        requestId: `recall/${proposal.action_id}`,
        workspace,
        project,
        taskId: task,
        actionId: proposal.action_id,
        summary: proposal.summary,
        actionType: proposal.action_type,
        tool: proposal.tool,
        ...recallFields(proposal),
      }),
    );
    const verdict = judge(proposal, recalled);
    const written = await writeDecision(
      decisionRecord({
        workspace,
        project,
        taskId: task,
        actionId: proposal.action_id,
        ...keyed(prefix, proposal.action_id, verdict),
        ...verdict,
      }),
    );
    console.error(`${verdict.decision.toUpperCase()} ${proposal.action_id}: ${verdict.why}`);
    decisions.push({
      action_id: proposal.action_id,
      decision: verdict.decision,
      recalled: recalled.memories.map((m) => m.memory_id),
      memory_used: (verdict.memoryUsed ?? []).map((m) => m.memory_id),
      decision_id: written.decision_id,
      replayed: written.replayed,
      memories_proposed: written.memories_proposed,
    });
  }
  console.log(JSON.stringify({ example, workspace, decisions }));
}

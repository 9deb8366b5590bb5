// TaskFlow Work Log: before a handoff or a tool action of a task, recall the
// task's context, earlier decisions, blockers, user-confirmed constraints
// and open questions from praxisd (POST /v1/judge/recall), decide whether
// the current work record supports it, and write the decision and what the
// record adds back (POST /v1/judge/decisions).
//
// Usage: node run.mjs [WORKLOG.json] [--workspace DIR]
// Prints one JSON object: each action's decision.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { byUse, decideAll, mentioning } from "../judge-api.mjs";

const args = process.argv.slice(2);
const at = args.indexOf("--workspace");
const workspace = path.resolve(at >= 0 ? args.splice(at, 2)[1] : process.cwd());
const file = args[0] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "worklog.json");
const { task, project, record, proposals } = JSON.parse(fs.readFileSync(file, "utf8"));

const open = (kind) => record.filter((e) => e.kind === kind && !e.resolved).map((e) => e.text);
const texts = (kind) => record.filter((e) => e.kind === kind).map((e) => e.text);

/** The judge: a handoff is supported only when the record leaves no
 * blocker or question open; a tool action only when a confirmed
 * instruction names its target, else it is revised to cite the record. */
function judge(proposal, recalled) {
  const used = byUse(recalled);
  if (proposal.kind === "handoff") {
    const unresolved = [...open("blocker"), ...open("question")];
    if (unresolved.length > 0) {
      return {
        decision: "escalate",
        why: `${proposal.summary}: the work record leaves ${unresolved.length} item(s) open`,
        checks: { evidence_check: "fail", quality_check: "fail" },
        escalation: { reason: `open in the work record: ${unresolved.join("; ")}`, owner: "task owner" },
        memoryUsed: used.evidence.map((m) => ({ memory_id: m.memory_id, used_as: "evidence" })),
        toWrite: { open_questions: unresolved },
      };
    }
    return {
      decision: "allow",
      why: `${proposal.summary}: nothing in the work record is open`,
      confidence: "high",
      checks: { evidence_check: "pass", quality_check: "pass" },
      toWrite: { decisions: [`handoff: ${proposal.summary}`] },
    };
  }
  const instructions = mentioning(used.instructions, proposal.topics ?? []);
  if (instructions.length > 0) {
    return {
      decision: "allow",
      why: `${proposal.summary}: a confirmed rule covers it (${instructions[0].summary})`,
      confidence: "high",
      checks: { authorization_check: "pass", evidence_check: "pass", policy_check: "pass" },
      memoryUsed: instructions.map((m) => ({ memory_id: m.memory_id, used_as: "instruction" })),
      toWrite: { decisions: [...texts("decision"), `${proposal.summary}: allowed`], constraints: texts("constraint") },
    };
  }
  return {
    decision: "revise",
    why: `${proposal.summary}: no confirmed rule covers it`,
    checks: { authorization_check: "uncertain" },
    revision: "name the work-record decision that asks for it, or ask the operator",
    memoryUsed: used.evidence.map((m) => ({ memory_id: m.memory_id, used_as: "evidence" })),
    toWrite: { constraints: texts("constraint") },
  };
}

await decideAll({
  example: "taskflow-work-log",
  prefix: "taskflow",
  workspace,
  project,
  task,
  proposals,
  judge,
  recallFields: (proposal) => ({ entities: { topics: proposal.topics ?? [] } }),
});

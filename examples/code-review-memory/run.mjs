// Code Review Memory: before a code action or a review comment goes out,
// recall the repository's rules, earlier review corrections and the
// maintainers' preferences from praxisd (POST /v1/judge/recall), decide
// whether it moves forward, is revised or goes to a human, and write the
// decision back (POST /v1/judge/decisions) so the next review starts from it.
//
// Usage: node run.mjs [PROPOSALS.json] [--workspace DIR]
// The workspace (default: the current directory) is the repository whose
// memories are recalled. Prints one JSON object: each action's decision.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { byUse, decideAll, mentioning } from "../judge-api.mjs";

const args = process.argv.slice(2);
const at = args.indexOf("--workspace");
const workspace = path.resolve(at >= 0 ? args.splice(at, 2)[1] : process.cwd());
const file = args[0] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "proposals.json");
const { project, task, proposals } = JSON.parse(fs.readFileSync(file, "utf8"));

/** The judge: a confirmed instruction naming the action's target lets it
 * go; evidence alone asks for a revision that cites it; with nothing
 * recalled, a maintainer decides. */
function judge(proposal, recalled) {
  const used = byUse(recalled);
  const instructions = mentioning(used.instructions, proposal.topics ?? []);
  const evidence = [...used.evidence, ...used.instructions.filter((m) => !instructions.includes(m))];
  if (instructions.length > 0) {
    return {
      decision: "allow",
      why: `${proposal.summary}: covered by a confirmed rule (${instructions[0].summary})`,
      confidence: "high",
      checks: { authorization_check: "pass", evidence_check: "pass", policy_check: "pass" },
      memoryUsed: instructions.map((m) => ({ memory_id: m.memory_id, used_as: "instruction" })),
      toWrite: { decisions: [`${proposal.kind} allowed: ${proposal.summary}`] },
    };
  }
  if (evidence.length > 0) {
    return {
      decision: "revise",
      why: `${proposal.summary}: earlier reviews bear on it but none is a confirmed rule`,
      checks: { evidence_check: "uncertain" },
      revision: `cite what earlier reviews said: ${evidence.map((m) => m.summary).join("; ")}`,
      memoryUsed: evidence.map((m) => ({ memory_id: m.memory_id, used_as: "evidence" })),
      toWrite: { lessons: [`${proposal.kind} on ${proposal.tool} needs the earlier review cited`] },
    };
  }
  return {
    decision: "escalate",
    why: `${proposal.summary}: no repository rule, review correction or maintainer preference covers it`,
    confidence: "low",
    checks: { authorization_check: "fail", evidence_check: "fail" },
    escalation: { reason: "no recalled rule covers this review action", owner: "maintainers" },
    toWrite: { open_questions: [`do the maintainers want ${proposal.kind} like: ${proposal.summary}?`] },
  };
}

await decideAll({
  example: "code-review-memory",
  prefix: "code-review",
  workspace,
  project,
  task,
  proposals,
  judge,
  recallFields: (proposal) => ({
    targetSystem: proposal.target_system,
    entities: { repos: [path.basename(workspace)], topics: proposal.topics ?? [] },
  }),
});

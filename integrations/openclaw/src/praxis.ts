// Talking to praxisd through `praxis-run hook openclaw`: one event as JSON on
// stdin, one answer as JSON on stdout. praxis-run owns the protocol, the
// policy input and the audit; this module only bounds the call in time and
// reads the answer. Anything short of a well-formed answer is a refusal.

import { spawn } from "node:child_process";

/** The event names praxis-run understands, as OpenClaw names its hooks. */
export type HookEventName = "before_tool_call" | "after_tool_call" | "session_start" | "session_end";

/** What the plugin sends (the field names praxis-run's hook adapters read). */
export interface HookEvent {
  hook_event_name: HookEventName;
  session_id: string;
  tool_name?: string;
  tool_input?: Record<string, unknown>;
  tool_use_id?: string;
  tool_response?: Record<string, unknown>;
  cwd?: string;
  /** Who answers a HOLD; with "operator" praxis-run mints no one-time token. */
  approvals?: Approvals;
}

/** Who answers a HOLD: OpenClaw's approval prompt, or only an operator's
 * `praxis approve` (a headless run, where no prompt can be answered). */
export type Approvals = "openclaw" | "operator";

export type Decision = "ALLOW" | "HOLD" | "STOP";

/** praxisd's decision on one tool call, as praxis-run reports it. */
export interface Verdict {
  decision: Decision;
  execution_prevented: boolean;
  reason: string;
  request_id?: string | null;
  tier?: string | null;
  approve_with?: string | null;
  /** The tool's parameters rewritten to run through praxis-run (shell tools). */
  params?: Record<string, unknown>;
}

export interface CallOptions {
  praxisRun: string;
  /** Wall-clock limit for the whole call, praxis-run's start included. */
  deadlineMs: number;
  signal?: AbortSignal;
}

/** Why praxis-run gave no usable answer. */
export class PraxisCallError extends Error {}

/** Seconds left to praxisd's decision inside praxis-run: its own watchdog
 * (this plus two seconds) answers before this process gives up on it. */
function innerDeadlineSecs(deadlineMs: number): string {
  return String(Math.max(0.5, (deadlineMs - 3000) / 1000));
}

/** Runs `praxis-run hook openclaw` with `event`; resolves with its exit code
 * and stdout, rejects when it cannot start, is cancelled or misses the deadline
 * (then it is killed). */
export function callHook(
  event: HookEvent,
  options: CallOptions,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(new PraxisCallError("the tool call was cancelled before praxisd decided"));
      return;
    }
    const child = spawn(options.praxisRun, ["hook", "openclaw"], {
      env: { ...process.env, PRAXIS_DECISION_TIMEOUT: innerDeadlineSecs(options.deadlineMs) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      outcome();
    };
    const giveUp = (why: string) => {
      child.kill("SIGKILL");
      finish(() => reject(new PraxisCallError(why)));
    };
    const timer = setTimeout(
      () => giveUp(`praxisd did not decide within ${options.deadlineMs} ms`),
      options.deadlineMs,
    );
    const onAbort = () => giveUp("the tool call was cancelled before praxisd decided");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", (err) =>
      finish(() => reject(new PraxisCallError(`cannot run ${options.praxisRun}: ${err.message}`))),
    );
    child.on("close", (code) => finish(() => resolve({ code, stdout, stderr })));
    // praxis-run may exit before reading everything; its answer says why.
    child.stdin.on("error", () => undefined);
    child.stdin.end(JSON.stringify(event));
  });
}

/** The last JSON object line of `text`, if any. */
function lastJsonLine(text: string): Record<string, unknown> | undefined {
  const lines = text.split("\n").filter((line) => line.trim().startsWith("{"));
  const last = lines.at(-1);
  if (last === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(last);
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const DECISIONS: readonly string[] = ["ALLOW", "HOLD", "STOP"];

/** Reads praxis-run's answer to `before_tool_call`: a decision of praxisd
 * comes with exit status 0 (an ALLOW also with `execution_prevented: false`);
 * anything else is an error, which the caller turns into a block. */
export function readVerdict(out: { code: number | null; stdout: string; stderr: string }): Verdict {
  const answer = lastJsonLine(out.stdout);
  const decision = answer?.decision;
  if (answer === undefined || typeof decision !== "string" || !DECISIONS.includes(decision)) {
    const detail = (out.stderr.trim() || out.stdout.trim()).slice(0, 500);
    throw new PraxisCallError(`praxis-run gave no decision (exit ${out.code})${detail ? `: ${detail}` : ""}`);
  }
  const reason = typeof answer.reason === "string" ? answer.reason : "";
  // Exit 0 is praxisd's decision; any other status is praxis-run's own
  // refusal after an error (no request, nothing to approve).
  if (out.code !== 0) {
    throw new PraxisCallError(`${reason || "praxis-run failed"} (exit ${out.code})`);
  }
  if (decision === "ALLOW" && answer.execution_prevented !== false) {
    throw new PraxisCallError(`praxis-run answered ALLOW with execution_prevented: ${reason}`);
  }
  const text = (key: string) => (typeof answer[key] === "string" ? (answer[key] as string) : null);
  const params = answer.params;
  return {
    decision: decision as Decision,
    execution_prevented: decision !== "ALLOW",
    reason,
    request_id: text("request_id"),
    tier: text("tier"),
    approve_with: text("approve_with"),
    ...(params !== null && typeof params === "object" && !Array.isArray(params)
      ? { params: params as Record<string, unknown> }
      : {}),
  };
}

/** Reads praxis-run's answer to an observed event: true when praxisd
 * recorded it, false when there is nothing to record; an error otherwise. */
export function readRecorded(out: { code: number | null; stdout: string; stderr: string }): boolean {
  const answer = lastJsonLine(out.stdout);
  if (out.code === 0 && typeof answer?.recorded === "boolean") return answer.recorded;
  const why = typeof answer?.reason === "string" ? answer.reason : out.stderr.trim();
  throw new PraxisCallError(`praxisd did not record the event (exit ${out.code}): ${why}`);
}

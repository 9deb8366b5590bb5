// The Praxis plugin for OpenClaw. `before_tool_call` asks praxisd about every
// tool call (through `praxis-run hook openclaw`) and maps its decision:
//   ALLOW -> the call goes ahead; a shell command is rewritten to run
//            through praxis-run (sandbox, credentials, audit);
//   HOLD  -> OpenClaw's requireApproval, denied when nobody answers; with
//            `approvals: "operator"` (headless runs) a block that carries
//            Praxis's reason and `praxis approve` command instead;
//   STOP  -> block, with the reason.
// Every failure (praxis-run missing, praxisd unreachable or silent past the
// deadline, a malformed answer, a bug here) blocks: nothing fails open.
// `after_tool_call`, `session_start` and `session_end` are forwarded so the
// audit holds the trajectory; their failures are logged, since OpenClaw
// does not let observers veto.

import path from "node:path";

import {
  type Approvals,
  callHook,
  type HookEvent,
  type HookEventName,
  readRecorded,
  readVerdict,
  type Verdict,
} from "./praxis.js";

export const PLUGIN_ID = "praxis";

/** OpenClaw's default budget for one before_tool_call handler (it blocks the
 * call when a handler exceeds it); our deadline stays inside it. */
export const OPENCLAW_HOOK_TIMEOUT_MS = 15_000;
export const DEFAULT_DECISION_TIMEOUT_MS = 10_000;
export const DEFAULT_APPROVAL_TIMEOUT_MS = 300_000;

export interface PraxisPluginConfig {
  praxisRun: string;
  decisionTimeoutMs: number;
  approvalTimeoutMs: number;
  approvals: Approvals;
  workspace?: string;
}

/** The machine-readable signal every HOLD and STOP carries. */
export interface RefusalSignal {
  decision: "HOLD" | "STOP";
  execution_prevented: true;
  reason: string;
  request_id: string | null;
  tier: string | null;
  approve_with: string | null;
}

/** The subset of OpenClaw's before_tool_call result this plugin returns. */
export interface BeforeToolCallResult {
  params?: Record<string, unknown>;
  block?: boolean;
  blockReason?: string;
  requireApproval?: {
    title: string;
    description: string;
    severity: "warning";
    timeoutMs: number;
    allowedDecisions: Array<"allow-once" | "deny">;
  };
}

/** The parts of OpenClaw's hook events and contexts the plugin reads. */
interface ToolEvent {
  toolName: string;
  params: Record<string, unknown>;
  toolCallId?: string;
  result?: unknown;
  error?: string;
  durationMs?: number;
}
interface HookContext {
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  toolCallId?: string;
  abortSignal?: AbortSignal;
}
interface SessionEvent {
  sessionId: string;
  sessionKey?: string;
}
interface PluginApi {
  config: unknown;
  pluginConfig?: Record<string, unknown>;
  logger: { info(message: string): void; warn(message: string): void; error(message: string): void };
  runtime?: { agent?: { resolveAgentWorkspaceDir?: (config: unknown, agentId: string) => string } };
  on(hook: string, handler: (event: never, ctx: never) => unknown, options?: { priority?: number; timeoutMs?: number }): void;
}

/** The plugin's settings, with defaults; throws on a value of the wrong kind. */
export function readConfig(raw: Record<string, unknown> | undefined): PraxisPluginConfig {
  const cfg = raw ?? {};
  const text = (key: string): string | undefined => {
    const value = cfg[key];
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value.trim() === "") throw new Error(`plugins.entries.praxis.config.${key} must be a non-empty string`);
    return value;
  };
  const millis = (key: string, fallback: number, min: number): number => {
    const value = cfg[key];
    if (value === undefined) return fallback;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
      throw new Error(`plugins.entries.praxis.config.${key} must be an integer of at least ${min} (ms)`);
    }
    return value;
  };
  const workspace = text("workspace");
  const approvals = text("approvals") ?? "openclaw";
  if (approvals !== "openclaw" && approvals !== "operator") {
    throw new Error(`plugins.entries.praxis.config.approvals must be "openclaw" or "operator"`);
  }
  return {
    approvals,
    praxisRun: text("praxisRun") ?? "praxis-run",
    decisionTimeoutMs: millis("decisionTimeoutMs", DEFAULT_DECISION_TIMEOUT_MS, 500),
    approvalTimeoutMs: millis("approvalTimeoutMs", DEFAULT_APPROVAL_TIMEOUT_MS, 1000),
    ...(workspace === undefined ? {} : { workspace }),
  };
}

/** The signal of a refusal, from praxisd or from a failure to ask it. */
export function refusal(verdict: Verdict): RefusalSignal {
  return {
    decision: verdict.decision === "STOP" ? "STOP" : "HOLD",
    execution_prevented: true,
    reason: verdict.reason,
    request_id: verdict.request_id ?? null,
    tier: verdict.tier ?? null,
    approve_with: verdict.approve_with ?? null,
  };
}

/** A block that says why: the reason OpenClaw shows is the signal as JSON. */
export function blocked(signal: RefusalSignal): BeforeToolCallResult {
  return { block: true, blockReason: JSON.stringify(signal) };
}

/** OpenClaw's answer for praxisd's decision on a call of `toolName`. */
export function toResult(verdict: Verdict, toolName: string, cfg: PraxisPluginConfig): BeforeToolCallResult | undefined {
  switch (verdict.decision) {
    case "ALLOW":
      return verdict.params === undefined ? undefined : { params: verdict.params };
    case "HOLD": {
      const signal = refusal(verdict);
      // Nobody can answer a prompt here (OpenClaw would tell the model only
      // that approval is unavailable): the model gets Praxis's reason, which
      // names the `praxis approve` command for an operator, and retries.
      if (cfg.approvals === "operator") return blocked(signal);
      // The description ends with the signal as one JSON line. Allowing once
      // runs the rewritten command (for shell tools: through praxis-run, with
      // the one-time token praxisd minted for this exact request).
      return {
        requireApproval: {
          title: `Praxis HOLD: ${toolName}`,
          description: `${verdict.reason}\n${JSON.stringify(signal)}`,
          severity: "warning",
          timeoutMs: cfg.approvalTimeoutMs,
          // A one-time token cannot back "allow always".
          allowedDecisions: ["allow-once", "deny"],
        },
        ...(verdict.params === undefined ? {} : { params: verdict.params }),
      };
    }
    case "STOP":
      return blocked(refusal(verdict));
  }
}

/** The blocking answer when praxisd could not be asked or answered badly. */
export function failClosed(err: unknown): BeforeToolCallResult {
  const why = err instanceof Error ? err.message : String(err);
  return blocked({
    decision: "HOLD",
    execution_prevented: true,
    reason: `praxis could not judge this tool call, so it does not run: ${why}`,
    request_id: null,
    tier: null,
    approve_with: null,
  });
}

function sessionOf(ctx: HookContext): string {
  return ctx.sessionId ?? ctx.sessionKey ?? "openclaw";
}

/** Facts about a tool's outcome, never its content. */
function outcomeFacts(event: ToolEvent): Record<string, unknown> {
  const facts: Record<string, unknown> = { is_error: event.error !== undefined };
  const details = (event.result as { details?: Record<string, unknown> } | undefined)?.details;
  if (typeof details?.exitCode === "number") facts.exit_code = details.exitCode;
  if (typeof event.durationMs === "number") facts.duration_ms = event.durationMs;
  return facts;
}

export function register(api: PluginApi): void {
  const cfg = readConfig(api.pluginConfig);
  if (cfg.decisionTimeoutMs >= OPENCLAW_HOOK_TIMEOUT_MS) {
    api.logger.warn(
      `praxis: decisionTimeoutMs ${cfg.decisionTimeoutMs} is not below OpenClaw's ${OPENCLAW_HOOK_TIMEOUT_MS} ms hook timeout; raise plugins.entries.praxis.hooks.timeouts.before_tool_call to match, or OpenClaw blocks first`,
    );
  }

  /** The directory a call acts in: the exec `workdir`, else the workspace. */
  const cwdOf = (event: ToolEvent, ctx: HookContext): string => {
    const workspace =
      cfg.workspace ??
      api.runtime?.agent?.resolveAgentWorkspaceDir?.(api.config, ctx.agentId ?? "main") ??
      process.cwd();
    const workdir = event.params.workdir;
    return typeof workdir === "string" && workdir.trim() !== "" ? path.resolve(workspace, workdir) : workspace;
  };

  const ask = (event: HookEvent, signal?: AbortSignal) =>
    callHook(event, { praxisRun: cfg.praxisRun, deadlineMs: cfg.decisionTimeoutMs, ...(signal ? { signal } : {}) });

  api.on(
    "before_tool_call",
    async (event: ToolEvent, ctx: HookContext): Promise<BeforeToolCallResult | undefined> => {
      try {
        const toolCallId = event.toolCallId ?? ctx.toolCallId;
        const out = await ask(
          {
            hook_event_name: "before_tool_call",
            session_id: sessionOf(ctx),
            tool_name: event.toolName,
            tool_input: event.params,
            ...(toolCallId ? { tool_use_id: toolCallId } : {}),
            cwd: cwdOf(event, ctx),
            approvals: cfg.approvals,
          },
          ctx.abortSignal,
        );
        return toResult(readVerdict(out), event.toolName, cfg);
      } catch (err) {
        return failClosed(err);
      }
    },
    // Runs after other plugins' handlers: each sees the original params and
    // the last returned params win, so what runs is what praxisd judged. The
    // host's budget stays above our own deadline, so our refusal is seen.
    { priority: -1000, timeoutMs: cfg.decisionTimeoutMs + 2000 },
  );

  const forward = async (name: HookEventName, event: HookEvent) => {
    try {
      if (!readRecorded(await ask(event))) {
        api.logger.info(`praxis: ${name} is not recorded by praxisd (no audit note for it yet)`);
      }
    } catch (err) {
      api.logger.error(`praxis: ${name} was not recorded: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  api.on("after_tool_call", (event: ToolEvent, ctx: HookContext) =>
    forward("after_tool_call", {
      hook_event_name: "after_tool_call",
      session_id: sessionOf(ctx),
      tool_name: event.toolName,
      ...((event.toolCallId ?? ctx.toolCallId) ? { tool_use_id: event.toolCallId ?? ctx.toolCallId } : {}),
      tool_response: outcomeFacts(event),
    }),
  );
  for (const name of ["session_start", "session_end"] as const) {
    api.on(name, (event: SessionEvent) =>
      forward(name, { hook_event_name: name, session_id: event.sessionId ?? event.sessionKey ?? "openclaw" }),
    );
  }
}

export default {
  id: PLUGIN_ID,
  name: "Praxis",
  description: "Every tool call is judged by praxisd before it runs; shell commands run through praxis-run.",
  register,
};

// Drives `praxis-run mcp` with the official MCP TypeScript SDK's stdio client:
// the tool list, an allowed, a held and a stopped call, five one-second calls
// at once with a ping among them, and one call cancelled by the client.
//
// Usage: node mcp_client.mjs PRAXIS_RUN
// Prints one JSON object; tests/tests/mcp.rs checks it against the audit log.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const praxisRun = process.argv[2];
if (!praxisRun) {
  console.error("usage: node mcp_client.mjs PRAXIS_RUN");
  process.exit(2);
}

const text = (result) =>
  result.content
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");

const summary = (result) => ({
  is_error: Boolean(result.isError),
  text: text(result),
  structured: result.structuredContent ?? null,
});

const run = (command) => client.callTool({ name: "run_command", arguments: { command } });

const client = new Client({ name: "praxis-e2e", version: "0.1.0" });
const transport = new StdioClientTransport({
  command: praxisRun,
  args: ["mcp"],
  env: process.env,
  cwd: process.cwd(),
  stderr: "inherit",
});
await client.connect(transport);

const tools = await client.listTools();
const allowed = await run("echo praxis-mcp-ok");
const held = await run("curl -fsS https://example.com");
const stopped = await run("rm -rf / --no-preserve-root");

const began = performance.now();
const calls = [0, 1, 2, 3, 4].map((i) => run(`sleep 1; echo call-${i}`));
const pinged = client.ping();
const parallel = await Promise.all(calls);
const parallelSeconds = (performance.now() - began) / 1000;
await pinged;

// Aborting the signal makes the SDK send notifications/cancelled.
const abort = new AbortController();
const cancelled = client
  .callTool({ name: "run_command", arguments: { command: "sleep 30" } }, undefined, { signal: abort.signal })
  .then(
    () => false,
    (err) => abort.signal.aborted || String(err),
  );
setTimeout(() => abort.abort("the test cancels it"), 1500);
const wasCancelled = await cancelled;
await new Promise((resolve) => setTimeout(resolve, 1000));
const after = await run("echo still-serving");

console.log(
  JSON.stringify({
    server: client.getServerVersion()?.name ?? null,
    tools: tools.tools.map((t) => ({ name: t.name, required: t.inputSchema.required ?? [] })),
    allowed: summary(allowed),
    held: summary(held),
    stopped: summary(stopped),
    parallel_seconds: parallelSeconds,
    texts: parallel.map(text),
    cancelled: wasCancelled,
    after: text(after),
  }),
);
await client.close();

// The endpoint process of the crash tests: the engine's services for one agent, served over HTTP/2
// on PORT, until it is killed. Plain JavaScript on the built package (the tests build dist first),
// so that a real `node` process runs exactly what an application would.
//
// Every tool execution and every model call appends a line to EXECUTIONS (one JSON object per line,
// written with fsync before and after the call), so the test can tell from the file alone what ran,
// how often, and whether a kill landed in the middle of a call. Each call holds for HOLD_MS.
//
// Environment: PORT, INGRESS_URL, PREFIX, EXECUTIONS, HOLD_MS (default 600).
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import http2 from "node:http2";
import { defineSession, currentToolCall } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import * as restate from "@restatedev/restate-sdk";
import { restateSessions } from "@durable-agents/engine-restate";

const { PORT, INGRESS_URL, PREFIX, EXECUTIONS } = process.env;
const holdMs = Number(process.env.HOLD_MS ?? 600);
const hold = () => new Promise((resolve) => setTimeout(resolve, holdMs));

function record(entry) {
  const fd = openSync(EXECUTIONS, "a");
  try {
    writeSync(fd, `${JSON.stringify({ ...entry, pid: process.pid, at: Date.now() })}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const tool = (name, parameters) => ({
  name,
  description: `The crash test's ${name} tool.`,
  parameters,
  async execute(args) {
    const call = currentToolCall();
    const entry = { kind: "tool", tool: name, key: call?.idempotencyKey, attempt: call?.attempt, args };
    record({ ...entry, event: "start" });
    await hold();
    record({ ...entry, event: "end" });
    return `${name} done for ${JSON.stringify(args)}`;
  },
});

const scripted = new ScriptedRunner({
  tools: [tool("charge", { amount: "number" }), tool("lookup", { id: "string" }), tool("refund", { amount: "number" })],
});

// The scripted runner with every model call recorded; a turn whose message says "slow model" holds its model calls.
const runner = {
  tools: () => scripted.tools(),
  userItem: (kind, text) => scripted.userItem(kind, text),
  callTool: (input) => scripted.callTool(input),
  async runModel(input) {
    const text = JSON.stringify(input.history[input.turnStart]?.item ?? null);
    const entry = { kind: "model", key: `${input.sessionId}/${input.turnId}/${input.modelStep}` };
    record({ ...entry, event: "start" });
    if (text.includes("slow model")) await hold();
    const result = await scripted.runModel(input);
    record({ ...entry, event: "end" });
    return result;
  },
};

const definition = defineSession({
  name: "crash",
  runner,
  policies: {
    charge: { effect: "non_idempotent_write", needsApproval: false },
    lookup: { effect: "read" },
    refund: { effect: "non_idempotent_write" },
  },
  modelRetry: { maxAttempts: 5, initialDelayMs: 10, maxDelayMs: 50 },
  toolBackoff: { initialDelayMs: 10, maxDelayMs: 50 },
});

const engine = restateSessions({ sessions: [definition], ingressUrl: INGRESS_URL, prefix: PREFIX });
const handler = restate.createEndpointHandler({ services: [...engine.services], logger: () => {} });
const server = http2.createServer(handler);
server.listen(Number(PORT), "127.0.0.1", () => process.stdout.write("ready\n"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));

/**
 * The MCP session scenarios every adapter runs, against real MCP server processes (stdio: the
 * toolset starts the server; Streamable HTTP: the test starts it on a loopback port, and SIGKILLs and
 * restarts it). Each scenario drives sessions through core's `SessionClient` and `Worker` on the
 * in-process store, with the adapter's scripted model following core's scripted rules.
 */
import assert from "node:assert/strict";
import {
  defineSession,
  PolicyError,
  SessionClient,
  Worker,
  type Runner,
  type SessionSnapshot,
  type ToolCallRecord,
  type ToolPolicies,
} from "@durable-agents/core";
import type { TestApi } from "@durable-agents/core/conformance";
import { MemoryStore } from "@durable-agents/core/testing";
import { metaKeys, readDurableMeta } from "../meta.js";
import { McpToolset } from "../toolset.js";
import type { McpTransportKind } from "./conformance.js";
import { McpTestServer, waitUntil, type HttpTestProcess, type TestTool } from "./test-servers.js";

export interface McpSessionSuiteOptions {
  readonly transport: McpTransportKind;
  /** The adapter's runner for an agent whose only tools are the toolset's, with its scripted model. */
  readonly makeRunner: (toolset: McpToolset) => Runner;
}

const item = { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] };

/** The warehouse the scenarios use: one tool per effect the hints can give, and tools that misbehave. */
const warehouseTools = (): TestTool[] => [
  {
    name: "check_stock",
    inputSchema: item,
    annotations: { readOnlyHint: true },
    behaviour: { kind: "content", text: "3 in stock", structured: { count: 3 } },
  },
  {
    name: "reserve_stock",
    inputSchema: item,
    annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: false },
    behaviour: { kind: "rpc_error", message: "the reservation service is busy", times: 2 },
  },
  {
    name: "scrap_stock",
    inputSchema: item,
    annotations: { readOnlyHint: false, destructiveHint: true },
    behaviour: { kind: "echo" },
  },
  { name: "note_stock", inputSchema: item, behaviour: { kind: "echo" } },
  {
    name: "count_slowly",
    inputSchema: item,
    annotations: { readOnlyHint: true },
    behaviour: { kind: "hang", attempts: [1] },
  },
  {
    name: "ship_now",
    inputSchema: item,
    annotations: { destructiveHint: true },
    behaviour: { kind: "hang" },
  },
  {
    name: "audit_stock",
    inputSchema: item,
    annotations: { readOnlyHint: true },
    behaviour: { kind: "is_error", text: "the audit log is sealed" },
  },
];

interface Env {
  readonly server: McpTestServer;
  readonly toolset: McpToolset;
  readonly client: SessionClient;
  readonly runner: Runner;
  /** The HTTP server process (HTTP transport only). */
  http: HttpTestProcess | undefined;
  /** Kills the server process mid-call and starts it again (stdio: the toolset starts it on the next call). */
  killServer(options?: { restart?: boolean }): Promise<void>;
  start(message: string): Promise<string>;
}

const callOf = (snapshot: SessionSnapshot, name: string): ToolCallRecord => {
  const call = snapshot.turn?.calls.find((c) => c.name === name);
  assert.ok(call, `the turn has a ${name} call`);
  return call;
};

export function mcpSessionSuite(t: TestApi, options: McpSessionSuiteOptions): void {
  const live: (() => Promise<void>)[] = [];
  const teardown = async () => {
    for (const stop of live.splice(0).reverse()) await stop();
  };
  t.afterEach?.(teardown);

  const setup = async (
    settings: { policies?: ToolPolicies; toolBackoffMs?: number; tools?: TestTool[] } = {},
  ): Promise<Env> => {
    const server = new McpTestServer(settings.tools ?? warehouseTools());
    live.push(() => server.dispose());
    let http: HttpTestProcess | undefined;
    if (options.transport === "http") http = await server.startHttp();
    const toolset = await McpToolset.connect([
      http ? McpTestServer.http("warehouse", http.url) : server.stdio("warehouse"),
    ]);
    live.push(() => toolset.close());
    const runner = options.makeRunner(toolset);
    const definition = defineSession({
      name: "warehouse",
      runner,
      ...(settings.policies ? { policies: settings.policies } : {}),
      toolBackoff: { initialDelayMs: settings.toolBackoffMs ?? 5, maxDelayMs: settings.toolBackoffMs ?? 20 },
    });
    const store = new MemoryStore();
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20, onError: () => {} }).start();
    live.push(() => worker.stop({ timeoutMs: 2_000 }));
    const client = new SessionClient({ store });
    const env: Env = {
      server,
      toolset,
      client,
      runner,
      http,
      async killServer({ restart = true } = {}) {
        if (env.http) {
          const port = env.http.port;
          await env.http.kill();
          if (restart) env.http = await server.startHttp(port);
        } else {
          const pid = toolset.serverProcessId("warehouse");
          assert.ok(pid, "the stdio server runs");
          process.kill(pid, "SIGKILL");
        }
      },
      start: async (message) => (await client.startSession({ agent: "warehouse", message })).sessionId,
    };
    return env;
  };

  const steps = async (env: Env, sessionId: string) =>
    (await env.client.steps(sessionId)).map((s) => (s.step === "AwaitToolApproval" ? `${s.step}:${s.detail}` : s.step));

  const scenario = (name: string, body: () => Promise<void>) =>
    t.it(
      name,
      async () => {
        try {
          await body();
        } finally {
          if (!t.afterEach) await teardown();
        }
      },
      60_000,
    );

  t.describe(`MCP tools over ${options.transport}`, () => {
    scenario("the runner reports each MCP tool with the effect its hints imply", async () => {
      const env = await setup();
      const effects = Object.fromEntries(env.runner.tools().map((tool) => [tool.name, tool.defaultEffect]));
      assert.deepEqual(effects, {
        check_stock: "read",
        reserve_stock: "idempotent_write",
        scrap_stock: "unclassified",
        note_stock: "unclassified",
        count_slowly: "read",
        ship_now: "unclassified",
        audit_stock: "read",
      });
      assert.ok(env.runner.tools().every((tool) => tool.approval === "never"));
    });

    scenario("a read-only MCP tool is a CallTool step; its text reaches the model", async () => {
      const env = await setup();
      const sessionId = await env.start('call check_stock {"sku":"A-1"}');
      const done = await env.client.waitUntilIdle(sessionId);
      assert.deepEqual(await steps(env, sessionId), ["RunModel", "CallTool", "ResumeTurn", "RunModel"]);
      assert.equal(callOf(done, "check_stock").effect, "read");
      assert.equal(done.turn?.finalText, "Results: check_stock -> 3 in stock");
    });

    scenario("a destructive MCP tool waits for approval and runs once after it", async () => {
      const env = await setup();
      const sessionId = await env.start('call scrap_stock {"sku":"B-2"}');
      const waiting = await env.client.waitUntilIdle(sessionId);
      assert.equal(waiting.status, "awaiting_approval");
      assert.equal(waiting.pendingInterrupts[0]?.toolName, "scrap_stock");
      assert.equal(env.server.starts("scrap_stock").length, 0, "nothing runs before the approval");
      await env.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(done, "scrap_stock").status, "succeeded");
      assert.equal(env.server.starts("scrap_stock").length, 1);
      assert.deepEqual(await steps(env, sessionId), [
        "RunModel",
        "AwaitToolApproval:approved",
        "CallSingleAttemptTool",
        "ResumeTurn",
        "RunModel",
      ]);
    });

    scenario("a tool without annotations is unclassified: approval, and a rejection never runs it", async () => {
      const env = await setup();
      const sessionId = await env.start('call note_stock {"sku":"C-3"}');
      const waiting = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(waiting, "note_stock").effect, "unclassified");
      await env.client.reject(sessionId, waiting.pendingInterrupts[0]!.interruptId, "not now");
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(done, "note_stock").status, "rejected");
      assert.equal(env.server.starts("note_stock").length, 0);
    });

    scenario("policies override the hints; a policy naming no MCP tool is a PolicyError", async () => {
      const env = await setup({
        policies: { scrap_stock: { effect: "read" }, check_stock: { effect: "non_idempotent_write" } },
      });
      const sessionId = await env.start('call scrap_stock {"sku":"D-4"}\ncall check_stock {"sku":"D-4"}');
      const waiting = await env.client.waitUntilIdle(sessionId);
      assert.deepEqual(
        waiting.pendingInterrupts.map((i) => i.toolName),
        ["check_stock"],
      );
      assert.equal(callOf(waiting, "scrap_stock").effect, "read");
      await waitUntil(
        "the destructive tool a policy made read to run without approval",
        () => env.server.starts("scrap_stock").length === 1,
      );
      await env.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(done, "check_stock").status, "succeeded");
      assert.equal(callOf(done, "check_stock").effect, "non_idempotent_write");
      assert.throws(
        () => defineSession({ name: "typo", runner: env.runner, policies: { chek_stock: { effect: "read" } } }),
        (error: unknown) => PolicyError.isInstance(error) && /"chek_stock" names no tool/.test(String(error)),
      );
    });

    scenario("an idempotent MCP write is retried with one key; _meta carries it and the attempt", async () => {
      const env = await setup();
      const sessionId = await env.start('call reserve_stock {"sku":"E-5"}');
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "reserve_stock");
      assert.equal(call.effect, "idempotent_write");
      assert.equal(call.status, "succeeded");
      assert.equal(call.attempts, 3);
      const metas = env.server.starts("reserve_stock").map((e) => readDurableMeta(e.meta));
      assert.deepEqual(
        metas.map((m) => m?.attempt),
        [1, 2, 3],
      );
      const key = `${sessionId}/turn-1/${call.toolCallId}`;
      assert.ok(metas.every((m) => m?.idempotencyKey === key && m.sessionId === sessionId && m.turnId === "turn-1"));
      assert.equal(env.server.starts("reserve_stock")[0]?.meta?.[metaKeys.toolCallId], call.toolCallId);
    });

    scenario("an isError result is failed without a retry, and the model reads its text", async () => {
      const env = await setup();
      const sessionId = await env.start('call audit_stock {"sku":"F-6"}');
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "audit_stock");
      assert.equal(call.status, "failed");
      assert.equal(call.attempts, 1);
      assert.equal(env.server.starts("audit_stock").length, 1);
      assert.match(done.turn?.finalText ?? "", /audit_stock -> The tool call failed: the audit log is sealed/);
    });

    scenario("invalid arguments are failed and the server is not asked", async () => {
      const env = await setup();
      const sessionId = await env.start('call check_stock {"item":"G-7"}');
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(done, "check_stock").status, "failed");
      assert.match(callOf(done, "check_stock").message ?? "", /Invalid arguments for tool "check_stock"/);
      assert.equal(env.server.starts("check_stock").length, 0);
    });

    scenario("a read whose server is SIGKILLed mid-call runs again on the restarted server", async () => {
      // Over HTTP the test restarts the server itself: the retry waits long enough for a new node
      // process to listen on a busy machine, else it fails too and the answer comes at attempt 3.
      const env = await setup({ toolBackoffMs: options.transport === "http" ? 5_000 : 5 });
      const sessionId = await env.start('call count_slowly {"sku":"H-8"}');
      await waitUntil("the call to reach the server", () => env.server.starts("count_slowly").length === 1);
      await env.killServer();
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "count_slowly");
      assert.equal(call.status, "succeeded");
      assert.equal(call.attempts, 2);
      const starts = env.server.starts("count_slowly");
      assert.equal(starts.length, 2);
      assert.notEqual(starts[0]!.pid, starts[1]!.pid, "a new server process answered");
      assert.equal(readDurableMeta(starts[0]!.meta)?.idempotencyKey, readDurableMeta(starts[1]!.meta)?.idempotencyKey);
      // One CallTool step, two attempts: the one the kill ended, and the one that answered.
      assert.deepEqual(await steps(env, sessionId), ["RunModel", "CallTool", "CallTool", "ResumeTurn", "RunModel"]);
    });

    scenario(
      "a single-attempt call whose server is SIGKILLed mid-call is outcome_unknown, never repeated",
      async () => {
        const env = await setup();
        const sessionId = await env.start('call ship_now {"sku":"I-9"}');
        const waiting = await env.client.waitUntilIdle(sessionId);
        await env.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
        await waitUntil("the call to reach the server", () => env.server.starts("ship_now").length === 1);
        await env.killServer();
        const done = await env.client.waitUntilIdle(sessionId);
        const call = callOf(done, "ship_now");
        assert.equal(call.status, "outcome_unknown");
        assert.equal(call.attempts, 1);
        assert.match(done.turn?.finalText ?? "", /ship_now -> The outcome of this tool call is unknown/);
        // The next call reconnects (stdio: a new process), and the interrupted one is not sent again.
        await env.client.sendMessage(sessionId, 'call check_stock {"sku":"I-9"}');
        const next = await env.client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
        assert.equal(callOf(next, "check_stock").status, "succeeded");
        assert.equal(env.server.starts("ship_now").length, 1, "the single-attempt call was never sent again");
      },
    );

    scenario("a tool that disappears while its call waits for approval ends that call failed", async () => {
      const env = await setup();
      const sessionId = await env.start('call scrap_stock {"sku":"J-10"}');
      const waiting = await env.client.waitUntilIdle(sessionId);
      env.server.setTools(warehouseTools().filter((tool) => tool.name !== "scrap_stock"));
      await waitUntil("the new tool list", () => !env.runner.tools().some((tool) => tool.name === "scrap_stock"));
      await env.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
      const done = await env.client.waitUntilIdle(sessionId);
      const call = callOf(done, "scrap_stock");
      assert.equal(call.status, "failed");
      assert.match(call.message ?? "", /the MCP server "warehouse" no longer offers the tool "scrap_stock"/);
      assert.equal(env.server.starts("scrap_stock").length, 0, "the server was never asked");
      assert.equal(done.turn?.phase, "completed");
      assert.match(
        done.turn?.finalText ?? "",
        /scrap_stock -> The tool call failed: the MCP server "warehouse" no longer/,
      );
    });

    scenario("a tool the server adds later is offered to the model with the effect its hints imply", async () => {
      const env = await setup();
      env.server.setTools([
        ...warehouseTools(),
        {
          name: "find_bin",
          inputSchema: item,
          annotations: { readOnlyHint: true },
          behaviour: { kind: "content", text: "bin 12" },
        },
      ]);
      await waitUntil("the new tool list", () => env.runner.tools().some((tool) => tool.name === "find_bin"));
      const sessionId = await env.start('call find_bin {"sku":"K-11"}');
      const done = await env.client.waitUntilIdle(sessionId);
      assert.equal(callOf(done, "find_bin").effect, "read");
      assert.equal(done.turn?.finalText, "Results: find_bin -> bin 12");
    });
  });
}

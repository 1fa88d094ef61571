/** The toolset against real MCP server processes (the SDK's server classes), over stdio and Streamable HTTP. */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { PolicyError } from "@durable-agents/core";
import { afterEach, describe, it } from "vitest";
import {
  McpConnectionError,
  McpToolset,
  effectOfHints,
  metaKeys,
  readDurableMeta,
  type McpServerConfig,
} from "../src/index.js";
import { McpTestServer, waitUntil, type TestTool } from "../src/testing/index.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const serve = (tools: readonly TestTool[]) => {
  const server = new McpTestServer(tools);
  cleanups.push(() => server.dispose());
  return server;
};
const connect = async (...args: Parameters<typeof McpToolset.connect>) => {
  const toolset = await McpToolset.connect(...args);
  cleanups.push(() => toolset.close());
  return toolset;
};

const context = (toolCallId: string, attempt = 1, signal?: AbortSignal) => ({
  sessionId: "s-1",
  turnId: "turn-1",
  toolCallId,
  idempotencyKey: `s-1/turn-1/${toolCallId}`,
  attempt,
  ...(signal ? { signal } : {}),
});

const orderSchema = {
  type: "object",
  properties: { order_id: { type: "string" } },
  required: ["order_id"],
  additionalProperties: false,
};

/** A port nothing listens on. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

// Every combination of the three hints that decide an effect (true, false, absent), and no annotations at all.
const values = [true, false, undefined] as const;
const combinations = values.flatMap((readOnlyHint) =>
  values.flatMap((idempotentHint) =>
    values.map((destructiveHint) => ({ readOnlyHint, idempotentHint, destructiveHint })),
  ),
);
const expectedEffect = (c: (typeof combinations)[number]) =>
  c.readOnlyHint === true
    ? "read"
    : c.idempotentHint === true && c.destructiveHint === false
      ? "idempotent_write"
      : "unclassified";
const hintTools: TestTool[] = combinations.map((c, i) => ({
  name: `hints_${i}`,
  annotations: Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)),
  behaviour: { kind: "echo" },
}));

for (const transport of ["stdio", "http"] as const) {
  describe(`McpToolset over ${transport}`, () => {
    const open = async (tools: readonly TestTool[], extra: Record<string, unknown> = {}) => {
      const server = serve(tools);
      if (transport === "stdio") return { server, toolset: await connect([server.stdio("test", extra)]) };
      const http = await server.startHttp();
      return { server, http, toolset: await connect([McpTestServer.http("test", http.url, extra)]) };
    };

    it("maps every combination of hints to its effect, and no annotations to unclassified", async () => {
      const { toolset } = await open([...hintTools, { name: "plain", behaviour: { kind: "echo" } }]);
      const effects = Object.fromEntries(toolset.tools().map((tool) => [tool.name, tool.effect]));
      combinations.forEach((c, i) => {
        assert.equal(effects[`hints_${i}`], expectedEffect(c), `hints ${JSON.stringify(c)}`);
        assert.equal(effectOfHints(c), expectedEffect(c));
      });
      assert.equal(effects.plain, "unclassified");
      assert.equal(toolset.tool("plain")?.annotations, undefined);
      assert.deepEqual(
        toolset.descriptions().find((d) => d.name === "hints_0"),
        { name: "hints_0", approval: "never", defaultEffect: "read" },
      );
    });

    it("sends the idempotency key, attempt and call IDs in _meta", async () => {
      const { server, toolset } = await open([{ name: "echo", inputSchema: orderSchema, behaviour: { kind: "echo" } }]);
      const result = await toolset.call("echo", '{"order_id":"7"}', context("call-9", 2));
      assert.equal(result.status, "succeeded");
      const echoed = JSON.parse(result.status === "succeeded" ? result.output : "{}");
      assert.deepEqual(echoed.args, { order_id: "7" });
      assert.equal(echoed.meta[metaKeys.idempotencyKey], "s-1/turn-1/call-9");
      assert.equal(echoed.meta[metaKeys.attempt], 2);
      assert.deepEqual(readDurableMeta(server.starts("echo")[0]?.meta), {
        idempotencyKey: "s-1/turn-1/call-9",
        attempt: 2,
        sessionId: "s-1",
        turnId: "turn-1",
        toolCallId: "call-9",
      });
    });

    it("refuses invalid arguments without asking the server", async () => {
      const { server, toolset } = await open([{ name: "echo", inputSchema: orderSchema, behaviour: { kind: "echo" } }]);
      const wrong = await toolset.call("echo", '{"order":1}', context("c1"));
      assert.equal(wrong.status, "failed");
      assert.match(wrong.status === "failed" ? wrong.message : "", /Invalid arguments for tool "echo": .*order_id/);
      const notJson = await toolset.call("echo", "{order", context("c2"));
      assert.match(notJson.status === "failed" ? notJson.message : "", /not valid JSON/);
      const notObject = await toolset.call("echo", "[1]", context("c3"));
      assert.match(notObject.status === "failed" ? notObject.message : "", /must be a JSON object/);
      assert.equal(server.starts("echo").length, 0);
    });

    it("turns results into outcomes: text, structured content, isError, refusals and JSON-RPC errors", async () => {
      const { toolset } = await open(
        [
          {
            name: "blocks",
            behaviour: {
              kind: "content",
              content: [
                { type: "text", text: "first" },
                { type: "image", data: "aGVsbG8=", mimeType: "image/png" },
                { type: "resource_link", uri: "file:///a.txt", name: "a" },
                { type: "text", text: "last" },
              ],
            },
          },
          {
            name: "structured",
            behaviour: { kind: "content", text: "3 in stock", structured: { sku: "x", count: 3 } },
          },
          { name: "only_structured", behaviour: { kind: "content", content: [], structured: { ok: true } } },
          { name: "broken", behaviour: { kind: "is_error", text: "no such order" } },
          { name: "refuses", behaviour: { kind: "rpc_error", message: "bad params", code: -32602 } },
          { name: "crashes", behaviour: { kind: "rpc_error", message: "database is down" } },
        ],
        { tools: ["blocks", "structured", "only_structured", "broken", "refuses", "crashes"] },
      );
      assert.deepEqual(await toolset.call("blocks", "{}", context("a")), {
        status: "succeeded",
        output: "first\n[image image/png, not passed on as text]\n[resource file:///a.txt (a)]\nlast",
      });
      assert.deepEqual(await toolset.call("structured", "{}", context("b")), {
        status: "succeeded",
        output: "3 in stock",
      });
      assert.deepEqual(await toolset.call("only_structured", "{}", context("c")), {
        status: "succeeded",
        output: '{"ok":true}',
      });
      assert.deepEqual(await toolset.call("broken", "{}", context("d")), {
        status: "failed",
        message: "no such order",
      });
      const refused = await toolset.call("refuses", "{}", context("e"));
      assert.equal(refused.status, "failed");
      assert.match(refused.status === "failed" ? refused.message : "", /refused the call: .*bad params/);
      await assert.rejects(() => toolset.call("crashes", "{}", context("f")), /database is down/);
    });

    it("gives the JSON of structured content with useStructuredContent", async () => {
      const { toolset } = await open(
        [{ name: "structured", behaviour: { kind: "content", text: "3 in stock", structured: { count: 3 } } }],
        { useStructuredContent: true },
      );
      assert.deepEqual(await toolset.call("structured", "{}", context("a")), {
        status: "succeeded",
        output: '{"count":3}',
      });
    });

    it("reads the tool list again when the server says it changed", async () => {
      const { server, toolset } = await open([{ name: "first", behaviour: { kind: "echo" } }]);
      const changes: string[][] = [];
      toolset.onToolsChanged((tools) => changes.push(tools.map((t) => t.name)));
      const version = toolset.version;
      server.setTools([
        { name: "second", annotations: { readOnlyHint: true }, behaviour: { kind: "echo" } },
        { name: "third", behaviour: { kind: "echo" } },
      ]);
      await waitUntil("the new tool list", () => toolset.tool("second") !== undefined);
      assert.deepEqual(
        toolset.tools().map((t) => [t.name, t.effect]),
        [
          ["second", "read"],
          ["third", "unclassified"],
        ],
      );
      assert.ok(toolset.version > version);
      assert.deepEqual(changes.at(-1), ["second", "third"]);
      const gone = await toolset.call("first", "{}", context("x"));
      assert.deepEqual(gone, {
        status: "failed",
        message:
          'the MCP server "test" no longer offers the tool "first" (its tool list changed after the call was requested); the call was not sent',
      });
      assert.equal(server.starts("first").length, 0);
      const unknown = await toolset.call("never", "{}", context("y"));
      assert.match(unknown.status === "failed" ? unknown.message : "", /no MCP server offers a tool named "never"/);
    });

    it("a call cancelled by its signal is sent notifications/cancelled and throws", async () => {
      const { server, toolset } = await open([{ name: "wait", behaviour: { kind: "hang" } }]);
      const controller = new AbortController();
      const call = toolset.call("wait", "{}", context("w", 1, controller.signal));
      await waitUntil("the call to reach the server", () => server.starts("wait").length === 1);
      controller.abort(new Error("turn cancelled"));
      await assert.rejects(call, /cancelled/);
      await waitUntil("the server to see the cancellation", () =>
        server.events().some((e) => e.event === "cancelled" && e.tool === "wait"),
      );
    });

    it("a connection lost mid-call fails the call; the next call reconnects", async () => {
      const opened = await open([{ name: "wait", behaviour: { kind: "hang", attempts: [1] } }]);
      const { server, toolset } = opened;
      // Its failure is caught at once: it may come while the server is being restarted.
      const failure = toolset.call("wait", "{}", context("k", 1)).then(
        () => new Error("the call succeeded"),
        (error: unknown) => error,
      );
      await waitUntil("the call to reach the server", () => server.starts("wait").length === 1);
      const firstPid = server.starts("wait")[0]!.pid;
      let restarted: Promise<unknown> | undefined;
      if (opened.http) {
        await opened.http.kill();
        restarted = server.startHttp(opened.http.port);
      } else {
        process.kill(toolset.serverProcessId("test")!, "SIGKILL");
      }
      assert.match(String(await failure), /the MCP call of "wait" on server "test" failed: .*Connection closed/);
      await restarted;
      const again = await toolset.call("wait", "{}", context("k", 2));
      assert.equal(again.status, "succeeded");
      const starts = server.starts("wait");
      assert.equal(starts.length, 2);
      assert.notEqual(starts[1]!.pid, firstPid, "a new server process answered the second attempt");
      assert.equal(readDurableMeta(starts[1]!.meta)?.attempt, 2);
    });

    it("a tools filter that names a tool the server lacks is a PolicyError", async () => {
      const server = serve([{ name: "echo", behaviour: { kind: "echo" } }]);
      const config =
        transport === "stdio"
          ? server.stdio("test", { tools: ["echo", "ecko"] })
          : McpTestServer.http("test", (await server.startHttp()).url, { tools: ["echo", "ecko"] });
      await assert.rejects(
        () => McpToolset.connect([config]),
        (error: unknown) =>
          PolicyError.isInstance(error) && /has no tool "ecko" \(its tools: echo\)/.test(String(error)),
      );
    });
  });
}

describe("McpToolset setup", () => {
  it("a server that is down at start is a clear McpConnectionError, not a hang", async () => {
    // A connect timeout far above what the failures take (starting a node process alone can take
    // seconds on a busy machine): each connect that ends before it was ended by its failure, not by
    // the timeout.
    const connectTimeoutMs = 20_000;
    const failsBeforeTimeout = async (config: McpServerConfig, matches: (error: unknown) => boolean) => {
      const started = Date.now();
      await assert.rejects(() => McpToolset.connect([{ ...config, connectTimeoutMs }]), matches);
      assert.ok(Date.now() - started < connectTimeoutMs, `"${config.name}" failed before its connect timeout`);
    };
    const port = await freePort();
    await failsBeforeTimeout(
      { name: "warehouse", url: `http://127.0.0.1:${port}/mcp` },
      (error: unknown) =>
        McpConnectionError.isInstance(error) &&
        error.server === "warehouse" &&
        /cannot connect to the MCP server "warehouse" \(http: http:\/\/127\.0\.0\.1:\d+\/mcp\)/.test(error.message),
    );
    await failsBeforeTimeout(
      { name: "local", command: "/nonexistent/mcp-server" },
      (error: unknown) => McpConnectionError.isInstance(error) && /ENOENT/.test(error.message),
    );
    await failsBeforeTimeout(
      { name: "dies", command: process.execPath, args: ["-e", "process.exit(3)"] },
      (error: unknown) => McpConnectionError.isInstance(error) && /"dies".*Connection closed/.test(error.message),
    );
  });

  it("a server that never answers the handshake fails after connectTimeoutMs", async () => {
    const started = Date.now();
    await assert.rejects(
      () =>
        McpToolset.connect([
          {
            name: "silent",
            command: process.execPath,
            args: ["-e", "setInterval(() => {}, 1000)"],
            connectTimeoutMs: 1_000,
          },
        ]),
      (error: unknown) => McpConnectionError.isInstance(error) && /"silent"/.test(error.message),
    );
    // The timeout ended it (not an earlier failure), and then the client's close (which gives the
    // process 2 s before SIGTERM): bounded, not a hang; the upper bound is loose for a busy machine.
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 1_000, `failed after ${elapsed} ms, before the timeout`);
    assert.ok(elapsed < 15_000, `failed after ${elapsed} ms`);
  });

  it("checks the server list", async () => {
    await assert.rejects(
      () =>
        McpToolset.connect([
          { name: "a", command: "x" },
          { name: "a", url: "http://127.0.0.1:1/mcp" },
          { name: "b c", command: "x" },
          { name: "d", command: "x", url: "http://x" } as never,
          { name: "e", url: "ftp://x" },
          { name: "f", command: "x", callTimeoutMs: -1 },
        ]),
      (error: unknown) =>
        /two MCP servers are named "a"/.test(String(error)) &&
        /needs a name/.test(String(error)) &&
        /either a command \(stdio\) or a url/.test(String(error)) &&
        /url must be http/.test(String(error)) &&
        /callTimeoutMs must be a positive/.test(String(error)),
    );
  });

  it("two servers offering one name are a PolicyError unless a toolPrefix tells them apart", async () => {
    const one = serve([{ name: "search", behaviour: { kind: "echo" } }]);
    const two = serve([{ name: "search", behaviour: { kind: "echo" } }]);
    await assert.rejects(
      () => McpToolset.connect([one.stdio("one"), two.stdio("two")]),
      (error: unknown) => PolicyError.isInstance(error) && /both offer a tool named "search"/.test(String(error)),
    );
    const toolset = await connect([one.stdio("one"), two.stdio("two", { toolPrefix: "two_" })]);
    assert.deepEqual(
      toolset.tools().map((t) => [t.name, t.server, t.serverToolName]),
      [
        ["search", "one", "search"],
        ["two_search", "two", "search"],
      ],
    );
    assert.equal((await toolset.call("two_search", "{}", context("p"))).status, "succeeded");
    assert.equal(two.starts("search").length, 1);
    assert.equal(one.starts("search").length, 0);
  });
});

/**
 * Core's session suite with its tools served by a real MCP server process. The suite's tools keep
 * their bodies in the test process (they count executions, wait on gates, read `currentToolCall()`),
 * so the server relays each call back to them over a loopback HTTP request: the call goes through
 * the runner, the toolset, the MCP transport and a real server, and the tool body sees the call's
 * idempotency key and attempt only because they travelled in `_meta`, and its abort signal only
 * because the server received `notifications/cancelled`.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ToolExecutionError, type Runner } from "@durable-agents/core";
import { runInToolCall } from "@durable-agents/core/engine";
import type { ConformanceTool } from "@durable-agents/core/testing";
import { readDurableMeta } from "../meta.js";
import { McpToolset } from "../toolset.js";
import { McpTestServer, type HttpTestProcess } from "./test-servers.js";

/**
 * Suite tools that stay function tools of the agent: single-attempt tools whose contract depends on
 * how they end after their turn is cancelled (`finish_write` returns its real outcome, `stop_write`
 * throws `ToolCancelledError`). An MCP server answers nothing to a cancelled request, so over MCP
 * both would end `outcome_unknown`, which is what the runner records for such a call (tested apart).
 */
export const localConformanceTools: readonly string[] = Object.freeze(["finish_write", "stop_write"]);

export type McpTransportKind = "stdio" | "http";

export interface ConformanceMcp {
  readonly toolset: McpToolset;
  /** The suite's tools that stay function tools of the agent (`localConformanceTools`, and any with `needsApproval`). */
  readonly local: readonly ConformanceTool[];
  /** The suite's tools the MCP server offers. */
  readonly remote: readonly ConformanceTool[];
  readonly server: McpTestServer;
  close(): Promise<void>;
}

const schemaOf = (parameters: ConformanceTool["parameters"]) => ({
  type: "object",
  properties: Object.fromEntries(Object.entries(parameters).map(([key, type]) => [key, { type }])),
  required: Object.keys(parameters),
});

const readJson = async (req: IncomingMessage): Promise<unknown> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
};

/** Runs relayed calls on the suite's tool bodies, inside the call context `_meta` describes. */
async function startRelay(tools: readonly ConformanceTool[]): Promise<{ url: string; close(): Promise<void> }> {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const server: Server = createServer(async (req, res) => {
    const controller = new AbortController();
    // The server aborts its request when it was sent notifications/cancelled.
    res.on("close", () => {
      if (!res.writableFinished) controller.abort(new Error("the MCP server cancelled the call"));
    });
    const answer = (body: Record<string, unknown>) => {
      if (res.writableEnded || res.destroyed) return;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    try {
      const { name, args, meta } = (await readJson(req)) as {
        name: string;
        args: Record<string, unknown>;
        meta: unknown;
      };
      const tool = byName.get(name);
      const call = readDurableMeta(meta);
      if (!tool || !call)
        return answer({ error: `the relay has no tool "${name}" or the call carries no durable _meta` });
      const text = await runInToolCall(
        {
          sessionId: call.sessionId,
          turnId: call.turnId,
          toolCallId: call.toolCallId,
          toolName: name,
          idempotencyKey: call.idempotencyKey,
          attempt: call.attempt,
          signal: controller.signal,
        },
        () => tool.execute(args),
      );
      answer({ text });
    } catch (error) {
      if (ToolExecutionError.isInstance(error)) answer({ toolError: error.message });
      else answer({ error: error instanceof Error ? error.message : String(error) });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/call`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Serves the suite's tools (all but the local ones) from a real MCP server process and connects a toolset to it. */
export async function serveConformanceTools(
  tools: readonly ConformanceTool[],
  options: { readonly transport: McpTransportKind },
): Promise<ConformanceMcp> {
  const isLocal = (tool: ConformanceTool) =>
    localConformanceTools.includes(tool.name) || tool.needsApproval !== undefined;
  const local = tools.filter(isLocal);
  const remote = tools.filter((tool) => !isLocal(tool));
  const relay = await startRelay(remote);
  const server = new McpTestServer(
    remote.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: schemaOf(tool.parameters),
      behaviour: { kind: "relay", url: relay.url },
    })),
  );
  let http: HttpTestProcess | undefined;
  let toolset: McpToolset;
  try {
    if (options.transport === "http") http = await server.startHttp();
    toolset = await McpToolset.connect([
      http ? McpTestServer.http("conformance", http.url) : server.stdio("conformance"),
    ]);
  } catch (error) {
    await relay.close();
    await server.dispose();
    throw error;
  }
  return {
    toolset,
    local,
    remote,
    server,
    close: async () => {
      await toolset.close();
      await relay.close();
      await server.dispose();
    },
  };
}

/**
 * A `makeRunner` for core's `sessionConformance` whose runner gets the suite's tools from a real MCP
 * server (`build` makes the adapter's runner from the local tools and the toolset). Register the
 * returned `closeAll` with `afterEach` before the suite registers its own (hooks after a test run
 * in reverse order), so that the servers stop after the suite's workers.
 */
export function mcpConformanceRunners(
  transport: McpTransportKind,
  build: (parts: { readonly local: readonly ConformanceTool[]; readonly toolset: McpToolset }) => Runner,
): {
  makeRunner: (tools: readonly ConformanceTool[]) => Promise<Runner>;
  closeAll: () => Promise<void>;
  /** Tool calls the MCP servers received so far, by tool name (counted when the servers close). */
  readonly served: ReadonlyMap<string, number>;
} {
  const open = new Set<ConformanceMcp>();
  const served = new Map<string, number>();
  return {
    makeRunner: async (tools) => {
      const mcp = await serveConformanceTools(tools, { transport });
      open.add(mcp);
      return build({ local: mcp.local, toolset: mcp.toolset });
    },
    closeAll: async () => {
      const all = [...open];
      open.clear();
      for (const mcp of all)
        for (const call of mcp.server.starts(undefined)) served.set(call.tool, (served.get(call.tool) ?? 0) + 1);
      await Promise.all(all.map((mcp) => mcp.close()));
    },
    served,
  };
}

/**
 * A real MCP server for tests, written with the SDK: it serves the tools a JSON spec file lists
 * (`MCP_TEST_SPEC`), over stdio, or over Streamable HTTP on a loopback port with `--http <port>`
 * (0 picks one; it prints `listening <port>`). It reads the spec again whenever the file changes and
 * tells its clients that the tool list changed. Every call is logged to the spec's `log` file (one
 * JSON line per start, end and cancellation, written synchronously, so a SIGKILL loses nothing).
 *
 * Self-contained (no relative imports, only erasable TypeScript), so Node runs the source as is.
 */
import { appendFileSync, readFileSync, unwatchFile, watchFile } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";

type Behaviour =
  /** Answers `{ "args": ..., "meta": ... }` as text. */
  | { kind: "echo" }
  /** Answers these content blocks and structured content (default: one text block `text`). */
  | { kind: "content"; text?: string; content?: unknown[]; structured?: unknown }
  /** Answers an `isError` result with this text. */
  | { kind: "is_error"; text: string }
  /** Fails with a JSON-RPC error (code default InternalError) for the first `times` calls of each idempotency key (default every call). */
  | { kind: "rpc_error"; message: string; code?: number; times?: number }
  /** Waits until the request is cancelled (or the process dies) on these attempts (default every attempt); echoes on the others. */
  | { kind: "hang"; attempts?: number[] }
  /** Posts `{ name, args, meta }` to this URL and answers what it says: `{ text }`, `{ toolError }` or `{ error }`. */
  | { kind: "relay"; url: string };

interface ToolSpec {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  behaviour: Behaviour;
}

interface Spec {
  tools: ToolSpec[];
  log?: string;
}

const specPath = process.env.MCP_TEST_SPEC;
if (!specPath) {
  process.stderr.write("MCP_TEST_SPEC must name the spec file\n");
  process.exit(2);
}
const readSpec = (): Spec => JSON.parse(readFileSync(specPath, "utf8")) as Spec;
let spec = readSpec();

const log = (event: Record<string, unknown>) => {
  if (spec.log) appendFileSync(spec.log, `${JSON.stringify({ ...event, pid: process.pid, at: Date.now() })}\n`);
};

const attemptOf = (meta: Record<string, unknown> | undefined): number =>
  typeof meta?.["durable-agents/attempt"] === "number" ? (meta["durable-agents/attempt"] as number) : 0;
const keyOf = (meta: Record<string, unknown> | undefined): string =>
  typeof meta?.["durable-agents/idempotencyKey"] === "string" ? (meta["durable-agents/idempotencyKey"] as string) : "";

const rpcFailures = new Map<string, number>();

const untilAborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });

async function relay(url: string, body: unknown, signal: AbortSignal): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  return (await response.json()) as Record<string, unknown>;
}

function newServer(): Server {
  const server = new Server(
    { name: "durable-agents-test-server", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: spec.tools.map((tool) => ({
      name: tool.name,
      description: tool.description ?? `The ${tool.name} tool.`,
      inputSchema: tool.inputSchema ?? { type: "object", properties: {} },
      ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
      ...(tool.annotations ? { annotations: tool.annotations } : {}),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    const args = request.params.arguments ?? {};
    const meta = request.params._meta as Record<string, unknown> | undefined;
    const tool = spec.tools.find((t) => t.name === name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
    log({ event: "start", tool: name, args, meta });
    extra.signal.addEventListener("abort", () => log({ event: "cancelled", tool: name, meta }), { once: true });
    const echo = { content: [{ type: "text", text: JSON.stringify({ args, meta }) }] };
    const end = <T>(result: T): T => {
      log({ event: "end", tool: name, meta });
      return result;
    };
    const b = tool.behaviour;
    switch (b.kind) {
      case "echo":
        return end(echo);
      case "content":
        return end({
          content: b.content ?? [{ type: "text", text: b.text ?? "" }],
          ...(b.structured !== undefined ? { structuredContent: b.structured } : {}),
        });
      case "is_error":
        return end({ content: [{ type: "text", text: b.text }], isError: true });
      case "rpc_error": {
        const key = `${name}:${keyOf(meta)}`;
        const failed = rpcFailures.get(key) ?? 0;
        if (b.times === undefined || failed < b.times) {
          rpcFailures.set(key, failed + 1);
          log({ event: "end", tool: name, meta, error: b.message });
          throw new McpError(b.code ?? ErrorCode.InternalError, b.message);
        }
        return end(echo);
      }
      case "hang":
        if (b.attempts === undefined || b.attempts.includes(attemptOf(meta))) {
          await untilAborted(extra.signal);
          return { content: [{ type: "text", text: "stopped" }] };
        }
        return end(echo);
      case "relay": {
        const answer = await relay(b.url, { name, args, meta }, extra.signal);
        if (typeof answer.toolError === "string")
          return end({ content: [{ type: "text", text: answer.toolError }], isError: true });
        if (typeof answer.error === "string") {
          log({ event: "end", tool: name, meta, error: answer.error });
          throw new McpError(ErrorCode.InternalError, answer.error);
        }
        return end({ content: [{ type: "text", text: String(answer.text ?? "") }] });
      }
    }
  });
  return server;
}

const servers = new Set<Server>();

watchFile(specPath, { interval: 50 }, () => {
  try {
    spec = readSpec();
  } catch {
    return; // a half-written file: the next change reads it whole
  }
  for (const server of servers) void server.sendToolListChanged().catch(() => {});
});

const httpIndex = process.argv.indexOf("--http");
if (httpIndex < 0) {
  const server = newServer();
  servers.add(server);
  await server.connect(new StdioServerTransport());
  process.stdin.on("close", () => {
    unwatchFile(specPath);
    process.exit(0);
  });
} else {
  const port = Number(process.argv[httpIndex + 1] ?? 0);
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const readBody = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    return text ? JSON.parse(text) : undefined;
  };
  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const sessionId = req.headers["mcp-session-id"];
      const body = req.method === "POST" ? await readBody(req) : undefined;
      let transport = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
      if (!transport) {
        if (req.method !== "POST" || !isInitializeRequest(body)) {
          res.writeHead(typeof sessionId === "string" ? 404 : 400, { "content-type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no such session" }, id: null }));
          return;
        }
        const server = newServer();
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.set(id, created);
          },
        });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
          servers.delete(server);
        };
        servers.add(server);
        await server.connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    }
  });
  http.listen(port, "127.0.0.1", () => {
    const address = http.address();
    process.stdout.write(`listening ${typeof address === "object" && address ? address.port : port}\n`);
  });
}

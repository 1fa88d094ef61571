/**
 * A real session server for the tests: core's worker and client on the memory store, the scripted
 * runner (every answer derived from the message), and this package's route handlers behind a
 * node:http server on a loopback port.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { MemoryStore, ScriptedRunner } from "@durable-agents/core/testing";
import { createSessionUIHandlers, type SessionUIHandlers } from "../../src/server/index.js";

export const agent = "ui-test";

export const tools = [
  {
    name: "look_up_order",
    description: "Looks up an order.",
    parameters: { order_id: "string" },
    execute: (args: Record<string, unknown>) => `order ${String(args.order_id)} is shipped`,
  },
  {
    name: "cancel_order",
    description: "Cancels an order.",
    parameters: { order_id: "string" },
    needsApproval: true,
    execute: (args: Record<string, unknown>) => `order ${String(args.order_id)} is cancelled`,
  },
  {
    // Its one attempt always fails ambiguously: outcome_unknown, and an attention interrupt.
    name: "send_email",
    description: "Sends an email.",
    parameters: { to: "string" },
    execute: (): string => {
      throw new Error("the mail server dropped the connection");
    },
  },
] as const;

export const policies = {
  look_up_order: { effect: "read" },
  cancel_order: { effect: "non_idempotent_write" },
  send_email: { effect: "non_idempotent_write", needsApproval: false },
} as const;

export interface UIServer {
  readonly url: string;
  readonly client: SessionClient;
  readonly store: MemoryStore;
  readonly handlers: SessionUIHandlers;
  /** The base URL of a session's chat routes. */
  api(sessionId: string): string;
  /** Requests the server answered, as `METHOD path` (the query string left out). */
  readonly requests: string[];
  /** Drops every open connection (the streams end without their clean end); the server keeps listening. */
  dropConnections(): void;
  close(): Promise<void>;
}

export async function startUIServer(options: { chunkSize?: number; watchTimeoutMs?: number } = {}): Promise<UIServer> {
  const store = new MemoryStore();
  const runner = new ScriptedRunner({ tools: [...tools], chunkSize: options.chunkSize ?? 7 });
  const definition = defineSession({ name: agent, runner, policies, cancelGraceMs: 200 });
  const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 10 }).start();
  const client = new SessionClient({ store, agents: [agent] });
  const handlers = createSessionUIHandlers({
    client,
    policies,
    keepAliveMs: 60_000,
    watchTimeoutMs: options.watchTimeoutMs ?? 2_000,
  });
  const requests: string[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${(req.url ?? "").split("?")[0]}`);
    void serve(handlers, req, res);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    client,
    store,
    handlers,
    requests,
    api: (sessionId) => `${url}/sessions/${sessionId}/ui`,
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await worker.stop();
      await store.close();
    },
  };
}

/** node:http → fetch `Request` → the handlers → back to node:http, the body streamed as it comes. */
async function serve(handlers: SessionUIHandlers, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
  }
  const method = req.method ?? "GET";
  const request = new Request(`http://127.0.0.1${req.url ?? "/"}`, {
    method,
    headers,
    signal: abort.signal,
    ...(method === "GET" || method === "HEAD" ? {} : { body: Buffer.concat(chunks) }),
  });
  const response = await handlers.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  abort.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}), { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  } catch {
    res.destroy();
  }
}

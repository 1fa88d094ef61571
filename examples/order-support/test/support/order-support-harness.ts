/**
 * A real order support server for tests: the memory store, a worker, core's client, the demo model
 * and the Hono server listening on a loopback port. Requests go over real HTTP with fetch.
 */
import { randomUUID } from "node:crypto";
import type { SessionSnapshot } from "@durable-agents/core";
import type { McpToolset } from "@durable-agents/mcp";
import { OrderSupportAiSdkDemoModel } from "../../src/ai-sdk-demo-model.js";
import { createAiSdkOrderSupportSession } from "../../src/ai-sdk-order-support-session.js";
import { createOrderSupportServer } from "../../src/create-order-support-server.js";
import { OrderSupportDemoModel } from "../../src/demo-model.js";
import { listen, type Listening } from "../../src/listen.js";
import type { OrderDesk } from "../../src/order-desk.js";
import type { OrderSupportFramework } from "../../src/order-support-framework.js";
import { startOrderSupportRuntime, type OrderSupportRuntime } from "../../src/order-support-runtime.js";
import { createOrderSupportSession } from "../../src/order-support-session.js";
import type { OrderSupportClient } from "../../src/session-client-port.js";
import { SessionTokens } from "../../src/session-tokens.js";

export interface Harness {
  readonly url: string;
  readonly tokens: SessionTokens;
  readonly runtime: OrderSupportRuntime;
  request(method: string, path: string, options?: RequestOptions): Promise<Response>;
  /** Starts a session over HTTP and returns its ID and token. */
  startSession(message?: string): Promise<{ id: string; token: string }>;
  /** Polls the snapshot route until `predicate` holds. */
  waitFor(
    id: string,
    token: string,
    predicate: (snapshot: SessionSnapshot) => boolean,
    timeoutMs?: number,
  ): Promise<SessionSnapshot>;
  close(): Promise<void>;
}

export interface RequestOptions {
  readonly token?: string;
  /** A value is sent as JSON; a string is sent as it is. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

export interface HarnessOptions {
  /** The agent's framework, each on its demo model. Default "openai-agents". */
  readonly framework?: OrderSupportFramework;
  readonly maxTextChars?: number;
  readonly maxBodyBytes?: number;
  readonly keepAliveMs?: number;
  /** How long each look-up waits before the desk answers (it stops when its turn is cancelled). Default 0. */
  readonly lookUpDelayMs?: number;
  /** What the server gets instead of the runtime's client (for example, the client with an observer around it). */
  readonly serverClient?: (client: OrderSupportClient) => OrderSupportClient;
  /** What the tools and the checks get instead of the runtime's desk (for example, the desk with faults). */
  readonly wrapDesk?: (desk: OrderDesk) => OrderDesk;
  /** The warehouse's MCP tools for the agent (`connectWarehouse()`); the test closes it. Default: none. */
  readonly warehouse?: McpToolset;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const tokens = new SessionTokens(`test-key-${randomUUID()}`);
  const { serverClient, framework, lookUpDelayMs, wrapDesk, warehouse, ...serverOptions } = options;
  const deskOf = (desk: OrderDesk) => (wrapDesk ? wrapDesk(desk) : desk);
  const speed = { chunkSize: 12, chunkDelayMs: 2 };
  const tools = (stopping: AbortSignal) => ({ lookUpDelayMs: lookUpDelayMs ?? 0, stopping });
  const runtime =
    framework === "ai-sdk"
      ? startOrderSupportRuntime({
          session: (desk, { stopping }) =>
            createAiSdkOrderSupportSession(
              deskOf(desk),
              new OrderSupportAiSdkDemoModel(speed),
              tools(stopping),
              warehouse,
            ),
        })
      : startOrderSupportRuntime({
          session: (desk, { stopping }) =>
            createOrderSupportSession(deskOf(desk), new OrderSupportDemoModel(speed), tools(stopping), warehouse),
        });
  const client = serverClient ? serverClient(runtime.client) : runtime.client;
  const app = createOrderSupportServer({ client, tokens, ...serverOptions });
  let listening: Listening;
  try {
    listening = await listen(app, { port: 0 });
  } catch (error) {
    await runtime.stop();
    throw error;
  }
  const url = listening.url;

  const request = (method: string, path: string, opts: RequestOptions = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== undefined) headers["x-session-token"] = opts.token;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    return fetch(`${url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  };

  return {
    url,
    tokens,
    runtime,
    request,
    async startSession(message) {
      const response = await request("POST", "/sessions", { body: message === undefined ? {} : { message } });
      if (response.status !== 201)
        throw new Error(`POST /sessions answered ${response.status}: ${await response.text()}`);
      const created = (await response.json()) as { session_id: string; session_token: string };
      return { id: created.session_id, token: created.session_token };
    },
    async waitFor(id, token, predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const response = await request("GET", `/sessions/${id}/snapshot`, { token });
        if (response.status !== 200) throw new Error(`snapshot answered ${response.status}: ${await response.text()}`);
        const snapshot = (await response.json()) as SessionSnapshot;
        if (predicate(snapshot)) return snapshot;
        if (Date.now() > deadline)
          throw new Error(`session ${id} did not reach the state in time: ${JSON.stringify(snapshot)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close() {
      await listening.close();
      await runtime.stop();
    },
  };
}

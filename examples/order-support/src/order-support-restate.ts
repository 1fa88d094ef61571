/**
 * The example on Restate (`ORDER_SUPPORT_ENGINE=restate`): the sessions are driven by a Restate
 * cluster instead of core's worker. This process serves the engine's Restate services on an HTTP/2
 * endpoint, registers that endpoint with the cluster's admin API, and gives the HTTP server a
 * `SessionClient` over the cluster's ingress. Restate keeps the sessions: a restart of this process
 * (or of the cluster) loses nothing. The order desk is a SQLite file next to the default session
 * files, as in the SQLite mode.
 *
 *   RESTATE_INGRESS_URL           the cluster's ingress (default http://127.0.0.1:8080)
 *   RESTATE_ADMIN_URL             its admin API, to register the endpoint (default http://127.0.0.1:9070)
 *   ORDER_SUPPORT_ENDPOINT_PORT   where this process serves the Restate services (default 9080; 0: a free port)
 *   ORDER_SUPPORT_ENDPOINT_URL    how the cluster reaches that endpoint (default http://127.0.0.1:<port>)
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { ConfigurationError, SessionClient, type SessionDefinition } from "@durable-agents/core";
import { RestateSessionStore, registerDeployment, restateSessions } from "@durable-agents/engine-restate";
import type { McpToolset } from "@durable-agents/mcp";
import * as restate from "@restatedev/restate-sdk";
import type { OrderDesk } from "./order-desk.js";
import type { OrderSupportSessionContext } from "./order-support-runtime.js";
import { orderSupportAgentName } from "./order-support-session.js";

export const orderSupportEngines = ["worker", "restate"] as const;
export type OrderSupportEngine = (typeof orderSupportEngines)[number];

type Env = Readonly<Record<string, string | undefined>>;

/** `ORDER_SUPPORT_ENGINE`: `worker` (default: core's worker on the chosen store) or `restate`. */
export function orderSupportEngineFromEnv(env: Env = process.env): OrderSupportEngine {
  const named = env.ORDER_SUPPORT_ENGINE?.trim() ?? "";
  if (named === "") return "worker";
  if ((orderSupportEngines as readonly string[]).includes(named)) return named as OrderSupportEngine;
  throw new ConfigurationError(
    `ORDER_SUPPORT_ENGINE is "${named}": use ${orderSupportEngines.join(" or ")} (or leave it unset)`,
  );
}

export interface RestateSettings {
  readonly ingressUrl: string;
  readonly adminUrl: string;
  readonly endpointPort: number;
  /** null: http://127.0.0.1:<the port it listens on>. */
  readonly endpointUrl: string | null;
}

function url(env: Env, name: string, fallback: string): string {
  const value = env[name]?.trim() || fallback;
  if (!/^https?:\/\/[^/]+/.test(value)) throw new ConfigurationError(`${name} is "${value}": it is an http(s) URL`);
  return value.replace(/\/+$/, "");
}

export function restateSettingsFromEnv(env: Env = process.env): RestateSettings {
  const port = Number(env.ORDER_SUPPORT_ENDPOINT_PORT?.trim() || 9080);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new ConfigurationError(`ORDER_SUPPORT_ENDPOINT_PORT is "${env.ORDER_SUPPORT_ENDPOINT_PORT}": a port number`);
  return {
    ingressUrl: url(env, "RESTATE_INGRESS_URL", "http://127.0.0.1:8080"),
    adminUrl: url(env, "RESTATE_ADMIN_URL", "http://127.0.0.1:9070"),
    endpointPort: port,
    endpointUrl: env.ORDER_SUPPORT_ENDPOINT_URL?.trim() ? url(env, "ORDER_SUPPORT_ENDPOINT_URL", "") : null,
  };
}

export interface OrderSupportOnRestate {
  readonly client: SessionClient;
  readonly definition: SessionDefinition;
  /** The endpoint's URL as registered with the cluster. */
  readonly endpointUrl: string;
  readonly deploymentId: string;
  /** Stops waiting tools, closes the endpoint (drives in flight are retried by Restate) and the client. */
  stop(): Promise<void>;
}

/** Serves the sessions' Restate services, registers them, and opens a client over the ingress. */
export async function startOrderSupportOnRestate(options: {
  readonly settings: RestateSettings;
  readonly desk: OrderDesk;
  /** The warehouse's MCP tools for the agent (`connectWarehouse()`); the caller closes it after `stop()`. */
  readonly warehouse?: McpToolset;
  readonly session: (desk: OrderDesk, context: OrderSupportSessionContext) => SessionDefinition;
}): Promise<OrderSupportOnRestate> {
  const { settings } = options;
  const stopping = new AbortController();
  const definition = options.session(options.desk, {
    stopping: stopping.signal,
    ...(options.warehouse ? { warehouse: options.warehouse } : {}),
  });
  if (definition.name !== orderSupportAgentName) {
    throw new ConfigurationError(
      `the order support session must be named "${orderSupportAgentName}", not "${definition.name}"`,
    );
  }
  const engine = restateSessions({ sessions: [definition], ingressUrl: settings.ingressUrl });
  const endpoint = http2.createServer(
    restate.createEndpointHandler({ services: [...engine.services], logger: () => {} }),
  );
  endpoint.on("sessionError", () => {});
  // Restate keeps its HTTP/2 connection open: stop() closes it, and Restate retries what ran on it.
  const connections = new Set<http2.ServerHttp2Session>();
  endpoint.on("session", (session) => {
    connections.add(session);
    session.once("close", () => connections.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    endpoint.once("error", reject);
    endpoint.listen(settings.endpointPort, "127.0.0.1", () => resolve());
  });
  const close = () => new Promise<void>((resolve) => endpoint.close(() => resolve()));
  const endpointUrl = settings.endpointUrl ?? `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
  let deploymentId: string;
  try {
    deploymentId = await registerDeployment(settings.adminUrl, endpointUrl);
  } catch (error) {
    await close();
    throw new ConfigurationError(
      `RESTATE_ADMIN_URL: the endpoint ${endpointUrl} could not be registered with Restate at ${settings.adminUrl} (${(error as Error).message})`,
      [],
      { cause: error },
    );
  }
  const store = new RestateSessionStore({ url: settings.ingressUrl });
  const client = new SessionClient({ store, agents: [orderSupportAgentName] });
  let stopped: Promise<void> | null = null;
  return {
    client,
    definition,
    endpointUrl,
    deploymentId,
    stop() {
      stopped ??= (async () => {
        stopping.abort(new Error("the process is stopping"));
        await store.close();
        const closed = close();
        for (const session of connections) session.destroy();
        await closed;
      })();
      return stopped;
    },
  };
}

/**
 * `pnpm serve`: a worker and the HTTP server in one process, on the embedded SQLite store: sessions
 * (and the order desk) survive a restart of the server.
 *
 *   ORDER_SUPPORT_DB           the session file (default: .durable-agents/server.db in this example's folder)
 *   ORDER_SUPPORT_STORE        sqlite (default) or memory
 *   DATABASE_URL               keeps the sessions in PostgreSQL instead (the schema is migrated at start)
 *   PORT                       default 8080
 *   HOST                       default 127.0.0.1
 *   ORDER_SUPPORT_SESSION_KEY  signs session tokens (default: a random key per start)
 *   ORDER_SUPPORT_FRAMEWORK    openai-agents (default) or ai-sdk
 *   ORDER_SUPPORT_MODEL, OPENAI_API_KEY   a real OpenAI model instead of the demo model
 *   ORDER_SUPPORT_LOOKUP_DELAY_MS         each look-up waits this long (default 0): time to cancel or steer a turn
 *   ORDER_SUPPORT_ENGINE       worker (default: core's worker in this process, on the store above) or
 *                              restate: a Restate cluster drives the sessions and keeps them (see
 *                              order-support-restate.ts for RESTATE_INGRESS_URL, RESTATE_ADMIN_URL,
 *                              ORDER_SUPPORT_ENDPOINT_PORT, ORDER_SUPPORT_ENDPOINT_URL)
 *
 * The warehouse (an MCP server, `warehouse-server.ts`) is started over stdio and gives the agent
 * `check_parcel` and `release_stock`; on the SQLite store it keeps its releases next to the desk.
 */
import type { SessionClient } from "@durable-agents/core";
import { mkdirSync } from "node:fs";
import { createOrderSupportServer } from "./create-order-support-server.js";
import { listen } from "./listen.js";
import { parseOrderSupportFramework } from "./order-support-framework.js";
import { startOrderSupportRuntime } from "./order-support-runtime.js";
import { OrderDesk } from "./order-desk.js";
import {
  orderSupportEngineFromEnv,
  restateSettingsFromEnv,
  startOrderSupportOnRestate,
} from "./order-support-restate.js";
import {
  chooseOrderSupportStore,
  defaultStoreFile,
  defaultStoreFolder,
  deskFileFor,
  openOrderSupportStore,
  storeSideFile,
} from "./order-support-store.js";
import { orderSupportAgentName } from "./order-support-session.js";
import { orderSupportSetupFromEnv } from "./order-support-setup.js";
import { SessionTokens } from "./session-tokens.js";
import { connectWarehouse } from "./warehouse.js";

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new RangeError(`PORT must be a port number, not "${process.env.PORT}"`);
  const framework = parseOrderSupportFramework(process.env.ORDER_SUPPORT_FRAMEWORK, "ORDER_SUPPORT_FRAMEWORK");
  const setup = orderSupportSetupFromEnv(framework, process.env);
  const key = process.env.ORDER_SUPPORT_SESSION_KEY;
  const tokens = new SessionTokens(key === undefined || key === "" ? undefined : key);
  const running = await startEngine(setup);
  const app = createOrderSupportServer({ client: running.client, agent: orderSupportAgentName, tokens, page: true });
  let listening;
  try {
    listening = await listen(app, { port, hostname: process.env.HOST ?? "127.0.0.1" });
  } catch (error) {
    await running.stop();
    throw error;
  }
  console.log(
    `order support on ${listening.url} (framework: ${setup.framework}; model: ${setup.modelDescription}; ${running.description})`,
  );
  console.log(`the chat page: ${listening.url}/`);
  if (setup.lookUpDelayMs > 0)
    console.log(
      `each look-up waits ${setup.lookUpDelayMs} ms (ORDER_SUPPORT_LOOKUP_DELAY_MS): time to cancel or steer its turn`,
    );
  if (key === undefined || key === "")
    console.log(
      "session tokens are signed with a random key: they stop working when the server restarts (set ORDER_SUPPORT_SESSION_KEY to keep them)",
    );

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    console.log(`${signal}: stopping`);
    await listening.close();
    await running.stop();
    console.log(running.stoppedLine);
    process.exit(0);
  };
  // \`on\`, not \`once\`: the Agents SDK's tracing also listens for these signals and exits the process
  // at once when it is the only listener left, which would cut the graceful stop short.
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

interface RunningEngine {
  readonly client: SessionClient;
  /** For the start line: "store: sqlite …" or "engine: restate …". */
  readonly description: string;
  readonly stoppedLine: string;
  stop(): Promise<void>;
}

/** Core's worker on the chosen store, or the Restate engine (`ORDER_SUPPORT_ENGINE`). */
async function startEngine(setup: ReturnType<typeof orderSupportSetupFromEnv>): Promise<RunningEngine> {
  if (orderSupportEngineFromEnv(process.env) === "restate") {
    const settings = restateSettingsFromEnv(process.env);
    // The desk (the shop's own system) stays a SQLite file next to the server's default session file.
    const choice = chooseOrderSupportStore({ env: process.env, program: "server" });
    const sessionFile = choice.kind === "sqlite" ? choice.path : defaultStoreFile("server");
    if (sessionFile === defaultStoreFile("server")) mkdirSync(defaultStoreFolder, { recursive: true });
    const desk = OrderDesk.open(deskFileFor(sessionFile));
    let warehouse: Awaited<ReturnType<typeof connectWarehouse>> | undefined;
    let engine: Awaited<ReturnType<typeof startOrderSupportOnRestate>>;
    try {
      warehouse = await connectWarehouse({ stateFile: storeSideFile(sessionFile, "warehouse.json") });
      engine = await startOrderSupportOnRestate({ settings, desk, warehouse, session: setup.createSession });
    } catch (error) {
      await warehouse?.close();
      desk.close();
      throw error;
    }
    return {
      client: engine.client,
      description: `engine: restate at ${settings.ingressUrl}, endpoint ${engine.endpointUrl} registered as ${engine.deploymentId}`,
      stoppedLine: "stopped: endpoint closed (Restate retries what ran on it), desk closed",
      async stop() {
        await engine.stop();
        await warehouse.close();
        desk.close();
      },
    };
  }
  const opened = await openOrderSupportStore(chooseOrderSupportStore({ env: process.env, program: "server" }));
  const choice = opened.choice;
  let warehouse: Awaited<ReturnType<typeof connectWarehouse>>;
  try {
    warehouse = await connectWarehouse(
      choice.kind === "sqlite" ? { stateFile: storeSideFile(choice.path, "warehouse.json") } : {},
    );
  } catch (error) {
    await opened.close();
    throw error;
  }
  const runtime = startOrderSupportRuntime({
    session: setup.createSession,
    store: opened.store,
    desk: opened.desk,
    warehouse,
  });
  return {
    client: runtime.client,
    description: `store: ${opened.description}`,
    stoppedLine: "stopped: steps in flight finished, store closed",
    async stop() {
      await runtime.stop();
      await warehouse.close();
      await opened.close();
    },
  };
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

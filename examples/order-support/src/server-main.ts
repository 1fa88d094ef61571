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
 *
 * The warehouse (an MCP server, `warehouse-server.ts`) is started over stdio and gives the agent
 * `check_parcel` and `release_stock`; on the SQLite store it keeps its releases next to the desk.
 */
import { createOrderSupportServer } from "./create-order-support-server.js";
import { listen } from "./listen.js";
import { parseOrderSupportFramework } from "./order-support-framework.js";
import { startOrderSupportRuntime } from "./order-support-runtime.js";
import { chooseOrderSupportStore, openOrderSupportStore } from "./order-support-store.js";
import { orderSupportAgentName } from "./order-support-session.js";
import { orderSupportSetupFromEnv } from "./order-support-setup.js";
import { storeSideFile } from "./order-support-store.js";
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
  const opened = await openOrderSupportStore(chooseOrderSupportStore({ env: process.env, program: "server" }));
  const choice = opened.choice;
  let warehouse;
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
  const app = createOrderSupportServer({ client: runtime.client, agent: orderSupportAgentName, tokens, page: true });
  let listening;
  try {
    listening = await listen(app, { port, hostname: process.env.HOST ?? "127.0.0.1" });
  } catch (error) {
    await runtime.stop();
    await warehouse.close();
    await opened.close();
    throw error;
  }
  console.log(
    `order support on ${listening.url} (framework: ${setup.framework}; model: ${setup.modelDescription}; store: ${opened.description})`,
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
    await runtime.stop();
    await warehouse.close();
    await opened.close();
    console.log("stopped: steps in flight finished, store closed");
    process.exit(0);
  };
  // \`on\`, not \`once\`: the Agents SDK's tracing also listens for these signals and exits the process
  // at once when it is the only listener left, which would cut the graceful stop short.
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

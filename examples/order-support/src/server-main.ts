/**
 * `pnpm serve`: a worker and the HTTP server in one process, on the embedded memory store.
 *
 *   PORT                       default 8080
 *   HOST                       default 127.0.0.1
 *   ORDER_SUPPORT_SESSION_KEY  signs session tokens (default: a random key per start)
 *   ORDER_SUPPORT_FRAMEWORK    openai-agents (default) or ai-sdk
 *   ORDER_SUPPORT_MODEL, OPENAI_API_KEY   a real OpenAI model instead of the demo model
 */
import { createOrderSupportServer } from "./create-order-support-server.js";
import { listen } from "./listen.js";
import { parseOrderSupportFramework } from "./order-support-framework.js";
import { startOrderSupportRuntime } from "./order-support-runtime.js";
import { orderSupportAgentName } from "./order-support-session.js";
import { orderSupportSetupFromEnv } from "./order-support-setup.js";
import { SessionTokens } from "./session-tokens.js";

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new RangeError(`PORT must be a port number, not "${process.env.PORT}"`);
  const framework = parseOrderSupportFramework(process.env.ORDER_SUPPORT_FRAMEWORK, "ORDER_SUPPORT_FRAMEWORK");
  const setup = orderSupportSetupFromEnv(framework, process.env);
  const key = process.env.ORDER_SUPPORT_SESSION_KEY;
  const tokens = new SessionTokens(key === undefined || key === "" ? undefined : key);
  const runtime = startOrderSupportRuntime({ session: setup.createSession });
  const app = createOrderSupportServer({ client: runtime.client, agent: orderSupportAgentName, tokens });
  const listening = await listen(app, { port, hostname: process.env.HOST ?? "127.0.0.1" });
  console.log(`order support on ${listening.url} (framework: ${setup.framework}; model: ${setup.modelDescription}; store: in memory)`);
  if (key === undefined || key === "") console.log("session tokens are signed with a random key: they stop working when the server restarts");

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    console.log(`${signal}: stopping`);
    await listening.close();
    await runtime.stop();
    process.exit(0);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

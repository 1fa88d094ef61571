// The order support server with its chat page, as a child process for the browser tests: the built
// server (dist/) on the SQLite store, with a slower demo model and a short lease, so that a test can
// reload or restart in the middle of a streamed answer and a restarted server takes over soon.
//
//   ORDER_SUPPORT_DB, ORDER_SUPPORT_SESSION_KEY, PORT   as for `pnpm serve`
//   CHUNK_SIZE, CHUNK_DELAY_MS                          the demo model's streaming (default 4 characters every 60 ms)
//   LEASE_TTL_MS                                        the worker's lease (default 1000 ms)
import {
  chooseOrderSupportStore,
  createOrderSupportServer,
  listen,
  openOrderSupportStore,
  orderSupportAgentName,
  orderSupportSetupFromEnv,
  SessionTokens,
  startOrderSupportRuntime,
} from "../../dist/index.js";

const env = process.env;
const setup = orderSupportSetupFromEnv(
  "openai-agents",
  { ORDER_SUPPORT_MODEL: "demo" },
  { chunkSize: Number(env.CHUNK_SIZE ?? 4), chunkDelayMs: Number(env.CHUNK_DELAY_MS ?? 60) },
);
const opened = await openOrderSupportStore(
  chooseOrderSupportStore({ env: { ORDER_SUPPORT_DB: env.ORDER_SUPPORT_DB }, program: "server" }),
);
const runtime = startOrderSupportRuntime({
  session: setup.createSession,
  store: opened.store,
  desk: opened.desk,
  leaseTtlMs: Number(env.LEASE_TTL_MS ?? 1000),
});
const app = createOrderSupportServer({
  client: runtime.client,
  agent: orderSupportAgentName,
  tokens: new SessionTokens(env.ORDER_SUPPORT_SESSION_KEY),
  page: true,
});
const listening = await listen(app, { port: Number(env.PORT ?? 0), hostname: "127.0.0.1" });
console.log(`order support on ${listening.url} (page server for the browser tests)`);

const shutdown = async () => {
  await listening.close();
  await runtime.stop();
  await opened.close();
  process.exit(0);
};
process.on("SIGTERM", () => void shutdown());
process.on("SIGINT", () => void shutdown());

/**
 * A worker PROCESS for the throughput phase (started with `fork`): one core `Worker` on a
 * PostgresStore. It connects, says `ready`, starts leasing on `go`, and on `stop` stops gracefully,
 * reports its CPU time and exits.
 *
 * argv: <connection string> <schema> <concurrency>
 */
import pg from "pg";
import { SessionClient, Worker } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { PostgresStore } from "@durable-agents/store-postgres";
import { StepClock } from "./step-clock.js";
import { AGENT_NAME, makeDefinition, turnScript } from "./workload.js";

export type ParentMessage = { readonly type: "go" } | { readonly type: "stop" };
export type ChildMessage =
  | { readonly type: "ready" }
  | { readonly type: "stopped"; readonly cpuMs: number; readonly modelCalls: number; readonly queries: Record<string, number> }
  | { readonly type: "error"; readonly message: string };

async function main(): Promise<void> {
  const [url, schema, concurrencyText] = process.argv.slice(2);
  if (!url || !schema || !concurrencyText || !process.send) throw new Error("usage: throughput-worker <url> <schema> <concurrency> (forked)");
  const send = (message: ChildMessage) => process.send!(message);
  const concurrency = Number(concurrencyText);
  const pool = new pg.Pool({ connectionString: url, max: Math.max(4, Math.min(concurrency + 2, 20)) });
  pool.on("error", () => {});
  // Counts the store's statements by name (the store runs each as a named prepared statement).
  const queries: Record<string, number> = {};
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const config = args[0] as { name?: string } | string;
    const key = typeof config === "string" ? config.trim().split(/\s+/)[0]! : (config.name ?? "unnamed").replace(/^durable_agents_[a-z0-9_]+?_(?=[a-zA-Z]+$)/, "");
    queries[key] = (queries[key] ?? 0) + 1;
    return query(...args);
  };
  const store = new PostgresStore({ pool, schema });
  const clock = new StepClock();
  clock.enabled = false;
  const { definition, model } = makeDefinition(clock);
  const worker = new Worker({ store, sessions: [definition], concurrency, onError: (error) => send({ type: "error", message: String(error) }) });
  await pool.query("SELECT 1");
  await warmUp();
  for (const key of Object.keys(queries)) delete queries[key];
  const cpuStart = process.cpuUsage();
  process.on("message", (message: ParentMessage) => {
    if (message.type === "go") {
      worker.start();
    } else if (message.type === "stop") {
      void (async () => {
        await worker.stop();
        await store.close();
        await pool.end();
        const cpu = process.cpuUsage(cpuStart);
        send({ type: "stopped", cpuMs: (cpu.user + cpu.system) / 1000, modelCalls: model.inner.calls, queries });
        process.disconnect();
      })();
    }
  });
  send({ type: "ready" });
}

/**
 * Runs a few sessions on an in-process memory store first, so that this process's code is compiled
 * (JIT) before the measured run, as in a worker that has been up for a while.
 */
async function warmUp(): Promise<void> {
  const store = new MemoryStore();
  const clock = new StepClock();
  clock.enabled = false;
  const worker = new Worker({ store, sessions: [makeDefinition(clock).definition] }).start();
  const client = new SessionClient({ store, agents: [AGENT_NAME] });
  for (let s = 0; s < 8; s++) {
    const sessionId = `warm-${s}`;
    await client.startSession({ agent: AGENT_NAME, sessionId, message: turnScript(sessionId, 1, 2) });
    await client.sendMessage(sessionId, turnScript(sessionId, 2, 2));
  }
  for (let s = 0; s < 8; s++) {
    await client.waitFor(`warm-${s}`, (snapshot) => snapshot.turnCount >= 2 && snapshot.status === "idle" && snapshot.queuedMessages === 0);
  }
  await worker.stop();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

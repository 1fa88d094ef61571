/**
 * A worker PROCESS for the throughput phase (started with `fork`): one core `Worker` on a
 * PostgresStore. It connects, says `ready`, starts leasing on `go`, and on `stop` stops gracefully,
 * reports its CPU time and exits.
 *
 * argv: <connection string> <schema> <concurrency>
 */
import pg from "pg";
import { Worker } from "@durable-agents/core";
import { PostgresStore } from "@durable-agents/store-postgres";
import { StepClock } from "./step-clock.js";
import { makeDefinition } from "./workload.js";

export type ParentMessage = { readonly type: "go" } | { readonly type: "stop" };
export type ChildMessage =
  | { readonly type: "ready" }
  | { readonly type: "stopped"; readonly cpuMs: number; readonly modelCalls: number }
  | { readonly type: "error"; readonly message: string };

async function main(): Promise<void> {
  const [url, schema, concurrencyText] = process.argv.slice(2);
  if (!url || !schema || !concurrencyText || !process.send) throw new Error("usage: throughput-worker <url> <schema> <concurrency> (forked)");
  const send = (message: ChildMessage) => process.send!(message);
  const concurrency = Number(concurrencyText);
  const pool = new pg.Pool({ connectionString: url, max: Math.max(4, Math.min(concurrency + 2, 20)) });
  pool.on("error", () => {});
  const store = new PostgresStore({ pool, schema });
  const clock = new StepClock();
  clock.enabled = false;
  const { definition, model } = makeDefinition(clock);
  const worker = new Worker({ store, sessions: [definition], concurrency, onError: (error) => send({ type: "error", message: String(error) }) });
  await pool.query("SELECT 1");
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
        send({ type: "stopped", cpuMs: (cpu.user + cpu.system) / 1000, modelCalls: model.inner.calls });
        process.disconnect();
      })();
    }
  });
  send({ type: "ready" });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

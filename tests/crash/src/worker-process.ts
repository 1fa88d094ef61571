#!/usr/bin/env node
/**
 * One worker process of the crash suites: `node dist/worker-process.js --database-url <url>
 * [--lease-ttl-ms 1500] [--poll-interval-ms 100] [--failure-rate 0.2] [--concurrency 16]`
 * (or `CRASH_DATABASE_URL` in the environment). It runs a core `Worker` over `PostgresStore` until
 * it is killed. SIGTERM stops it gracefully; it also exits when its stdin closes (its parent is
 * gone). It prints `{"ready":<pid>}` once it listens, and every error the worker reports as one
 * JSON line on stderr.
 */
import pg from "pg";
import { Worker } from "@durable-agents/core";
import { PostgresStore } from "@durable-agents/store-postgres";
import { crashAgent } from "./crash-agent.js";
import { parseFlags } from "./flags.js";

const flags = parseFlags(process.argv.slice(2), {
  "database-url": process.env.CRASH_DATABASE_URL ?? "",
  "lease-ttl-ms": "1500",
  "poll-interval-ms": "100",
  "failure-rate": "0.2",
  concurrency: "16",
});
const databaseUrl = flags["database-url"];
if (!databaseUrl) {
  process.stderr.write("worker-process: --database-url (or CRASH_DATABASE_URL) is required\n");
  process.exit(2);
}

const report = (kind: string, error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown })?.code;
  process.stderr.write(`${JSON.stringify({ kind, pid: process.pid, message, code: typeof code === "string" ? code : null })}\n`);
};

const storePool = new pg.Pool({ connectionString: databaseUrl, max: 12, connectionTimeoutMillis: 5000 });
const toolPool = new pg.Pool({ connectionString: databaseUrl, max: 6, connectionTimeoutMillis: 5000 });
// Idle connections die when PostgreSQL restarts; without a listener that would end the process.
storePool.on("error", (error) => report("pool", error));
toolPool.on("error", (error) => report("pool", error));

const store = new PostgresStore({ pool: storePool, pollIntervalMs: 500 });
const definition = crashAgent({ toolPool, failureRate: Number(flags["failure-rate"]) });
const worker = new Worker({
  store,
  sessions: [definition],
  workerId: `crash-worker-${process.pid}`,
  leaseTtlMs: Number(flags["lease-ttl-ms"]),
  pollIntervalMs: Number(flags["poll-interval-ms"]),
  concurrency: Number(flags.concurrency),
  onError: (error) => report("worker", error),
});
worker.start();
await store.listening();
process.stdout.write(`${JSON.stringify({ ready: process.pid })}\n`);

// The parent holds our stdin open; when it is gone (it died or was killed), so are we.
process.stdin.on("end", () => process.exit(1));
process.stdin.on("error", () => process.exit(1));
process.stdin.resume();

process.once("SIGTERM", () => {
  void (async () => {
    await worker.stop({ timeoutMs: 5000 });
    await store.close();
    await Promise.all([storePool.end(), toolPool.end()]);
    process.exit(0);
  })();
});

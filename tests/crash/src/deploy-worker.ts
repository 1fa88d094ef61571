#!/usr/bin/env node
/**
 * One worker process of the rolling-deploy suite: a core `Worker` serving both agents of one
 * version (`deploy-agent.ts`) over a real store, until it is stopped (SIGTERM: graceful) or killed.
 *
 *   node dist/deploy-worker.js --version v1|v2 [--migrate true] --store postgres --database-url <url>
 *   node dist/deploy-worker.js --version v1|v2 [--migrate true] --store sqlite --sqlite-path <file>
 *
 * It prints `{"ready":<pid>}` once it runs, `{"executed":{agent,tool,version,args}}` for every tool
 * execution, and every error its Worker reports as one JSON line on stderr. It exits when its stdin
 * closes (its parent is gone).
 */
import pg from "pg";
import { Worker, type SessionStore } from "@durable-agents/core";
import { PostgresStore } from "@durable-agents/store-postgres";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { deployAgents } from "./deploy-agent.js";
import { parseFlags } from "./flags.js";

const flags = parseFlags(process.argv.slice(2), {
  version: "v1",
  migrate: "false",
  store: "postgres",
  "database-url": "",
  "sqlite-path": "",
  "lease-ttl-ms": "1500",
  "poll-interval-ms": "100",
  "definition-check-ms": "200",
});

const fail = (message: string): never => {
  process.stderr.write(`deploy-worker: ${message}\n`);
  process.exit(2);
};
if (flags.version !== "v1" && flags.version !== "v2") fail(`--version is v1 or v2, not ${flags.version}`);

let pool: pg.Pool | null = null;
let store: SessionStore;
if (flags.store === "postgres") {
  pool = new pg.Pool({ connectionString: flags["database-url"] || fail("--database-url is required"), max: 6 });
  pool.on("error", () => {});
  store = new PostgresStore({ pool, pollIntervalMs: 500 });
} else if (flags.store === "sqlite") {
  store = new SqliteStore({ path: flags["sqlite-path"] || fail("--sqlite-path is required") });
} else {
  store = fail(`unknown --store ${flags.store}`);
}

const worker = new Worker({
  store,
  sessions: deployAgents(flags.version as "v1" | "v2", {
    migrate: flags.migrate === "true",
    onExecute: (execution) => process.stdout.write(`${JSON.stringify({ executed: execution })}\n`),
  }),
  workerId: `deploy-${flags.version}-${process.pid}`,
  leaseTtlMs: Number(flags["lease-ttl-ms"]),
  pollIntervalMs: Number(flags["poll-interval-ms"]),
  definitionCheckIntervalMs: Number(flags["definition-check-ms"]),
  onError: (error) => {
    const code = (error as { code?: unknown })?.code;
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    process.stderr.write(
      `${JSON.stringify({ pid: process.pid, code: typeof code === "string" ? code : null, message })}\n`,
    );
  },
});
worker.start();
if (store instanceof PostgresStore) await store.listening();
process.stdout.write(`${JSON.stringify({ ready: process.pid })}\n`);

process.stdin.on("end", () => process.exit(1));
process.stdin.on("error", () => process.exit(1));
process.stdin.resume();

process.once("SIGTERM", () => {
  void (async () => {
    await worker.stop({ timeoutMs: 5000 });
    await store.close();
    await pool?.end();
    process.exit(0);
  })();
});

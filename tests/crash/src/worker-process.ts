#!/usr/bin/env node
/**
 * One worker process of the crash suites. It runs a core `Worker` over a real store until it is
 * killed; the store is chosen by `--store` (or `CRASH_STORE`):
 *
 * - `node dist/worker-process.js --store postgres --database-url <url>` (or `CRASH_DATABASE_URL`;
 *   `postgres` is the default store): `PostgresStore`, the tools' log in the same database;
 * - `node dist/worker-process.js --store sqlite --sqlite-path <file> [--executions-path <file>]
 *   [--synchronous full] [--tx-state-dir <dir>]` (or `CRASH_SQLITE_PATH`): `SqliteStore` on the shared
 *   file, the tools' log in a file of its own (default `<file>.executions.db`). With
 *   `--tx-state-dir` the worker records where it stands in its write transactions in
 *   `<dir>/<pid>.state` (see transaction-probe.ts), and a line `pause-in-commit` on its stdin makes
 *   it stop inside its next write transaction, just before COMMIT, until it is killed.
 *
 * Common flags: `[--lease-ttl-ms 1500] [--linger-ms N] [--poll-interval-ms 100] [--failure-rate 0.2]
 * [--concurrency 16] [--read-tool-hold-ms N]`; PostgreSQL also `[--compress-heads true]` (the
 * store's `compressHeads: true`). SIGTERM stops it gracefully; it also exits when its stdin closes (its parent
 * is gone). It prints `{"ready":<pid>}` once it listens, and every error the worker reports as one
 * JSON line on stderr.
 */
import { join } from "node:path";
import pg from "pg";
import { Worker, type SessionStore } from "@durable-agents/core";
import { PostgresStore } from "@durable-agents/store-postgres";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { crashAgent } from "./crash-agent.js";
import { postgresExecutionLog, type ExecutionLog } from "./execution-log.js";
import { parseFlags } from "./flags.js";
import { sqliteExecutionLog } from "./sqlite-execution-log.js";
import { installTransactionProbe, type TransactionProbe } from "./transaction-probe.js";

const flags = parseFlags(process.argv.slice(2), {
  store: process.env.CRASH_STORE ?? "postgres",
  "database-url": process.env.CRASH_DATABASE_URL ?? "",
  "sqlite-path": process.env.CRASH_SQLITE_PATH ?? "",
  "executions-path": "",
  synchronous: "full",
  "tx-state-dir": "",
  "lease-ttl-ms": "1500",
  "linger-ms": "",
  "poll-interval-ms": "100",
  "failure-rate": "0.2",
  concurrency: "16",
  "read-tool-hold-ms": "",
  "compress-heads": "false",
});

const fail = (message: string): never => {
  process.stderr.write(`worker-process: ${message}\n`);
  process.exit(2);
};

const report = (kind: string, error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown })?.code;
  process.stderr.write(
    `${JSON.stringify({ kind, pid: process.pid, message, code: typeof code === "string" ? code : null })}\n`,
  );
};

interface Opened {
  readonly store: SessionStore;
  readonly executions: ExecutionLog;
  /** Resolves once the store hears other processes' writes. */
  listening(): Promise<void>;
  close(): Promise<void>;
  readonly probe: TransactionProbe | null;
}

function openPostgres(): Opened {
  const databaseUrl =
    flags["database-url"] || fail("--database-url (or CRASH_DATABASE_URL) is required for --store postgres");
  const storePool = new pg.Pool({ connectionString: databaseUrl, max: 12, connectionTimeoutMillis: 5000 });
  const toolPool = new pg.Pool({ connectionString: databaseUrl, max: 6, connectionTimeoutMillis: 5000 });
  // Idle connections die when PostgreSQL restarts; without a listener that would end the process.
  storePool.on("error", (error) => report("pool", error));
  toolPool.on("error", (error) => report("pool", error));
  const store = new PostgresStore({
    pool: storePool,
    pollIntervalMs: 500,
    ...(flags["compress-heads"] === "true" ? { compressHeads: true } : {}),
  });
  return {
    store,
    executions: postgresExecutionLog(toolPool),
    listening: () => store.listening(),
    close: async () => {
      await store.close();
      await Promise.all([storePool.end(), toolPool.end()]);
    },
    probe: null,
  };
}

function openSqlite(): Opened {
  const path = flags["sqlite-path"] || fail("--sqlite-path (or CRASH_SQLITE_PATH) is required for --store sqlite");
  const synchronous = flags.synchronous;
  if (synchronous !== "full" && synchronous !== "normal") fail(`--synchronous is full or normal, not ${synchronous}`);
  const executions = sqliteExecutionLog(flags["executions-path"] || `${path}.executions.db`);
  // Installed before the store opens its connection, so that every write transaction is seen.
  const probe = flags["tx-state-dir"]
    ? installTransactionProbe({
        stateFile: join(flags["tx-state-dir"], `${process.pid}.state`),
        maxPauseMs: 1000,
        ignore: (db) => db === executions.db,
      })
    : null;
  const store = new SqliteStore({ path, synchronous: synchronous as "full" | "normal" });
  return {
    store,
    executions,
    // The store watches the file from its first subscriber on (the worker subscribes in start()).
    listening: async () => {},
    close: async () => {
      await store.close();
      executions.close();
    },
    probe,
  };
}

if (flags["compress-heads"] !== "true" && flags["compress-heads"] !== "false")
  fail(`--compress-heads is true or false, not ${flags["compress-heads"]}`);
if (flags["compress-heads"] === "true" && flags.store !== "postgres")
  fail("--compress-heads is a PostgreSQL store's setting: not with --store sqlite");
const opened =
  flags.store === "postgres"
    ? openPostgres()
    : flags.store === "sqlite"
      ? openSqlite()
      : fail(`unknown --store ${flags.store} (postgres or sqlite)`);
const definition = crashAgent({ executions: opened.executions, failureRate: Number(flags["failure-rate"]) });
const worker = new Worker({
  store: opened.store,
  sessions: [definition],
  workerId: `crash-worker-${process.pid}`,
  leaseTtlMs: Number(flags["lease-ttl-ms"]),
  ...(flags["linger-ms"] === "" ? {} : { lingerMs: Number(flags["linger-ms"]) }),
  ...(flags["read-tool-hold-ms"] === "" ? {} : { readToolHoldMs: Number(flags["read-tool-hold-ms"]) }),
  pollIntervalMs: Number(flags["poll-interval-ms"]),
  concurrency: Number(flags.concurrency),
  onError: (error) => report("worker", error),
});
worker.start();
await opened.listening();
process.stdout.write(`${JSON.stringify({ ready: process.pid })}\n`);

// The parent holds our stdin open; when it is gone (it died or was killed), so are we. It may also
// ask for a pause inside the next write transaction (SQLite, with a probe).
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
  input += chunk;
  for (let newline = input.indexOf("\n"); newline >= 0; newline = input.indexOf("\n")) {
    const line = input.slice(0, newline).trim();
    input = input.slice(newline + 1);
    if (line === "pause-in-commit") opened.probe?.armPause();
  }
});
process.stdin.on("end", () => process.exit(1));
process.stdin.on("error", () => process.exit(1));
process.stdin.resume();

process.once("SIGTERM", () => {
  void (async () => {
    await worker.stop({ timeoutMs: 5000 });
    await opened.close();
    process.exit(0);
  })();
});

#!/usr/bin/env node
/**
 * The soak: `pnpm --filter @durable-agents/crash-tests soak -- --sessions 500 --workers 4 --kills 100
 * --minutes 10 [--restarts 2] [--seed 7] [--database-url postgres://...]`. Sessions are started
 * evenly over `--minutes`; kills and restarts are spread over the run's progress. Without a URL it
 * starts a private PostgreSQL (and can then restart it). With `--store sqlite` the sessions are in
 * one SQLite file instead (`--sqlite-path`, default a new file in a temporary folder, removed
 * afterwards; no restarts). `--cancel-rate` (0.2) is the share of turns the driver tries to
 * cancel. Prints the counts; exits 1 on any violation.
 */
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import pg from "pg";
import { startPostgres, type PostgresServer } from "@durable-agents/store-postgres/testing";
import { runCrashScenario } from "./crash-driver.js";
import { parseFlags } from "./flags.js";
import { formatReport } from "./format-report.js";
import { sqliteIntegrityCheck } from "./store-backend.js";

const flags = parseFlags(process.argv.slice(2), {
  sessions: "500",
  workers: "4",
  kills: "100",
  restarts: "0",
  minutes: "10",
  seed: "1",
  "max-turns": "3",
  "lease-ttl-ms": "1500",
  "failure-rate": "0.2",
  "cancel-rate": "0.2",
  "timeout-minutes": "",
  "database-url": "",
  store: "postgres",
  "sqlite-path": "",
  synchronous: "full",
  "read-tool-hold-ms": "0",
  "compress-heads": "false",
});
const number = (name: keyof typeof flags) => {
  const value = Number(flags[name]);
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} must be a non-negative number`);
  return value;
};
const minutes = number("minutes");
const readToolHoldMs = number("read-tool-hold-ms");
if (flags["compress-heads"] !== "true" && flags["compress-heads"] !== "false")
  throw new Error(`--compress-heads is true or false, not ${flags["compress-heads"]}`);
if (flags["compress-heads"] === "true" && flags.store !== "postgres")
  throw new Error("--compress-heads is a PostgreSQL store's setting: not with --store sqlite");
const timeoutMinutes = flags["timeout-minutes"] ? number("timeout-minutes") : minutes + 10;

const common = {
  sessions: number("sessions"),
  workers: number("workers"),
  kills: number("kills"),
  seed: number("seed"),
  maxTurns: number("max-turns"),
  leaseTtlMs: number("lease-ttl-ms"),
  failureRate: number("failure-rate"),
  cancelRate: number("cancel-rate"),
  ...(readToolHoldMs > 0 ? { readToolHoldMs } : {}),
  ...(flags["compress-heads"] === "true" ? { compressHeads: true } : {}),
  spreadMs: minutes * 60_000,
  timeoutMs: timeoutMinutes * 60_000,
  log: (line: string) => process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`),
};

if (flags.store === "sqlite") {
  if (number("restarts") > 0) throw new Error("--restarts are PostgreSQL restarts: not with --store sqlite");
  if (flags.synchronous !== "full" && flags.synchronous !== "normal")
    throw new Error("--synchronous is full or normal");
  const temp = flags["sqlite-path"] ? null : tempStoreDir("durable-agents-soak-");
  const path = flags["sqlite-path"] || temp!.file("sessions.db");
  process.stdout.write(`sessions in the SQLite file ${path}\n`);
  let exitCode = 1;
  try {
    const result = await runCrashScenario({ ...common, sqlitePath: path, sqliteSynchronous: flags.synchronous });
    const integrity = sqliteIntegrityCheck(path);
    process.stdout.write(`${formatReport(result)}\nPRAGMA integrity_check: ${integrity.join("; ")}\n`);
    exitCode = result.violations.length === 0 && integrity.join() === "ok" ? 0 : 1;
  } finally {
    temp?.remove();
  }
  process.exit(exitCode);
} else if (flags.store !== "postgres") {
  throw new Error(`--store is postgres or sqlite, not ${flags.store}`);
}

let server: PostgresServer | undefined;
let databaseUrl = flags["database-url"];
if (!databaseUrl) {
  server = await startPostgres();
  databaseUrl = server.connectionString;
  process.stdout.write(`started a private PostgreSQL on port ${server.port}\n`);
} else if (number("restarts") > 0) {
  throw new Error("--restarts needs the soak's own PostgreSQL (leave out --database-url)");
}
// A database of the run's own, so that its checks see only its sessions.
const name = `soak_${Date.now()}`;
const admin = new pg.Client({ connectionString: databaseUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
await admin.end();
const url = new URL(databaseUrl);
url.pathname = `/${name}`;

let exitCode = 1;
try {
  const result = await runCrashScenario({
    databaseUrl: url.toString(),
    ...(server ? { server } : {}),
    ...common,
    restarts: number("restarts"),
  });
  process.stdout.write(`${formatReport(result)}\n`);
  exitCode = result.violations.length === 0 ? 0 : 1;
} finally {
  if (server) await server.stop();
  else {
    const cleanup = new pg.Client({ connectionString: databaseUrl });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await cleanup.end();
  }
}
process.exit(exitCode);

/**
 * Throughput: many sessions at once on store-postgres or store-sqlite, driven by 1, 2 or 4 worker
 * processes; the completed steps per second from the first lease to the last turn's end.
 */
import { fork, type ChildProcess } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { SessionClient, type SessionStore } from "@durable-agents/core";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import { SqliteStore } from "@durable-agents/store-sqlite";
import type { ChildMessage, ThroughputRunner } from "./throughput-worker.js";
import { AGENT_NAME, stepsPerTurn, turnScript } from "./workload.js";

export interface ThroughputResult {
  readonly store: ThroughputStoreKind;
  /**
   * What drives the turns: `sdk`, the workload's OpenAI Agents SDK agent; `scripted`, core's
   * ScriptedRunner with the same turns (no framework: the durability layer's own cost).
   */
  readonly runner: ThroughputRunner;
  readonly processes: number;
  readonly round: number;
  readonly sessions: number;
  readonly steps: number;
  readonly seconds: number;
  readonly stepsPerSecond: number;
  /** CPU time of the worker processes, in core-seconds per second of the run. */
  readonly workerCpuCores: number;
  /**
   * CPU time of the PostgreSQL server's processes (a local server only), in core-seconds per
   * second; 0 for store-sqlite (no server: SQLite runs inside the worker processes).
   */
  readonly postgresCpuCores: number;
  /** CPU milliseconds per step, the worker processes' and PostgreSQL's together. */
  readonly cpuMsPerStep: number;
  /**
   * PostgreSQL: statements the worker processes sent per step (the LISTEN connection's heartbeat
   * included). SQLite: store calls (commit, acquireLease, readEvents, ...) per step.
   */
  readonly queriesPerStep: number;
  readonly queriesPerStepByStatement: Record<string, number>;
  /** Busy share of the whole machine's cores during the run (every process, PostgreSQL included), 0..1. */
  readonly machineBusy: number;
  /** CPU of this benchmark process (it polls for the end every 10 ms), in cores. */
  readonly benchProcessCpuCores: number;
  /** Busy cores not accounted for by the workers, PostgreSQL and this process: the machine's other tenants. */
  readonly otherCpuCores: number;
}

export type ThroughputStoreKind = "postgres" | "sqlite";

/** Where the sessions live: a PostgreSQL database (a schema per run), or a folder (a SQLite file per run). */
export type ThroughputStore =
  | { readonly kind: "postgres"; readonly connectionString: string }
  | { readonly kind: "sqlite"; readonly dir: string };

export interface ThroughputOptions {
  readonly target: ThroughputStore;
  readonly processes: number;
  /** Numbers the runs of one process count (each run gets its own schema). */
  readonly round: number;
  readonly sessions: number;
  readonly turns: number;
  readonly toolCalls: number;
  /** Sessions one worker process drives at once. */
  readonly concurrency: number;
  /** Default `sdk`. */
  readonly runner?: ThroughputRunner;
}

const workerPath = fileURLToPath(new URL("./throughput-worker.js", import.meta.url));

function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const cpu of cpus()) {
    const t = cpu.times;
    const all = t.user + t.nice + t.sys + t.idle + t.irq;
    total += all;
    busy += all - t.idle;
  }
  return { busy, total };
}

/**
 * CPU ticks of the PostgreSQL server behind the pool, per process: the postmaster and its children,
 * read from /proc. Null when the server is not on this machine (or /proc is not there).
 */
export async function postgresCpuTicks(pool: pg.Pool): Promise<Map<number, number> | null> {
  try {
    const result = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    const backend = readStat(result.rows[0]!.pid);
    if (!backend) return null;
    const postmaster = backend.ppid;
    const ticks = new Map<number, number>([[postmaster, readStat(postmaster)?.ticks ?? 0]]);
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = readStat(Number(entry));
      if (stat?.ppid === postmaster) ticks.set(Number(entry), stat.ticks);
    }
    return ticks;
  } catch {
    return null;
  }
}

/** CPU ms the server's processes used between two readings (a process gone by the second is left out). */
function serverCpuMs(before: Map<number, number> | null, after: Map<number, number> | null): number {
  if (!before || !after) return Number.NaN;
  let ticks = 0;
  for (const [pid, value] of after) ticks += value - (before.get(pid) ?? 0);
  return (ticks * 1000) / CLOCK_TICKS;
}

/** Linux's USER_HZ, 100 on every common build. */
const CLOCK_TICKS = 100;

function readStat(pid: number): { ppid: number; ticks: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    // After the name: state(0) ppid(1) ... utime(11) stime(12)
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}

/** What the phase needs of a store besides the store itself: the workers' arguments and two counts. */
interface Backend {
  readonly store: SessionStore;
  readonly workerArgs: readonly string[];
  /** Sessions that consumed their last message and have nothing left to run. */
  done(turns: number): Promise<number>;
  /** Steps completed (from the `step_completed` events) and turns failed. */
  counted(): Promise<{ steps: number; failed: number }>;
  /** CPU ticks of the server's processes, or null (no server, or not on this machine). */
  serverTicks(): Promise<Map<number, number> | null>;
  close(): Promise<void>;
}

async function postgresBackend(connectionString: string, schema: string, concurrency: number): Promise<Backend> {
  const pool = new pg.Pool({ connectionString, max: 4 });
  pool.on("error", () => {});
  const store = new PostgresStore({ pool, schema });
  await migrate(pool, { schema });
  await pool.query("SELECT 1"); // every connection the phase uses is open before the CPU is read
  return {
    store,
    workerArgs: ["postgres", connectionString, schema, String(concurrency)],
    async done(turns) {
      // A cheap check of the sessions table (one row per session, no JSON).
      const result = await pool.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM ${schema}.sessions WHERE inbox_cursor >= $1 AND NOT runnable`,
        [turns],
      );
      return Number(result.rows[0]!.n);
    },
    async counted() {
      const result = await pool.query<{ steps: string; failed: string }>(
        `SELECT count(*) FILTER (WHERE type = 'step_completed' AND data->>'step' IN ('RunModel', 'CallTool'))::text AS steps,
                count(*) FILTER (WHERE type = 'turn_failed')::text AS failed
         FROM ${schema}.events`,
      );
      return { steps: Number(result.rows[0]!.steps), failed: Number(result.rows[0]!.failed) };
    },
    serverTicks: () => postgresCpuTicks(pool),
    async close() {
      await store.close();
      await pool.end();
    },
  };
}

function sqliteBackend(file: string, concurrency: number): Backend {
  const store = new SqliteStore({ path: file });
  // The bench's own read-only connection for the two counts: a reader never blocks the writers.
  let reader: DatabaseSync | null = null;
  const read = () => (reader ??= new DatabaseSync(file, { readOnly: true }));
  return {
    store,
    workerArgs: ["sqlite", file, String(concurrency)],
    async done(turns) {
      const row = read()
        .prepare("SELECT count(*) AS n FROM sessions WHERE inbox_cursor >= ? AND NOT runnable")
        .get(turns) as { n: number };
      return Number(row.n);
    },
    async counted() {
      const row = read()
        .prepare(
          `SELECT coalesce(sum(type = 'step_completed' AND json_extract(data, '$.step') IN ('RunModel', 'CallTool')), 0) AS steps,
                  coalesce(sum(type = 'turn_failed'), 0) AS failed
           FROM events`,
        )
        .get() as { steps: number; failed: number };
      return { steps: Number(row.steps), failed: Number(row.failed) };
    },
    serverTicks: async () => null,
    async close() {
      reader?.close();
      await store.close();
    },
  };
}

export async function runThroughput(options: ThroughputOptions): Promise<ThroughputResult> {
  const kind = options.target.kind;
  const runner = options.runner ?? "sdk";
  const tag = runner === "sdk" ? "" : `_${runner}`;
  const backend =
    options.target.kind === "postgres"
      ? await postgresBackend(
          options.target.connectionString,
          `bench_tp${options.processes}_r${options.round}${tag}`,
          options.concurrency,
        )
      : sqliteBackend(
          join(options.target.dir, `throughput-${options.processes}p-r${options.round}${tag}.db`),
          options.concurrency,
        );
  const store = backend.store;
  const children: ChildProcess[] = [];
  try {
    const client = new SessionClient({ store, agents: [AGENT_NAME] });
    // Every session gets all its turns' messages up front: they queue and run in order.
    for (let s = 0; s < options.sessions; s++) {
      const sessionId = `tp-${kind}${options.processes}-r${options.round}${tag}-s${s}`;
      await client.startSession({ agent: AGENT_NAME, sessionId, message: turnScript(sessionId, 1, options.toolCalls) });
      for (let t = 2; t <= options.turns; t++)
        await client.sendMessage(sessionId, turnScript(sessionId, t, options.toolCalls));
    }
    const stopped: Promise<{ cpuMs: number; queries: Record<string, number> }>[] = [];
    const ready: Promise<void>[] = [];
    for (let p = 0; p < options.processes; p++) {
      const child = fork(workerPath, [...backend.workerArgs, runner], {
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      children.push(child);
      ready.push(
        new Promise((resolve, reject) => {
          child.on("message", (message: ChildMessage) => {
            if (message.type === "ready") resolve();
          });
          child.once("exit", (code) => reject(new Error(`worker process exited early (${code})`)));
        }),
      );
      stopped.push(
        new Promise((resolve, reject) => {
          child.on("message", (message: ChildMessage) => {
            if (message.type === "stopped") resolve(message);
            if (message.type === "error") reject(new Error(`worker process: ${message.message}`));
          });
        }),
      );
    }
    await Promise.all(ready);
    const expectedTurns = options.sessions * options.turns;
    await backend.done(options.turns); // the phase's connections are open before the CPU is read
    const cpuStart = cpuTimes();
    const ownCpuStart = process.cpuUsage();
    const serverCpuStart = await backend.serverTicks();
    const start = performance.now();
    for (const child of children) child.send({ type: "go" });
    let end = start;
    // A session is done when it consumed its last message and has nothing left to run.
    for (;;) {
      if ((await backend.done(options.turns)) >= options.sessions) {
        end = performance.now();
        break;
      }
      if (performance.now() - start > 300_000) throw new Error("the throughput run did not finish within 5 minutes");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const cpuEnd = cpuTimes();
    const ownCpu = process.cpuUsage(ownCpuStart);
    const serverCpuEnd = serverCpuStart === null ? null : await backend.serverTicks();
    const serverMs = kind === "sqlite" ? 0 : serverCpuMs(serverCpuStart, serverCpuEnd);
    for (const child of children) child.send({ type: "stop" });
    const reports = await Promise.all(stopped);
    const counted = await backend.counted();
    const steps = counted.steps;
    if (counted.failed > 0) throw new Error(`${counted.failed} turns failed in the throughput run`);
    const expectedSteps = expectedTurns * stepsPerTurn(options.toolCalls);
    if (steps !== expectedSteps)
      throw new Error(`the throughput run completed ${steps} steps, expected ${expectedSteps}`);
    const seconds = (end - start) / 1000;
    const machineBusy = (cpuEnd.busy - cpuStart.busy) / Math.max(1, cpuEnd.total - cpuStart.total);
    const cpuMs = reports.reduce((sum, r) => sum + r.cpuMs, 0);
    const queries: Record<string, number> = {};
    for (const report of reports)
      for (const [key, n] of Object.entries(report.queries)) queries[key] = (queries[key] ?? 0) + n;
    const totalQueries = Object.values(queries).reduce((sum, n) => sum + n, 0);
    return {
      store: kind,
      runner,
      processes: options.processes,
      round: options.round,
      sessions: options.sessions,
      steps,
      seconds,
      stepsPerSecond: steps / seconds,
      workerCpuCores: cpuMs / 1000 / seconds,
      postgresCpuCores: serverMs / 1000 / seconds,
      cpuMsPerStep: (cpuMs + serverMs) / steps,
      queriesPerStep: totalQueries / steps,
      queriesPerStepByStatement: Object.fromEntries(
        Object.entries(queries)
          .sort((a, b) => b[1] - a[1])
          .map(([key, n]) => [key, Math.round((n / steps) * 100) / 100]),
      ),
      machineBusy,
      benchProcessCpuCores: (ownCpu.user + ownCpu.system) / 1e6 / seconds,
      otherCpuCores:
        machineBusy * cpus().length -
        cpuMs / 1000 / seconds -
        serverMs / 1000 / seconds -
        (ownCpu.user + ownCpu.system) / 1e6 / seconds,
    };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
    await backend.close();
  }
}

/**
 * A worker PROCESS for the throughput phase (started with `fork`): one core `Worker` on a
 * PostgresStore or a SqliteStore. It connects, says `ready`, starts leasing on `go`, and on `stop`
 * stops gracefully, reports its CPU time and exits.
 *
 * argv: postgres <connection string> <schema> <concurrency> <runner>
 *       sqlite <store file> <concurrency> <runner>
 * runner: `sdk` (the workload's OpenAI Agents SDK agent) or `scripted` (core's ScriptedRunner, the
 * same turns with no framework: the durability layer's own cost under load).
 */
import pg from "pg";
import { defineSession, SessionClient, Worker, type SessionDefinition, type SessionStore } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { PostgresStore } from "@durable-agents/store-postgres";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { markedScriptedRunner, StepMarks } from "./marked-runner.js";
import { StepClock } from "./step-clock.js";
import { AGENT_NAME, makeDefinition, TOOL_NAME, turnScript } from "./workload.js";

export type ThroughputRunner = "sdk" | "scripted";

export type ParentMessage = { readonly type: "go" } | { readonly type: "stop" };
export type ChildMessage =
  | { readonly type: "ready" }
  | {
      readonly type: "stopped";
      readonly cpuMs: number;
      readonly queries: Record<string, number>;
    }
  | { readonly type: "error"; readonly message: string };

interface Opened {
  readonly store: SessionStore;
  readonly concurrency: number;
  /** Counts by statement (PostgreSQL) or by store call (SQLite), reset after the warm-up. */
  readonly queries: Record<string, number>;
  connect(): Promise<void>;
  close(): Promise<void>;
}

function openPostgres(url: string, schema: string, concurrency: number): Opened {
  const max = Math.max(4, Math.min(concurrency + 2, 20));
  // No idle timeout: the connections opened before the run stay open until it starts.
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 0 });
  pool.on("error", () => {});
  // Counts the store's statements by name (the store runs each as a named prepared statement).
  const queries: Record<string, number> = {};
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const config = args[0] as { name?: string } | string;
    const key =
      typeof config === "string"
        ? config.trim().split(/\s+/)[0]!
        : (config.name ?? "unnamed").replace(/^durable_agents_[a-z0-9_]+?_(?=[a-zA-Z]+$)/, "");
    queries[key] = (queries[key] ?? 0) + 1;
    return query(...args);
  };
  // Probes only (bench/probe/throughput-ab.mjs): BENCH_COMPRESS_HEADS=1 writes compressed heads, to
  // weigh the compression; BENCH_COMMITS_IN_FLIGHT sets commitsInFlight (Infinity: no group commit).
  const inFlight = process.env.BENCH_COMMITS_IN_FLIGHT;
  const store = new PostgresStore({
    pool,
    schema,
    compressHeads: process.env.BENCH_COMPRESS_HEADS === "1",
    ...(inFlight ? { commitsInFlight: Number(inFlight) } : {}),
  });
  return {
    store,
    concurrency,
    queries,
    // Every connection of the pool is opened before the run, as in a worker that has been up for a
    // while: a connection's start (PostgreSQL forks a backend for it, which then loads its caches)
    // is not a step's cost (bench/README.md, "The worker's connections opened before the run").
    connect: async () => {
      const clients = await Promise.all(Array.from({ length: max }, () => pool.connect()));
      for (const client of clients) client.release();
    },
    close: async () => {
      await store.close();
      await pool.end();
    },
  };
}

/** A SqliteStore whose calls are counted by method (each is one or two transactions or reads). */
function openSqlite(file: string, concurrency: number): Opened {
  const inner = new SqliteStore({ path: file });
  const queries: Record<string, number> = {};
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== "function" || typeof name !== "string" || name === "subscribe" || name === "close")
        return value;
      return (...args: unknown[]) => {
        queries[name] = (queries[name] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, concurrency, queries, connect: async () => {}, close: () => inner.close() };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (!process.send) throw new Error("throughput-worker runs forked");
  const send = (message: ChildMessage) => process.send!(message);
  let opened: Opened;
  const runner = argv.at(-1);
  if (runner !== "sdk" && runner !== "scripted") throw new Error(`unknown runner "${runner}" (sdk or scripted)`);
  if (argv[0] === "postgres" && argv.length === 5) opened = openPostgres(argv[1]!, argv[2]!, Number(argv[3]));
  else if (argv[0] === "sqlite" && argv.length === 4) opened = openSqlite(argv[1]!, Number(argv[2]));
  else
    throw new Error(
      "usage: throughput-worker postgres <url> <schema> <concurrency> <runner> | sqlite <file> <concurrency> <runner>",
    );
  const { store, concurrency, queries } = opened;
  const definition = throughputDefinition(runner);
  const worker = new Worker({
    store,
    sessions: [definition],
    concurrency,
    onError: (error) => send({ type: "error", message: String(error) }),
  });
  await opened.connect();
  await warmUp(runner);
  for (const key of Object.keys(queries)) delete queries[key];
  const cpuStart = process.cpuUsage();
  process.on("message", (message: ParentMessage) => {
    if (message.type === "go") {
      worker.start();
    } else if (message.type === "stop") {
      void (async () => {
        await worker.stop();
        await opened.close();
        const cpu = process.cpuUsage(cpuStart);
        send({ type: "stopped", cpuMs: (cpu.user + cpu.system) / 1000, queries });
        process.disconnect();
      })();
    }
  });
  send({ type: "ready" });
}

/** The workload's agent on the given runner. */
function throughputDefinition(runner: ThroughputRunner): SessionDefinition {
  if (runner === "scripted") {
    return defineSession({
      name: AGENT_NAME,
      runner: markedScriptedRunner(new StepMarks()),
      policies: { [TOOL_NAME]: { effect: "read" } },
    });
  }
  const clock = new StepClock();
  clock.enabled = false;
  return makeDefinition(clock).definition;
}

/**
 * Runs a few sessions on an in-process memory store first, so that this process's code is compiled
 * (JIT) before the measured run, as in a worker that has been up for a while.
 */
async function warmUp(runner: ThroughputRunner): Promise<void> {
  const store = new MemoryStore();
  const worker = new Worker({ store, sessions: [throughputDefinition(runner)] }).start();
  const client = new SessionClient({ store, agents: [AGENT_NAME] });
  for (let s = 0; s < 8; s++) {
    const sessionId = `warm-${s}`;
    await client.startSession({ agent: AGENT_NAME, sessionId, message: turnScript(sessionId, 1, 2) });
    await client.sendMessage(sessionId, turnScript(sessionId, 2, 2));
  }
  for (let s = 0; s < 8; s++) {
    await client.waitFor(
      `warm-${s}`,
      (snapshot) => snapshot.turnCount >= 2 && snapshot.status === "idle" && snapshot.queuedMessages === 0,
    );
  }
  await worker.stop();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

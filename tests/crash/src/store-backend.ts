/**
 * The store a crash run uses, as the driver needs it: the driver's own store for the client, the
 * flags that give every worker process the same store, the tools' execution log, how to read back
 * what the run left (`RunData`), and how to pick the moment of a kill. Two kinds:
 *
 * - `postgres`: the run's database (`databaseUrl`); the tools' log is a table in it.
 * - `sqlite`: one store file (`sqlitePath`) shared by every worker process and the driver; the tools'
 *   log is a file of its own beside it; every worker records its transaction state (transaction-probe.ts)
 *   so that kills can be aimed at, and counted in, open write transactions; the file's
 *   `PRAGMA integrity_check` runs after every kill.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import type { InboxEntry, SessionHead, SessionStore } from "@durable-agents/core";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { createExecutionTable, EXECUTION_TABLE } from "./execution-log.js";
import { loadRunData, type RunData, type SessionRow, type StoredEvent } from "./run-data.js";
import { createSqliteExecutionTable, readSqliteExecutions, sqliteBusyWorkers } from "./sqlite-execution-log.js";
import { readTransactionState, type TransactionState } from "./transaction-probe.js";
import type { WorkerFleet, WorkerLife } from "./worker-fleet.js";

export type StoreKind = "postgres" | "sqlite";

/** What a backend counts about its kills and its file, for the report. */
export interface StoreFigures {
  /** Kills by what the driver aimed at (`tool call`, `open transaction`, `pause in commit`). */
  killsAimedAt: Record<string, number>;
  /** Kills by the transaction state the dead worker's own record holds (SQLite). */
  killsDiedIn: Partial<Record<TransactionState, number>>;
  /** The same, by aim: `<aim> -> <state>`. */
  killsByAimAndState: Record<string, number>;
  /** Pauses inside a transaction that were asked for and reached before the kill. */
  pausesReached: number;
  /** Of those, the pauses whose open transaction had changed rows (uncommitted when the worker died). */
  pausesWithUncommittedRows: number;
  /** The rows those transactions had changed, together. */
  uncommittedRowsAtKill: number;
  /** `PRAGMA integrity_check` runs on the store file after kills, each answered `ok`. */
  integrityChecksOk: number;
  /** Write transactions begun by all worker processes together (SQLite, from their records). */
  writeTransactions: number;
}

export interface StoreBackend {
  readonly kind: StoreKind;
  /** The driver's own store (for its `SessionClient` and its notifications). */
  readonly store: SessionStore;
  /** The store flags of `worker-process.js`. */
  readonly workerArgs: readonly string[];
  readonly figures: StoreFigures;
  /** Whether an error line of a worker is one the store may legitimately cause (a lost connection). */
  isExpectedWorkerError(line: string): boolean;
  /** SIGKILLs one worker (the `n`-th kill of the run) at a moment of this backend's choosing. */
  kill(fleet: WorkerFleet, n: number, violations: string[]): Promise<WorkerLife>;
  /** After the workers stopped: counts what their records say. */
  finish(lives: readonly WorkerLife[]): void;
  loadRunData(): Promise<RunData>;
  close(): Promise<void>;
}

export interface BackendOptions {
  readonly databaseUrl?: string;
  readonly sqlitePath?: string;
  readonly sqliteSynchronous?: "full" | "normal";
  /** Whether a worker error line says the database was unreachable (PostgreSQL). */
  readonly isConnectionError: (line: string) => boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const nextTick = () => new Promise((resolve) => setImmediate(resolve));
const emptyFigures = (): StoreFigures => ({
  killsAimedAt: {},
  killsDiedIn: {},
  killsByAimAndState: {},
  pausesReached: 0,
  pausesWithUncommittedRows: 0,
  uncommittedRowsAtKill: 0,
  integrityChecksOk: 0,
  writeTransactions: 0,
});
const bump = <K extends string>(record: Partial<Record<K, number>>, key: K) => {
  record[key] = (record[key] ?? 0) + 1;
};

export async function openBackend(options: BackendOptions): Promise<StoreBackend> {
  if (options.databaseUrl && options.sqlitePath)
    throw new Error("a crash run has one store: databaseUrl or sqlitePath, not both");
  if (options.sqlitePath) return openSqliteBackend(options.sqlitePath, options.sqliteSynchronous ?? "full");
  if (options.databaseUrl) return openPostgresBackend(options.databaseUrl, options.isConnectionError);
  throw new Error("a crash run needs a store: databaseUrl (PostgreSQL) or sqlitePath (SQLite)");
}

async function openPostgresBackend(
  databaseUrl: string,
  isConnectionError: (line: string) => boolean,
): Promise<StoreBackend> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 12, connectionTimeoutMillis: 5000 });
  pool.on("error", () => {});
  await migrate(pool);
  await createExecutionTable(pool);
  const store = new PostgresStore({ pool, pollIntervalMs: 500 });
  const figures = emptyFigures();
  return {
    kind: "postgres",
    store,
    workerArgs: ["--store", "postgres", "--database-url", databaseUrl],
    figures,
    isExpectedWorkerError: isConnectionError,
    async kill(fleet) {
      // Prefer a worker that is inside a tool call right now, so that kills land mid-call.
      const busy = await pool
        .query<{ pid: number }>(
          `SELECT DISTINCT worker_pid AS pid FROM ${EXECUTION_TABLE} WHERE finished_at IS NULL AND worker_pid = ANY($1)`,
          [fleet.pids],
        )
        .then((r) => r.rows.map((row) => Number(row.pid)))
        .catch(() => []);
      bump(figures.killsAimedAt, "tool call");
      return fleet.killRandom(busy);
    },
    finish() {},
    loadRunData: () => loadRunData(pool),
    async close() {
      await store.close().catch(() => {});
      await pool.end().catch(() => {});
    },
  };
}

function openSqliteBackend(path: string, synchronous: "full" | "normal"): StoreBackend {
  const executionsPath = `${path}.executions.db`;
  const stateDir = `${path}.tx-state`;
  mkdirSync(stateDir, { recursive: true });
  // The driver's store creates the file and its schema before any worker opens it.
  const store = new SqliteStore({ path, synchronous });
  createSqliteExecutionTable(executionsPath);
  const checker = new DatabaseSync(path, { timeout: 10_000 });
  const figures = emptyFigures();
  const stateOf = (pid: number) => readTransactionState(join(stateDir, `${pid}.state`));
  const inTransaction = (pid: number) => {
    const state = stateOf(pid)?.state;
    return state === "open" || state === "committing";
  };
  const modes = ["tool call", "open transaction", "pause in commit"] as const;

  async function aimAndKill(fleet: WorkerFleet, mode: (typeof modes)[number]): Promise<WorkerLife> {
    if (mode === "tool call") {
      return fleet.killRandom(sqliteBusyWorkers(executionsPath, fleet.pids));
    }
    if (mode === "open transaction") {
      // Look at the workers' records as fast as this process can for a while, and kill the first
      // one found inside a write transaction at once (its record is read just before the signal).
      const until = Date.now() + 300;
      while (Date.now() < until) {
        const found = fleet.pids.filter(inTransaction);
        if (found.length > 0) return fleet.kill(found[Math.floor(Math.random() * found.length)]!);
        await nextTick();
      }
      return fleet.killRandom();
    }
    // Ask one worker to stop inside its next write transaction, then kill it there.
    const pids = fleet.pids;
    const pid = pids[Math.floor(Math.random() * pids.length)]!;
    fleet.tell(pid, "pause-in-commit");
    const until = Date.now() + 3000;
    while (Date.now() < until) {
      const record = stateOf(pid);
      if (record?.state === "paused") {
        figures.pausesReached += 1;
        if (record.changed > 0) figures.pausesWithUncommittedRows += 1;
        figures.uncommittedRowsAtKill += record.changed;
        break;
      }
      await sleep(1);
    }
    return fleet.kill(pid);
  }

  return {
    kind: "sqlite",
    store,
    workerArgs: [
      "--store",
      "sqlite",
      "--sqlite-path",
      path,
      "--executions-path",
      executionsPath,
      "--synchronous",
      synchronous,
      "--tx-state-dir",
      stateDir,
    ],
    figures,
    // No store error is legitimate on one local file: a worker reporting any error is a violation.
    isExpectedWorkerError: () => false,
    async kill(fleet, n, violations) {
      const mode = modes[(n - 1) % modes.length]!;
      bump(figures.killsAimedAt, mode);
      const victim = await aimAndKill(fleet, mode);
      // The record the dead worker left is the state it died in.
      const died = stateOf(victim.pid);
      const state = died?.state ?? "outside";
      bump(figures.killsDiedIn, state);
      bump(figures.killsByAimAndState, `${mode} -> ${state}`);
      // The file is consistent right after the kill, while the other workers go on writing.
      const rows = checker.prepare("PRAGMA integrity_check").all() as { integrity_check: string }[];
      if (rows.length === 1 && rows[0]!.integrity_check === "ok") figures.integrityChecksOk += 1;
      else
        violations.push(
          `PRAGMA integrity_check after kill ${n} (worker ${victim.pid}): ${rows.map((r) => r.integrity_check).join("; ")}`,
        );
      return victim;
    },
    finish(lives) {
      figures.writeTransactions = lives.reduce((sum, life) => sum + (stateOf(life.pid)?.begun ?? 0), 0);
    },
    loadRunData: async () => readSqliteRunData(path, executionsPath),
    async close() {
      checker.close();
      await store.close();
    },
  };
}

/** Everything a run left in the store file and the executions file, read with plain SQL. */
export function readSqliteRunData(path: string, executionsPath = `${path}.executions.db`): RunData {
  const db = new DatabaseSync(path, { readOnly: true, timeout: 10_000 });
  try {
    const sessions = new Map<string, SessionRow>();
    const rows = db
      .prepare("SELECT session_id, head, inbox_cursor, last_inbox_seq, last_event_seq FROM sessions")
      .all() as Record<string, unknown>[];
    for (const row of rows) {
      sessions.set(String(row.session_id), {
        head: JSON.parse(String(row.head)) as SessionHead,
        inboxCursor: Number(row.inbox_cursor),
        lastInboxSeq: Number(row.last_inbox_seq),
        lastEventSeq: Number(row.last_event_seq),
      });
    }
    const events = new Map<string, StoredEvent[]>();
    for (const row of db
      .prepare("SELECT session_id, seq, at, type, data FROM events ORDER BY session_id, seq")
      .all() as Record<string, unknown>[]) {
      const list = events.get(String(row.session_id)) ?? [];
      list.push({
        seq: Number(row.seq),
        at: Date.parse(String(row.at)),
        type: String(row.type),
        data: JSON.parse(String(row.data)) as Record<string, unknown>,
      });
      events.set(String(row.session_id), list);
    }
    const inbox: RunData["inbox"] = new Map();
    for (const row of db
      .prepare("SELECT session_id, seq, dedupe_key, entry FROM inbox ORDER BY session_id, seq")
      .all() as Record<string, unknown>[]) {
      const list = inbox.get(String(row.session_id)) ?? [];
      list.push({
        seq: Number(row.seq),
        dedupeKey: row.dedupe_key === null ? null : String(row.dedupe_key),
        entry: JSON.parse(String(row.entry)) as InboxEntry,
      });
      inbox.set(String(row.session_id), list);
    }
    return { sessions, events, inbox, executions: readSqliteExecutions(executionsPath) };
  } finally {
    db.close();
  }
}

/** `PRAGMA integrity_check` of a store file through a connection of its own: `["ok"]` when sound. */
export function sqliteIntegrityCheck(path: string): string[] {
  const db = new DatabaseSync(path, { timeout: 10_000 });
  try {
    return (db.prepare("PRAGMA integrity_check").all() as { integrity_check: string }[]).map(
      (row) => row.integrity_check,
    );
  } finally {
    db.close();
  }
}

/**
 * The tools' execution log when the store is SQLite: the same `tool_executions` table, in a SQLite
 * file of its own beside the store file (never the store's file or connection, so that the record
 * does not go through the store and its writes do not share the store's transactions). Each write is
 * one autocommitted statement, in WAL mode: committed, and so durable against a SIGKILL, before the
 * tool goes on.
 */
import { DatabaseSync } from "node:sqlite";
import {
  EXECUTION_TABLE,
  executionRow,
  startColumns,
  type ExecutionLog,
  type ExecutionResult,
  type ExecutionRow,
} from "./execution-log.js";

/** How long a write waits for the other processes' writes to this file (they are one row each). */
const BUSY_TIMEOUT_MS = 10_000;

function open(path: string, options: { readOnly?: boolean } = {}): DatabaseSync {
  return new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS, ...(options.readOnly ? { readOnly: true } : {}) });
}

/** Creates the file and its table (the driver, before any worker starts). */
export function createSqliteExecutionTable(path: string): void {
  const db = open(path);
  try {
    db.exec("PRAGMA journal_mode = WAL");
    db.exec(`
CREATE TABLE IF NOT EXISTS ${EXECUTION_TABLE} (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  worker_pid INTEGER NOT NULL,
  started_at REAL NOT NULL,
  finished_at REAL,
  result TEXT
)`);
  } finally {
    db.close();
  }
}

/** The execution log of one worker process, on its own connection to the executions file. */
export function sqliteExecutionLog(path: string): ExecutionLog & { readonly db: DatabaseSync; close(): void } {
  const db = open(path);
  // Durable against a crash of the process (the tests' kills); a power loss is not what is tested.
  db.exec("PRAGMA synchronous = NORMAL");
  const insert = db.prepare(`
INSERT INTO ${EXECUTION_TABLE}
  (session_id, turn_id, tool, tool_call_id, idempotency_key, attempt, worker_pid, started_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`);
  const update = db.prepare(`UPDATE ${EXECUTION_TABLE} SET finished_at = ?, result = ? WHERE id = ?`);
  const ofKey = db.prepare(`SELECT * FROM ${EXECUTION_TABLE} WHERE idempotency_key = ? ORDER BY id`);
  return {
    db,
    async start(start) {
      const row = insert.get(...startColumns(start)) as { id: number };
      return Number(row.id);
    },
    async finish(id: number, finishedAt: number, result: ExecutionResult) {
      update.run(finishedAt, result, id);
    },
    async ofKey(key: string) {
      return (ofKey.all(key) as Record<string, unknown>[]).map(executionRow);
    },
    close: () => db.close(),
  };
}

/** The pids among `pids` that have an execution running (started, no end recorded). */
export function sqliteBusyWorkers(path: string, pids: readonly number[]): number[] {
  const db = open(path, { readOnly: true });
  try {
    const rows = db
      .prepare(
        `SELECT DISTINCT worker_pid AS pid FROM ${EXECUTION_TABLE} WHERE finished_at IS NULL AND worker_pid IN (SELECT value FROM json_each(?))`,
      )
      .all(JSON.stringify(pids)) as { pid: number }[];
    return rows.map((row) => Number(row.pid));
  } finally {
    db.close();
  }
}

export function readSqliteExecutions(path: string): ExecutionRow[] {
  const db = open(path, { readOnly: true });
  try {
    const rows = db.prepare(`SELECT * FROM ${EXECUTION_TABLE} ORDER BY id`).all() as Record<string, unknown>[];
    return rows.map(executionRow);
  } finally {
    db.close();
  }
}

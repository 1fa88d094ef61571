/**
 * The tools' own record of every execution, in a table of their own (`tool_executions`), written
 * through their own connections: a row is inserted before the tool does its work and completed after
 * it. The suites compare these rows with the store's events, so the record must not go through the
 * store. On PostgreSQL the table is in the run's database (a pool of its own); on SQLite it is in a
 * file of its own beside the store file (`sqlite-execution-log.ts`).
 */
import type pg from "pg";

export const EXECUTION_TABLE = "tool_executions";

export interface ExecutionStart {
  readonly sessionId: string;
  readonly turnId: string;
  readonly tool: string;
  readonly toolCallId: string;
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly workerPid: number;
  /** Epoch milliseconds, taken before the row is written. */
  readonly startedAt: number;
}

/**
 * How an execution ended: `ok`, a retryable `error`, a `tool_error` the model sees, or `cancelled`:
 * the tool stopped on its abort signal before doing its work (a single-attempt tool then threw
 * `ToolCancelledError`).
 */
export type ExecutionResult = "ok" | "error" | "tool_error" | "cancelled";

export interface ExecutionRow extends ExecutionStart {
  readonly id: number;
  /** Null when the worker died (or the database was away) before it could write the end. */
  readonly finishedAt: number | null;
  readonly result: ExecutionResult | null;
}

/** Where a tool records its executions: the same two writes whatever the store is. */
export interface ExecutionLog {
  /** Writes one execution's start (committed before it returns); returns its row ID for `finish`. */
  start(start: ExecutionStart): Promise<number>;
  finish(id: number, finishedAt: number, result: ExecutionResult): Promise<void>;
  /** The executions under one idempotency key, in order: what a tool's `reconcile` reads. */
  ofKey(idempotencyKey: string): Promise<ExecutionRow[]>;
}

/** The execution log in PostgreSQL's `tool_executions`, through `pool`. */
export function postgresExecutionLog(pool: pg.Pool): ExecutionLog {
  return {
    start: (start) => recordStart(pool, start),
    finish: (id, finishedAt, result) => recordFinish(pool, id, finishedAt, result),
    ofKey: async (key) => {
      const result = await pool.query(`SELECT * FROM ${EXECUTION_TABLE} WHERE idempotency_key = $1 ORDER BY id`, [key]);
      return result.rows.map(executionRow);
    },
  };
}

export async function createExecutionTable(pool: pg.Pool): Promise<void> {
  await pool.query(`
CREATE TABLE IF NOT EXISTS ${EXECUTION_TABLE} (
  id bigserial PRIMARY KEY,
  session_id text NOT NULL,
  turn_id text NOT NULL,
  tool text NOT NULL,
  tool_call_id text NOT NULL,
  idempotency_key text NOT NULL,
  attempt integer NOT NULL,
  worker_pid integer NOT NULL,
  started_at double precision NOT NULL,
  finished_at double precision,
  result text
)`);
}

/** Writes one execution's start; returns its row ID for `finish`. */
export async function recordStart(pool: pg.Pool, start: ExecutionStart): Promise<number> {
  const result = await pool.query<{ id: string }>(
    `INSERT INTO ${EXECUTION_TABLE}
       (session_id, turn_id, tool, tool_call_id, idempotency_key, attempt, worker_pid, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
    startColumns(start),
  );
  return Number(result.rows[0]!.id);
}

/** An execution's start as the values of the INSERT's columns, in their order (both logs). */
export function startColumns(start: ExecutionStart): [string, string, string, string, string, number, number, number] {
  return [
    start.sessionId,
    start.turnId,
    start.tool,
    start.toolCallId,
    start.idempotencyKey,
    start.attempt,
    start.workerPid,
    start.startedAt,
  ];
}

export async function recordFinish(
  pool: pg.Pool,
  id: number,
  finishedAt: number,
  result: ExecutionResult,
): Promise<void> {
  await pool.query(`UPDATE ${EXECUTION_TABLE} SET finished_at = $2, result = $3 WHERE id = $1`, [
    id,
    finishedAt,
    result,
  ]);
}

export async function readExecutions(pool: pg.Pool): Promise<ExecutionRow[]> {
  const result = await pool.query(`SELECT * FROM ${EXECUTION_TABLE} ORDER BY id`);
  return result.rows.map(executionRow);
}

/** One row of `tool_executions` as read from either database. */
export function executionRow(row: Record<string, unknown>): ExecutionRow {
  return {
    id: Number(row.id),
    sessionId: String(row.session_id),
    turnId: String(row.turn_id),
    tool: String(row.tool),
    toolCallId: String(row.tool_call_id),
    idempotencyKey: String(row.idempotency_key),
    attempt: Number(row.attempt),
    workerPid: Number(row.worker_pid),
    startedAt: Number(row.started_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
    result: row.result === null ? null : (String(row.result) as ExecutionResult),
  };
}

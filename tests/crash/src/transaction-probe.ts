/**
 * Where a SQLite worker process stands in its write transactions, for the parent to read at the
 * moment it kills the worker and again after the worker died. The worker wraps
 * `DatabaseSync.prototype.exec` (node:sqlite) before it opens its real `SqliteStore`: the store runs
 * each write as `exec("BEGIN IMMEDIATE")`, its statements, then `exec("COMMIT")` (or `ROLLBACK`), and
 * the wrapper writes one state record at offset 0 of a small file of the worker's own, with a
 * synchronous `pwrite`, at each step:
 *
 * - `open` after `BEGIN IMMEDIATE` returned: the write lock is held, the statements are running;
 * - `committing` just before `COMMIT` is called, replaced just after it returned: SQLite is
 *   appending the transaction's frames to the WAL and syncing them (and checkpointing, when one
 *   is due);
 * - `paused` (on request): the worker stopped inside its transaction, all statements executed,
 *   `COMMIT` not yet called, and waits (at most `maxPauseMs`) to be killed; the record also holds
 *   how many rows the transaction changed (`total_changes()` now minus at its BEGIN), none of
 *   them committed;
 * - `outside` otherwise.
 *
 * Nothing of the store is replaced: the wrapper calls the real `exec` with the same SQL. A SIGKILL
 * cannot interrupt a `pwrite`, so the record a dead worker left is the state it died in.
 */
import { openSync, readFileSync, writeSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";

export type TransactionState = "outside" | "open" | "committing" | "paused";

const codes: Record<TransactionState, string> = { outside: "E", open: "B", committing: "C", paused: "P" };
const states = Object.fromEntries(Object.entries(codes).map(([state, code]) => [code, state])) as Record<
  string,
  TransactionState
>;
const RECORD_BYTES = 24;

export interface TransactionProbe {
  /** The next COMMIT of a store connection pauses first (state `paused`) until killed, or for `maxPauseMs`. */
  armPause(): void;
  /** Write transactions begun so far. */
  readonly begun: number;
}

export function installTransactionProbe(options: {
  readonly stateFile: string;
  /** Longest pause inside a transaction when nobody kills the worker; then it commits as usual. */
  readonly maxPauseMs: number;
  /** Connections that are not the store's (the execution log's). */
  readonly ignore?: (db: DatabaseSync) => boolean;
}): TransactionProbe {
  const fd = openSync(options.stateFile, "w");
  const record = Buffer.alloc(RECORD_BYTES);
  let begun = 0;
  let pauseArmed = false;
  /** total_changes() at the BEGIN of the open transaction, read only while a pause is armed. */
  let changesAtBegin: number | null = null;
  const write = (state: TransactionState, changed = 0) => {
    record.fill(0x20);
    record.write(`${codes[state]} ${begun} ${changed}`, "latin1");
    writeSync(fd, record, 0, RECORD_BYTES, 0);
  };
  write("outside");
  const waitCell = new Int32Array(new SharedArrayBuffer(4));
  const original = DatabaseSync.prototype.exec;
  const ignore = options.ignore ?? (() => false);
  const totalChanges = (db: DatabaseSync) =>
    Number((db.prepare("SELECT total_changes() AS n").get() as { n: number }).n);
  DatabaseSync.prototype.exec = function exec(this: DatabaseSync, sql: string): void {
    if (ignore(this)) {
      original.call(this, sql);
      return;
    }
    const statement = sql.trim().toUpperCase();
    if (statement === "BEGIN IMMEDIATE" || statement === "BEGIN") {
      original.call(this, sql);
      begun += 1;
      changesAtBegin = pauseArmed ? totalChanges(this) : null;
      write("open");
      return;
    }
    if (statement === "COMMIT" || statement === "ROLLBACK") {
      // A pause asked for after this transaction began waits for the next one (its BEGIN count is needed).
      if (statement === "COMMIT" && pauseArmed && changesAtBegin !== null) {
        pauseArmed = false;
        write("paused", totalChanges(this) - changesAtBegin);
        // Blocks this process (and only it) inside its open transaction, holding the write lock.
        Atomics.wait(waitCell, 0, 0, options.maxPauseMs);
      }
      write(statement === "COMMIT" ? "committing" : "open");
      try {
        original.call(this, sql);
        return;
      } finally {
        write(this.isTransaction ? "open" : "outside");
      }
    }
    original.call(this, sql);
  };
  return {
    armPause: () => {
      pauseArmed = true;
    },
    get begun() {
      return begun;
    },
  };
}

/**
 * The state a worker's record says, with its count of transactions begun and (when paused) the
 * rows its open transaction changed; null if unreadable.
 */
export function readTransactionState(
  stateFile: string,
): { state: TransactionState; begun: number; changed: number } | null {
  let text: string;
  try {
    text = readFileSync(stateFile, "latin1");
  } catch {
    return null;
  }
  const state = states[text[0] ?? ""];
  if (!state) return null;
  const [, begun, changed] = text.trim().split(/\s+/);
  return { state, begun: Number(begun) || 0, changed: Number(changed) || 0 };
}

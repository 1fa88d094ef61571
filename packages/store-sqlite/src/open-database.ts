/**
 * Opening a store file: every check that can refuse the file runs before anything is written to
 * it, so a file that is not ours (not SQLite, another program's database, a newer schema) is left
 * exactly as it was. Only then is the file switched to WAL and migrated.
 */
import { statSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { ConfigurationError, StoreOpenError, type StoreOpenReason } from "@durable-agents/core";
import { APPLICATION_ID, LATEST_VERSION, migrations } from "./schema.js";
import {
  sqliteCode,
  SQLITE_BUSY,
  SQLITE_CANTOPEN,
  SQLITE_NOTADB,
  SQLITE_PERM,
  SQLITE_READONLY,
} from "./sqlite-codes.js";

export type Synchronous = "full" | "normal";

export interface OpenOptions {
  readonly path: string;
  readonly synchronous: Synchronous;
  /** How long opening waits for another process that is migrating or checkpointing the file. */
  readonly busyTimeoutMs: number;
}

export function openDatabase(options: OpenOptions): DatabaseSync {
  const { path } = options;
  if (typeof path !== "string" || path.length === 0) {
    throw new ConfigurationError("SqliteStore needs a file path", ["options.path is not a non-empty string"]);
  }
  if (path === ":memory:" || path.startsWith("file:")) {
    throw new ConfigurationError("SqliteStore keeps sessions in a file: give a file path", [
      `options.path is "${path}"`,
    ]);
  }
  if (options.synchronous !== "full" && options.synchronous !== "normal") {
    throw new ConfigurationError('synchronous is "full" or "normal"', [
      `synchronous is ${String(options.synchronous)}`,
    ]);
  }
  const existing = statSync(path, { throwIfNoEntry: false });
  if (existing?.isDirectory()) throw new StoreOpenError("cannot_open", path, `"${path}" is a folder, not a store file`);

  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { timeout: options.busyTimeoutMs });
  } catch (error) {
    throw refusal(path, error, "cannot_open", "cannot be opened");
  }
  try {
    check(db, path);
    configure(db, path, options.synchronous);
    migrate(db, path);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Reads the header fields only: a non-SQLite file fails here, with nothing written. */
function check(db: DatabaseSync, path: string): void {
  let applicationId: number;
  let userVersion: number;
  let objects: number;
  try {
    applicationId = Number((db.prepare("PRAGMA application_id").get() as { application_id: number }).application_id);
    userVersion = Number((db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version);
    objects = Number((db.prepare("SELECT count(*) AS n FROM sqlite_schema").get() as { n: number }).n);
  } catch (error) {
    if (sqliteCode(error) === SQLITE_NOTADB) {
      throw new StoreOpenError("not_a_database", path, `"${path}" is not a SQLite database; it was left untouched`, {
        cause: error,
      });
    }
    throw refusal(path, error, "cannot_open", "cannot be read");
  }
  const ours = applicationId === APPLICATION_ID;
  if (!ours && (applicationId !== 0 || objects > 0)) {
    throw new StoreOpenError(
      "foreign_database",
      path,
      `"${path}" is a SQLite database of another program (application_id ${applicationId}, ${objects} schema objects); it was left untouched`,
    );
  }
  if (userVersion > LATEST_VERSION) {
    throw new StoreOpenError(
      "newer_schema",
      path,
      `"${path}" has store schema version ${userVersion}, newer than this package's ${LATEST_VERSION}: upgrade @durable-agents/store-sqlite; the file was left untouched`,
    );
  }
}

function configure(db: DatabaseSync, path: string, synchronous: Synchronous): void {
  let mode: string;
  try {
    mode = String((db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode: string }).journal_mode);
  } catch (error) {
    throw refusal(path, error, "not_writable", "cannot be written");
  }
  if (mode.toLowerCase() !== "wal") {
    throw new StoreOpenError(
      "not_writable",
      path,
      `"${path}" cannot use write-ahead logging (journal mode stays "${mode}")`,
    );
  }
  db.exec(`PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
  db.exec("PRAGMA foreign_keys = OFF");
}

/** Applies the missing migrations in one write transaction; another process may be doing the same. */
function migrate(db: DatabaseSync, path: string): void {
  try {
    db.exec("BEGIN IMMEDIATE");
  } catch (error) {
    throw refusal(path, error, "not_writable", "cannot be written");
  }
  try {
    const current = Number((db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version);
    if (current > LATEST_VERSION) {
      throw new StoreOpenError(
        "newer_schema",
        path,
        `"${path}" was migrated to schema version ${current} by a newer package`,
      );
    }
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
    }
    if (current < LATEST_VERSION) {
      db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
      db.exec(`PRAGMA user_version = ${LATEST_VERSION}`);
    }
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    if (StoreOpenError.isInstance(error)) throw error;
    throw refusal(path, error, "not_writable", "cannot be migrated");
  }
}

function refusal(path: string, error: unknown, fallback: StoreOpenReason, what: string): StoreOpenError {
  const code = sqliteCode(error);
  const detail = error instanceof Error ? error.message : String(error);
  const reason: StoreOpenReason =
    code === SQLITE_READONLY || code === SQLITE_PERM
      ? "not_writable"
      : code === SQLITE_CANTOPEN
        ? "cannot_open"
        : fallback;
  const hint = code === SQLITE_BUSY ? " (another process holds the file locked)" : "";
  return new StoreOpenError(reason, path, `"${path}" ${what}: ${detail}${hint}`, { cause: error });
}

/**
 * Test helpers: a store on a fresh file in a temporary folder, removed by `cleanup`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StoreHarness } from "@durable-agents/core/conformance";
import { sqliteRawReader } from "../raw-reader.js";
import { SqliteStore, type SqliteStoreOptions } from "../sqlite-store.js";

export interface TempSqliteStore extends StoreHarness {
  readonly store: SqliteStore;
  /** The store file. */
  readonly path: string;
  /** The temporary folder that holds it. */
  readonly dir: string;
  /** Closes the store and the raw reader and removes the folder. */
  cleanup(): Promise<void>;
}

/** A temporary folder for store files; `remove` deletes it with everything in it. */
export function tempStoreDir(prefix = "durable-agents-sqlite-"): {
  dir: string;
  file(name?: string): string;
  remove(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    file: (name = "sessions.db") => join(dir, name),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A `SqliteStore` on a new file in a new temporary folder, with a raw reader of that file. */
export function openTempSqliteStore(options: Omit<SqliteStoreOptions, "path"> = {}): TempSqliteStore {
  const temp = tempStoreDir();
  const path = temp.file();
  const store = new SqliteStore({ ...options, path });
  const raw = sqliteRawReader(path);
  return {
    store,
    raw,
    path,
    dir: temp.dir,
    async cleanup() {
      raw.close();
      await store.close();
      temp.remove();
    },
  };
}

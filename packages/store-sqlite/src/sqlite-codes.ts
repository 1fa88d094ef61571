/** SQLite's primary result codes that the store acts on (https://sqlite.org/rescode.html). */
export const SQLITE_PERM = 3;
export const SQLITE_BUSY = 5;
export const SQLITE_LOCKED = 6;
export const SQLITE_READONLY = 8;
export const SQLITE_CANTOPEN = 14;
export const SQLITE_CONSTRAINT = 19;
export const SQLITE_NOTADB = 26;

/** The primary result code of an error thrown by `node:sqlite`, or undefined for any other error. */
export function sqliteCode(error: unknown): number | undefined {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === "number" ? code & 0xff : undefined;
}

/** Whether the error says another connection holds the lock: worth waiting and trying again. */
export function isBusy(error: unknown): boolean {
  const code = sqliteCode(error);
  return code === SQLITE_BUSY || code === SQLITE_LOCKED;
}

import { DatabaseSync } from "node:sqlite";
import type { RawStoreReader } from "@durable-agents/core/conformance";

/**
 * Reads a store file's tables directly, through a read-only connection of its own, for core's store
 * conformance suite. `close` gives the connection back.
 */
export function sqliteRawReader(path: string): RawStoreReader & { close(): void } {
  const db = new DatabaseSync(path, { readOnly: true, timeout: 5_000 });
  const all = (sql: string, ...params: string[]) => db.prepare(sql).all(...params) as Record<string, unknown>[];
  return {
    async session(sessionId) {
      const row = all("SELECT * FROM sessions WHERE session_id = ?", sessionId)[0];
      if (!row) return null;
      return {
        sessionId: String(row.session_id),
        agent: String(row.agent),
        version: Number(row.version),
        fence: Number(row.fence),
        leaseOwner: row.lease_owner === null ? null : String(row.lease_owner),
        leaseExpiresAt: row.lease_expires_at === null ? null : Number(row.lease_expires_at),
        runnable: Number(row.runnable) === 1,
        inboxCursor: Number(row.inbox_cursor),
        fingerprint: row.fingerprint === "" ? null : String(row.fingerprint),
        definitionWaiting: Number(row.definition_waiting) === 1,
        head: JSON.parse(String(row.head)),
      };
    },
    async history(sessionId) {
      return all("SELECT item FROM history WHERE session_id = ? ORDER BY position", sessionId).map((row) =>
        JSON.parse(String(row.item)),
      );
    },
    async events(sessionId) {
      return all("SELECT seq, type, data FROM events WHERE session_id = ? ORDER BY seq", sessionId).map((row) => ({
        seq: Number(row.seq),
        type: String(row.type),
        data: JSON.parse(String(row.data)),
      }));
    },
    async inbox(sessionId) {
      return all("SELECT seq, dedupe_key, entry FROM inbox WHERE session_id = ? ORDER BY seq", sessionId).map(
        (row) => ({
          seq: Number(row.seq),
          dedupeKey: row.dedupe_key === null ? null : String(row.dedupe_key),
          entry: JSON.parse(String(row.entry)),
        }),
      );
    },
    close: () => db.close(),
  };
}

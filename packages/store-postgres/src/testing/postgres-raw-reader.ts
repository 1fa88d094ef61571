import type { Pool } from "pg";
import type { RawSessionRow, RawStoreReader } from "@durable-agents/core/conformance";
import { joinHead } from "../postgres-store.js";
import { storedHead } from "../head-codec.js";
import { schemaName } from "../schema-name.js";

/** Reads the store's tables with plain SQL, not through `PostgresStore`, for the conformance suite. */
export function postgresRawReader(pool: Pool, schema?: string): RawStoreReader {
  const s = schemaName(schema);
  return {
    async session(sessionId: string): Promise<RawSessionRow | null> {
      const result = await pool.query(
        `SELECT session_id, agent, version, fence, lease_owner,
           (extract(epoch FROM lease_expires_at) * 1000)::bigint AS lease_expires_at,
           runnable, inbox_cursor, fingerprint, definition_waiting, head, head_z, run_state
         FROM ${s}.sessions WHERE session_id = $1`,
        [sessionId],
      );
      const row = result.rows[0];
      if (!row) return null;
      return {
        sessionId: row.session_id,
        agent: row.agent,
        version: Number(row.version),
        fence: Number(row.fence),
        leaseOwner: row.lease_owner,
        leaseExpiresAt: row.lease_expires_at === null ? null : Number(row.lease_expires_at),
        runnable: row.runnable,
        inboxCursor: Number(row.inbox_cursor),
        fingerprint: row.fingerprint === "" ? null : row.fingerprint,
        definitionWaiting: row.definition_waiting,
        head: joinHead(storedHead(row), row.run_state),
      };
    },
    async history(sessionId: string): Promise<unknown[]> {
      const result = await pool.query(`SELECT item FROM ${s}.history WHERE session_id = $1 ORDER BY position`, [
        sessionId,
      ]);
      return result.rows.map((row) => row.item);
    },
    async events(sessionId: string) {
      const result = await pool.query(`SELECT seq, type, data FROM ${s}.events WHERE session_id = $1 ORDER BY seq`, [
        sessionId,
      ]);
      return result.rows.map((row) => ({ seq: Number(row.seq), type: row.type as string, data: row.data as unknown }));
    },
    async inbox(sessionId: string) {
      const result = await pool.query(
        `SELECT seq, dedupe_key, entry FROM ${s}.inbox WHERE session_id = $1 ORDER BY seq`,
        [sessionId],
      );
      return result.rows.map((row) => ({
        seq: Number(row.seq),
        dedupeKey: row.dedupe_key as string | null,
        entry: row.entry as unknown,
      }));
    },
  };
}

/**
 * Everything a run left in the database, read with plain SQL (not through the store or the
 * client): the store's sessions, events and inbox, and the tools' own execution rows.
 */
import type pg from "pg";
import type { InboxEntry, SessionHead } from "@durable-agents/core";
import { storedHead } from "@durable-agents/store-postgres";
import { readExecutions, type ExecutionRow } from "./execution-log.js";

export interface StoredEvent {
  readonly seq: number;
  /** When the store wrote it (epoch ms): PostgreSQL's `now()` of the commit, SQLite's clock in the commit. */
  readonly at: number;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

export interface SessionRow {
  readonly head: SessionHead;
  readonly inboxCursor: number;
  readonly lastInboxSeq: number;
  readonly lastEventSeq: number;
}

export interface RunData {
  readonly sessions: Map<string, SessionRow>;
  readonly events: Map<string, StoredEvent[]>;
  readonly inbox: Map<string, { seq: number; dedupeKey: string | null; entry: InboxEntry }[]>;
  readonly executions: ExecutionRow[];
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export async function loadRunData(pool: pg.Pool, schema = "durable_agents"): Promise<RunData> {
  const sessions = new Map<string, SessionRow>();
  for (const row of (
    await pool.query(
      `SELECT session_id, head, head_z, inbox_cursor, last_inbox_seq, last_event_seq FROM ${schema}.sessions`,
    )
  ).rows) {
    sessions.set(row.session_id, {
      // Json `head` by default; `head_z` when a store was made with compressHeads: true.
      head: storedHead(row),
      inboxCursor: Number(row.inbox_cursor),
      lastInboxSeq: Number(row.last_inbox_seq),
      lastEventSeq: Number(row.last_event_seq),
    });
  }
  const events = new Map<string, StoredEvent[]>();
  for (const row of (
    await pool.query(`SELECT session_id, seq, at, type, data FROM ${schema}.events ORDER BY session_id, seq`)
  ).rows) {
    push(events, row.session_id, {
      seq: Number(row.seq),
      at: (row.at as Date).getTime(),
      type: row.type,
      data: row.data,
    });
  }
  const inbox: RunData["inbox"] = new Map();
  for (const row of (
    await pool.query(`SELECT session_id, seq, dedupe_key, entry FROM ${schema}.inbox ORDER BY session_id, seq`)
  ).rows) {
    push(inbox, row.session_id, { seq: Number(row.seq), dedupeKey: row.dedupe_key, entry: row.entry });
  }
  return { sessions, events, inbox, executions: await readExecutions(pool) };
}

/** The store's statements, prepared once per connection. */
import type { DatabaseSync, StatementSync } from "node:sqlite";

/** A session has work when its flag says so or the inbox is past its cursor (seqs have no gaps). */
const ready = "(runnable OR last_inbox_seq > inbox_cursor)";

/** A session's lease is free (none, or expired by `$now`). */
const leaseFree = "(lease_owner IS NULL OR lease_expires_at <= $now)";
/** A live announcement of the session's definition (in `role`, when given). */
const announced = (role: string | null) => `EXISTS (
    SELECT 1 FROM definition_announcements a
    WHERE a.agent = sessions.agent AND a.fingerprint = sessions.fingerprint${role ? ` AND a.role = '${role}'` : ""}
      AND a.expires_at > $now)`;

const sql = {
  createSession: `
INSERT INTO sessions (session_id, agent, head, version, inbox_cursor, last_event_seq, last_inbox_seq, created_at, touched_at, fingerprint, definition_waiting)
VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING`,
  loadSession: "SELECT head, version, last_event_seq FROM sessions WHERE session_id = ?",
  readHistory: "SELECT item FROM history WHERE session_id = ? AND position >= ? ORDER BY position",
  // The commit reads the row it is about to change, checks lease and version itself, and then
  // sets only the columns that change: a column of the work index (runnable, inbox_cursor) that is
  // in the SET list makes SQLite rewrite the index entry, one more page per commit.
  commitRead: `
SELECT id, version, fence, lease_owner, lease_expires_at, runnable, inbox_cursor, history_length, last_event_seq,
  fingerprint, definition_waiting
FROM sessions WHERE session_id = ?`,
  // ? fingerprint, ? waiting, ? id (only when the pin changed: the fingerprint is in the work index)
  commitPin: "UPDATE sessions SET fingerprint = ?, definition_waiting = ? WHERE id = ?",
  // ? event count, ? id
  commitEvents: "UPDATE sessions SET last_event_seq = last_event_seq + ? WHERE id = ?",
  // ? head, ? history count, ? event count, ? id
  commitHead: `
UPDATE sessions SET head = ?, version = version + 1, history_length = history_length + ?, last_event_seq = last_event_seq + ?
WHERE id = ?`,
  // ? head, ? runnable, ? inbox cursor, ? history count, ? event count, ? id
  commitHeadAndWork: `
UPDATE sessions SET head = ?, version = version + 1, runnable = ?, inbox_cursor = ?,
  history_length = history_length + ?, last_event_seq = last_event_seq + ?
WHERE id = ?`,
  insertHistory: "INSERT INTO history (session_id, position, item) VALUES (?, ?, ?)",
  insertEvent: "INSERT INTO events (session_id, seq, at, type, data) VALUES (?, ?, ?, ?, ?)",
  findDuplicate: "SELECT seq FROM inbox WHERE session_id = ? AND dedupe_key = ?",
  // $session, $now; `leased`: a live lease holds the session (its holder hears the inbox notice, so no `work`)
  bumpInbox: `UPDATE sessions SET last_inbox_seq = last_inbox_seq + 1 WHERE session_id = $session
RETURNING last_inbox_seq, NOT ${leaseFree} AS leased`,
  insertInbox: "INSERT INTO inbox (session_id, seq, dedupe_key, entry, created_at) VALUES (?, ?, ?, ?, ?)",
  readInbox: "SELECT seq, entry FROM inbox WHERE session_id = ? AND seq > ? ORDER BY seq",
  // $agents (json array), $now
  findReady: `
SELECT session_id FROM sessions INDEXED BY sessions_ready
WHERE agent IN (SELECT value FROM json_each($agents)) AND ${ready} AND ${leaseFree}
ORDER BY touched_at LIMIT 1`,
  // $agents, $served (json array, '' for sessions not pinned yet), $migrating (json array), $now
  findReadyPinned: `
SELECT session_id FROM sessions INDEXED BY sessions_ready
WHERE agent IN (SELECT value FROM json_each($agents)) AND ${ready} AND ${leaseFree}
  AND (fingerprint IN (SELECT value FROM json_each($served))
    OR (fingerprint IN (SELECT value FROM json_each($migrating)) AND NOT ${announced("serves")}))
ORDER BY touched_at LIMIT 1`,
  // $agents, $own (json array: what the caller serves or migrates), $now
  findUnserved: `
SELECT session_id FROM sessions INDEXED BY sessions_ready
WHERE agent IN (SELECT value FROM json_each($agents)) AND ${ready} AND ${leaseFree}
  AND fingerprint <> '' AND definition_waiting = 0 AND fingerprint NOT IN (SELECT value FROM json_each($own))
  AND NOT ${announced(null)}
ORDER BY touched_at LIMIT 1`,
  withdrawAnnouncement: "DELETE FROM definition_announcements WHERE worker_id = ?",
  // ? now: rows of workers that stopped renewing them
  dropExpiredAnnouncements: "DELETE FROM definition_announcements WHERE expires_at <= ?",
  insertAnnouncement: `
INSERT INTO definition_announcements (agent, fingerprint, role, worker_id, expires_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET expires_at = excluded.expires_at`,
  // ? worker, ? expires at, ? now, ? id, ? now
  // What findReady / findReadyPinned find, passing over the sessions of $skip (json array), with
  // the session as loadSession reads it (findWork: nothing written, the lease rides in a commit).
  findWork: `
SELECT session_id, fence, head, version, last_event_seq FROM sessions INDEXED BY sessions_ready
WHERE agent IN (SELECT value FROM json_each($agents)) AND ${ready} AND ${leaseFree}
  AND session_id NOT IN (SELECT value FROM json_each($skip))
ORDER BY touched_at LIMIT 1`,
  findWorkPinned: `
SELECT session_id, fence, head, version, last_event_seq FROM sessions INDEXED BY sessions_ready
WHERE agent IN (SELECT value FROM json_each($agents)) AND ${ready} AND ${leaseFree}
  AND (fingerprint IN (SELECT value FROM json_each($served))
    OR (fingerprint IN (SELECT value FROM json_each($migrating)) AND NOT ${announced("serves")}))
  AND session_id NOT IN (SELECT value FROM json_each($skip))
ORDER BY touched_at LIMIT 1`,
  // ? worker, ? fence, ? expires at, ? now, ? id (a commit takes the lease: Commit.claim)
  claimLease: "UPDATE sessions SET lease_owner = ?, fence = ?, lease_expires_at = ?, touched_at = ? WHERE id = ?",
  grantLease: `
UPDATE sessions SET lease_owner = ?, fence = fence + 1, lease_expires_at = ?, touched_at = ?
WHERE session_id = ? AND ${ready} AND (lease_owner IS NULL OR lease_expires_at <= ?)
RETURNING fence, lease_expires_at`,
  // ? expires at, ? id, ? fence, ? worker, ? now
  // ? expires at, ? id (a commit under the live lease extends it: Commit.leaseTtlMs)
  extendLease: "UPDATE sessions SET lease_expires_at = ? WHERE id = ?",
  renewLease: `
UPDATE sessions SET lease_expires_at = ?
WHERE session_id = ? AND fence = ? AND lease_owner = ? AND lease_expires_at > ?
RETURNING lease_expires_at`,
  // ? now, ? id, ? fence
  releaseLease: `
UPDATE sessions SET lease_owner = NULL, lease_expires_at = NULL, touched_at = ?
WHERE session_id = ? AND fence = ? AND lease_owner IS NOT NULL
RETURNING ${ready} AS has_work`,
  bumpWork: "UPDATE signals SET value = value + 1 WHERE name = 'work'",
  readEvents: "SELECT seq, at, type, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
  // The change watcher's reads (another process's writes).
  dataVersion: "PRAGMA data_version",
  lastIds:
    "SELECT (SELECT COALESCE(max(id), 0) FROM events) AS events, (SELECT COALESCE(max(id), 0) FROM inbox) AS inbox, (SELECT value FROM signals WHERE name = 'work') AS work",
  newEvents: "SELECT session_id, max(id) AS last FROM events WHERE id > ? GROUP BY session_id",
  // $after (the last inbox rowid seen), $now; `leased`: a live lease holds the session now
  newInbox: `SELECT i.session_id, max(i.id) AS last, NOT (s.lease_owner IS NULL OR s.lease_expires_at <= $now) AS leased
FROM inbox i JOIN sessions s ON s.session_id = i.session_id WHERE i.id > $after GROUP BY i.session_id`,
} as const;

export type Statements = { readonly [K in keyof typeof sql]: StatementSync };

export function prepareStatements(db: DatabaseSync): Statements {
  const out: Partial<Record<keyof typeof sql, StatementSync>> = {};
  for (const [name, text] of Object.entries(sql) as [keyof typeof sql, string][]) out[name] = db.prepare(text);
  return out as Statements;
}

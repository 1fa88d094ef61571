/**
 * The statements of the store, one per operation, for a validated schema name. Every write is one
 * statement: data-modifying CTEs do the checks, the appends and the NOTIFY in one implicit
 * transaction, so a commit costs one round trip and one WAL flush. A commit's events are one row of
 * `event_batches` (the json array as the commit sent it).
 */
export interface StoreSql {
  readonly createSession: string;
  readonly loadSession: string;
  readonly readHistory: string;
  readonly commit: string;
  readonly commitClaim: string;
  readonly commitGroup: string;
  readonly commitDiagnosis: string;
  readonly claimDiagnosis: string;
  readonly enqueue: string;
  readonly readInbox: string;
  readonly acquireLease: string;
  readonly acquireLeasePinned: string;
  readonly acquireLeaseWithSession: string;
  readonly acquireLeasePinnedWithSession: string;
  readonly acquireUnservedLease: string;
  readonly findWork: string;
  readonly findWorkPinned: string;
  readonly announceDefinitions: string;
  readonly renewLease: string;
  readonly releaseLease: string;
  readonly readEvents: string;
}

/**
 * The longest notice that carries its commit's events (PostgreSQL refuses payloads of 8000 bytes
 * or more); a longer batch's notice names the session only, and followers read the batch.
 */
export const MAX_CARRIED_PAYLOAD = 7900;

/** A session has work when its flag says so or the inbox is past its cursor (seqs have no gaps). */
const ready = "(runnable OR last_inbox_seq > inbox_cursor)";
const expiresAtMs = "(extract(epoch FROM lease_expires_at) * 1000)::bigint";
const expiry = "date_trunc('milliseconds', now()) + $3::bigint * interval '1 millisecond'";

export function storeSql(s: string, channel: string): StoreSql {
  const sql = statements(s, channel);
  // The grant's row, as loadSession reads it: one round trip for the lease and the session.
  const withSession = (statement: string) => {
    const returning = `AS expires_at`;
    if (!statement.trimEnd().endsWith(returning)) throw new Error("a lease statement ends with its RETURNING");
    return `${statement.trimEnd()}, t.head, t.head_z, t.run_state, t.version, t.last_event_seq`;
  };
  return {
    ...sql,
    acquireLeaseWithSession: withSession(sql.acquireLease),
    // $1 agents, $2 worker, $3 ttl ms, $4 served fingerprints ('' for sessions not pinned yet),
    // $5 fingerprints migrated from (taken only while no live announcement serves them): migration 5's
    // function, whose query is planned once per connection.
    acquireLeasePinned: `SELECT session_id, fence, expires_at FROM ${s}.acquire_lease_pinned($1, $2, $3, $4, $5)`,
    acquireLeasePinnedWithSession: `SELECT session_id, fence, expires_at, head, head_z, run_state, version, last_event_seq
FROM ${s}.acquire_lease_pinned($1, $2, $3, $4, $5)`,
    // $1 agents, $2 served fingerprints, $3 fingerprints migrated from, $4 sessions to pass over:
    // migration 6's function (planned once per connection, as the pinned grant).
    findWorkPinned: `SELECT session_id, fence, head, head_z, run_state, version, last_event_seq FROM ${s}.find_work_pinned($1, $2, $3, $4)`,
  };
}

function statements(
  s: string,
  channel: string,
): Omit<
  StoreSql,
  "acquireLeaseWithSession" | "acquireLeasePinned" | "acquireLeasePinnedWithSession" | "findWorkPinned"
> {
  /** A live announcement of session row `alias`'s definition (in `role`, an SQL literal, when given). */
  const announcedBy = (alias: string, role: string | null) =>
    `SELECT 1 FROM ${s}.definition_announcements a WHERE a.agent = ${alias}.agent AND a.fingerprint = ${alias}.fingerprint${
      role ? ` AND a.role = ${role}` : ""
    } AND a.expires_at > now()`;
  /** Grants the lease on the session `picked` names ($2 worker, $3 ttl ms). */
  const grant = `UPDATE ${s}.sessions t SET lease_owner = $2, fence = t.fence + 1, lease_expires_at = ${expiry}, touched_at = now()
FROM picked WHERE t.session_id = picked.session_id
RETURNING t.session_id, t.fence, ${expiresAtMs.replace("lease_expires_at", "t.lease_expires_at")} AS expires_at`;

  /** The commit statement; with `claim`, it takes the lease in the same write (see commitClaim). */
  function commitStatement(claim: boolean): string {
    const lease = claim
      ? `fence = $2,
    lease_owner = CASE WHEN $14::boolean THEN NULL ELSE $17::text END,
    lease_expires_at = CASE WHEN $14::boolean THEN NULL
      ELSE date_trunc('milliseconds', now()) + $15::bigint * interval '1 millisecond' END,
    touched_at = now()
  WHERE session_id = $1 AND fence = $2 - 1 AND (lease_owner IS NULL OR lease_expires_at <= now())`
      : `lease_owner = CASE WHEN $14::boolean THEN NULL ELSE lease_owner END,
    lease_expires_at = CASE WHEN $14::boolean THEN NULL WHEN $15::bigint IS NULL THEN lease_expires_at
      ELSE date_trunc('milliseconds', now()) + $15::bigint * interval '1 millisecond' END,
    touched_at = CASE WHEN $14::boolean THEN now() ELSE touched_at END
  WHERE session_id = $1 AND fence = $2 AND lease_owner IS NOT NULL AND lease_expires_at > now()`;
    return `
WITH updated AS (
  UPDATE ${s}.sessions SET
    head = CASE WHEN $4::json IS NULL AND $16::bytea IS NULL THEN head ELSE $4::json END,
    head_z = CASE WHEN $4::json IS NULL AND $16::bytea IS NULL THEN head_z ELSE $16::bytea END,
    run_state = CASE WHEN ($4::json IS NULL AND $16::bytea IS NULL) OR run_state IS NOT DISTINCT FROM $13::text THEN run_state ELSE $13::text END,
    fingerprint = COALESCE($11::text, fingerprint),
    definition_waiting = COALESCE($12::boolean, definition_waiting),
    version = version + CASE WHEN $4::json IS NULL AND $16::bytea IS NULL THEN 0 ELSE 1 END,
    runnable = COALESCE($5::boolean, runnable),
    inbox_cursor = COALESCE($6::bigint, inbox_cursor),
    history_length = history_length + $8::bigint,
    last_event_seq = last_event_seq + $10::bigint,
    ${lease}
    AND version = $3
  RETURNING session_id, version, history_length, last_event_seq, ${ready} AS has_work, ${expiresAtMs} AS expires_at
), history AS (
  INSERT INTO ${s}.history (session_id, position, item)
  SELECT u.session_id, u.history_length - $8::bigint + h.ord - 1, h.value
  FROM updated u, json_array_elements($7::json) WITH ORDINALITY AS h(value, ord)
), events AS (
  INSERT INTO ${s}.event_batches (session_id, last_seq, events)
  SELECT u.session_id, u.last_event_seq, $9::json FROM updated u WHERE $10::bigint > 0
), carried AS (
  SELECT u.session_id, 'batch:' || json_build_object('s', u.session_id, 'l', u.last_event_seq, 'a', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00', 'e', $9::json)::text AS payload
  FROM updated u WHERE $10::bigint > 0
), notes AS (
  SELECT pg_notify('${channel}', CASE WHEN octet_length(c.payload) <= ${MAX_CARRIED_PAYLOAD} THEN c.payload ELSE 'events:' || c.session_id END)
  FROM carried c
  UNION ALL
  SELECT pg_notify('${channel}', 'work') FROM updated u WHERE $14::boolean AND u.has_work
)
SELECT u.version, u.last_event_seq, u.expires_at, (SELECT count(*) FROM notes) AS notes FROM updated u`;
  }
  /**
   * Several sessions' commits in one statement (group commit): $1 a json array, one object per
   * commit of a different session, with the parameters of the commit statement by these keys:
   * i id, f fence, v expected version, h head (json) or null, r runnable, c inbox cursor, y history
   * (array), yn its length, e events (array), en their count, p fingerprint, w waiting, s run state,
   * x release, t ttl ms to extend to. Each commit is checked on its own, as the commit statement
   * checks it; the statement returns a row for each one applied, and a commit with no row was
   * refused (the store asks why). Heads go into `head` only (no compressed heads here).
   */
  const commitGroup = `
WITH input AS (
  SELECT * FROM json_to_recordset($1::json) AS i(i text, f bigint, v bigint, h json, r boolean, c bigint, y json,
    yn bigint, e json, en bigint, p text, w boolean, s text, x boolean, t bigint)
), updated AS (
  UPDATE ${s}.sessions t SET
    head = CASE WHEN i.h IS NULL THEN t.head ELSE i.h END,
    head_z = CASE WHEN i.h IS NULL THEN t.head_z ELSE NULL END,
    run_state = CASE WHEN i.h IS NULL OR t.run_state IS NOT DISTINCT FROM i.s THEN t.run_state ELSE i.s END,
    fingerprint = COALESCE(i.p, t.fingerprint),
    definition_waiting = COALESCE(i.w, t.definition_waiting),
    version = t.version + CASE WHEN i.h IS NULL THEN 0 ELSE 1 END,
    runnable = COALESCE(i.r, t.runnable),
    inbox_cursor = COALESCE(i.c, t.inbox_cursor),
    history_length = t.history_length + i.yn,
    last_event_seq = t.last_event_seq + i.en,
    lease_owner = CASE WHEN i.x THEN NULL ELSE t.lease_owner END,
    lease_expires_at = CASE WHEN i.x THEN NULL WHEN i.t IS NULL THEN t.lease_expires_at
      ELSE date_trunc('milliseconds', now()) + i.t * interval '1 millisecond' END,
    touched_at = CASE WHEN i.x THEN now() ELSE t.touched_at END
  FROM input i
  WHERE t.session_id = i.i AND t.fence = i.f AND t.lease_owner IS NOT NULL AND t.lease_expires_at > now()
    AND t.version = i.v
  RETURNING t.session_id, t.version, t.history_length, t.last_event_seq, ${ready.replace(/(runnable|last_inbox_seq|inbox_cursor)/g, "t.$1")} AS has_work,
    ${expiresAtMs.replace("lease_expires_at", "t.lease_expires_at")} AS expires_at, i.y, i.yn, i.e, i.en, i.x
), history AS (
  INSERT INTO ${s}.history (session_id, position, item)
  SELECT u.session_id, u.history_length - u.yn + h.ord - 1, h.value
  FROM updated u, json_array_elements(u.y) WITH ORDINALITY AS h(value, ord)
), events AS (
  INSERT INTO ${s}.event_batches (session_id, last_seq, events)
  SELECT u.session_id, u.last_event_seq, u.e FROM updated u WHERE u.en > 0
), carried AS (
  SELECT u.session_id, 'batch:' || json_build_object('s', u.session_id, 'l', u.last_event_seq, 'a', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00', 'e', u.e)::text AS payload
  FROM updated u WHERE u.en > 0
), notes AS (
  SELECT pg_notify('${channel}', CASE WHEN octet_length(c.payload) <= ${MAX_CARRIED_PAYLOAD} THEN c.payload ELSE 'events:' || c.session_id END)
  FROM carried c
  UNION ALL
  SELECT pg_notify('${channel}', 'work') FROM updated u WHERE u.x AND u.has_work
)
SELECT u.session_id, u.version, u.last_event_seq, u.expires_at, (SELECT count(*) FROM notes) AS notes FROM updated u`;
  return {
    commitGroup,
    // $1 id, $2 agent, $3 head, $4 inbox cursor, $5 events (json array), $6 inbox entry or null,
    // $7 dedupe key, $8 fingerprint ('' when not pinned), $9 waiting for its definition, $10 run state or null,
    // $11 the head compressed (head_z; then $3 is null)
    createSession: `
WITH created AS (
  INSERT INTO ${s}.sessions (session_id, agent, head, head_z, version, inbox_cursor, last_event_seq, last_inbox_seq, fingerprint, definition_waiting, run_state)
  VALUES ($1, $2, $3::json, $11::bytea, 1, $4::bigint, json_array_length($5::json), CASE WHEN $6::json IS NULL THEN 0 ELSE 1 END,
    $8::text, $9::boolean, $10::text)
  ON CONFLICT (session_id) DO NOTHING
  RETURNING session_id, last_event_seq, last_inbox_seq
), events AS (
  INSERT INTO ${s}.event_batches (session_id, last_seq, events)
  SELECT c.session_id, c.last_event_seq, $5::json FROM created c WHERE c.last_event_seq > 0
), inbox AS (
  INSERT INTO ${s}.inbox (session_id, seq, dedupe_key, entry)
  SELECT c.session_id, 1, $7, $6::json FROM created c WHERE $6::json IS NOT NULL
), notes AS (
  SELECT pg_notify('${channel}', 'events:' || c.session_id) FROM created c WHERE c.last_event_seq > 0
  UNION ALL
  SELECT pg_notify('${channel}', 'inbox:' || c.session_id) FROM created c WHERE c.last_inbox_seq > 0
  UNION ALL
  SELECT pg_notify('${channel}', 'work') FROM created c WHERE c.last_inbox_seq > $4::bigint
)
SELECT c.last_event_seq, (SELECT count(*) FROM notes) AS notes FROM created c`,

    loadSession: `SELECT head, head_z, run_state, version, last_event_seq FROM ${s}.sessions WHERE session_id = $1`,

    readHistory: `SELECT item FROM ${s}.history WHERE session_id = $1 AND position >= $2 ORDER BY position`,

    // $1 id, $2 fence, $3 expected version, $4 head as json or null, $5 runnable or null, $6 inbox cursor
    // or null, $7 history (json array), $8 its length, $9 events (json array), $10 their count,
    // $11 fingerprint or null, $12 waiting or null (both null without a head), $13 the head's run state
    // (null when it has none; a run state equal to the stored one is left as it is, not rewritten),
    // $14 release the lease too (as releaseLease: after the write, the fence kept, work notified),
    // $15 ttl ms to extend the lease to (as renewLease), or null, $16 the head compressed (head_z) or
    // null (a commit with a head writes one of $4 and $16, and the other column becomes null)
    commit: commitStatement(false),
    // As commit, taking the lease in the same write (Commit.claim): $17 the worker. Applied only while
    // no live lease holds the session and its fence is $2 - 1; the fence becomes $2.
    commitClaim: commitStatement(true),

    commitDiagnosis: `
SELECT version, (fence = $2 AND lease_owner IS NOT NULL AND lease_expires_at > now()) AS lease_held
FROM ${s}.sessions WHERE session_id = $1`,

    claimDiagnosis: `
SELECT version, (fence = $2 - 1 AND (lease_owner IS NULL OR lease_expires_at <= now())) AS claimable
FROM ${s}.sessions WHERE session_id = $1`,

    // $1 agents, $2 sessions to pass over: a session acquireLease could grant, read without a lock or a
    // write; at random among the 8 that waited longest, so workers looking at once mostly find different ones.
    findWork: `
SELECT * FROM (
  SELECT session_id, fence, head, head_z, run_state, version, last_event_seq FROM ${s}.sessions
  WHERE agent = ANY($1::text[]) AND ${ready}
    AND (lease_owner IS NULL OR lease_expires_at <= now())
    AND session_id <> ALL($2::text[])
  ORDER BY touched_at
  LIMIT 8
) oldest ORDER BY random() LIMIT 1`,

    // $1 id, $2 entry, $3 dedupe key or null
    // The inbox notice carries the entry when it fits ('entry:' and a JSON object: s the session, q
    // the entry's seq, e the entry), so the drive that holds the session takes it without reading.
    // 'work' only for a session no live lease holds: a held one's holder hears the inbox notice, and
    // no other worker can take it.
    enqueue: `
WITH existing AS (
  SELECT seq FROM ${s}.inbox WHERE session_id = $1 AND dedupe_key = $3
), bumped AS (
  UPDATE ${s}.sessions SET last_inbox_seq = last_inbox_seq + 1
  WHERE session_id = $1 AND NOT EXISTS (SELECT 1 FROM existing)
  RETURNING session_id, last_inbox_seq, (lease_owner IS NOT NULL AND lease_expires_at > now()) AS leased
), inserted AS (
  INSERT INTO ${s}.inbox (session_id, seq, dedupe_key, entry)
  SELECT b.session_id, b.last_inbox_seq, $3, $2::json FROM bumped b
  RETURNING seq
), carried AS (
  SELECT 'entry:' || json_build_object('s', $1::text, 'q', i.seq, 'e', $2::json)::text AS payload FROM inserted i
), notes AS (
  SELECT pg_notify('${channel}', CASE WHEN octet_length(c.payload) <= ${MAX_CARRIED_PAYLOAD} THEN c.payload ELSE 'inbox:' || $1 END)
  FROM carried c
  UNION ALL
  SELECT pg_notify('${channel}', 'work') FROM inserted, bumped b WHERE NOT b.leased
)
SELECT (SELECT seq FROM inserted) AS seq, (SELECT seq FROM existing) AS existing_seq,
  (SELECT count(*) FROM notes) AS notes`,

    readInbox: `SELECT seq, entry FROM ${s}.inbox WHERE session_id = $1 AND seq > $2 ORDER BY seq`,

    // $1 agents, $2 worker, $3 ttl ms
    acquireLease: `
WITH picked AS (
  SELECT session_id FROM ${s}.sessions
  WHERE agent = ANY($1::text[]) AND ${ready}
    AND (lease_owner IS NULL OR lease_expires_at <= now())
  ORDER BY touched_at
  LIMIT 1
  FOR UPDATE SKIP LOCKED
)
UPDATE ${s}.sessions t SET lease_owner = $2, fence = t.fence + 1, lease_expires_at = ${expiry}, touched_at = now()
FROM picked WHERE t.session_id = picked.session_id
RETURNING t.session_id, t.fence, ${expiresAtMs.replace("lease_expires_at", "t.lease_expires_at")} AS expires_at`,

    // $1 agents, $2 worker, $3 ttl ms, $4 fingerprints the caller serves or migrates from
    acquireUnservedLease: `
WITH picked AS (
  SELECT session_id FROM ${s}.sessions s
  WHERE agent = ANY($1::text[]) AND ${ready}
    AND (lease_owner IS NULL OR lease_expires_at <= now())
    AND fingerprint <> '' AND NOT definition_waiting AND fingerprint <> ALL($4::text[])
    AND NOT EXISTS (${announcedBy("s", null)})
  ORDER BY touched_at
  LIMIT 1
  FOR UPDATE SKIP LOCKED
)
${grant}`,

    // $1 worker, $2 definitions (json array of { agent, fingerprint, role }), $3 ttl ms. The worker's
    // rows not announced any more go, and so do other workers' expired rows; the rest is upserted.
    announceDefinitions: `
WITH wanted AS (
  SELECT d->>'agent' AS agent, d->>'fingerprint' AS fingerprint, d->>'role' AS role
  FROM json_array_elements($2::json) AS d
), gone AS (
  DELETE FROM ${s}.definition_announcements a
  WHERE (a.worker_id = $1 AND (a.agent, a.fingerprint, a.role) NOT IN (SELECT agent, fingerprint, role FROM wanted))
    OR (a.worker_id <> $1 AND a.expires_at <= now())
), put AS (
  INSERT INTO ${s}.definition_announcements (agent, fingerprint, role, worker_id, expires_at)
  SELECT agent, fingerprint, role, $1, ${expiry} FROM wanted
  ON CONFLICT (agent, fingerprint, role, worker_id) DO UPDATE SET expires_at = EXCLUDED.expires_at
)
SELECT 1`,

    // $1 id, $2 fence, $3 ttl ms, $4 worker
    renewLease: `
UPDATE ${s}.sessions SET lease_expires_at = ${expiry}
WHERE session_id = $1 AND fence = $2 AND lease_owner = $4 AND lease_expires_at > now()
RETURNING ${expiresAtMs} AS expires_at`,

    // $1 id, $2 fence
    releaseLease: `
WITH released AS (
  UPDATE ${s}.sessions SET lease_owner = NULL, lease_expires_at = NULL, touched_at = now()
  WHERE session_id = $1 AND fence = $2 AND lease_owner IS NOT NULL
  RETURNING ${ready} AS has_work
), notes AS (
  SELECT pg_notify('${channel}', 'work') FROM released WHERE has_work
)
SELECT (SELECT count(*) FROM released) AS released, (SELECT count(*) FROM notes) AS notes`,

    // $1 id, $2 after seq, $3 limit: every batch holds at least one event, so $3 batches are enough.
    readEvents: `
SELECT last_seq, at, events FROM ${s}.event_batches WHERE session_id = $1 AND last_seq > $2 ORDER BY last_seq LIMIT $3`,
  };
}

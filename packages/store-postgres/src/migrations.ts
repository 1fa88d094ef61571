/**
 * The versioned schema. A migration is never edited once released: a change to the tables is a new
 * entry at the end of the list. `migrate` applies the entries a database has not recorded yet.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  /** The DDL for a validated schema name. */
  readonly sql: (schema: string) => string;
}

/**
 * The WHERE clause of the pinned lease grant and of the pinned work query (migrations 5, 6 and 7, which
 * must each keep the text they shipped with): a session of one of the agents with work, not leased,
 * pinned to a served definition or to one being migrated from that no live worker serves.
 */
function pinnedWork(s: string, indent: string): string {
  return [
    "WHERE s.agent = ANY(p_agents) AND (s.runnable OR s.last_inbox_seq > s.inbox_cursor)",
    "  AND (s.lease_owner IS NULL OR s.lease_expires_at <= now())",
    "  AND (s.fingerprint = ANY(p_served)",
    "    OR (s.fingerprint = ANY(p_migrating) AND NOT EXISTS (",
    `      SELECT 1 FROM ${s}.definition_announcements a`,
    "      WHERE a.agent = s.agent AND a.fingerprint = s.fingerprint AND a.role = 'serves' AND a.expires_at > now())))",
  ]
    .map((line) => indent + line)
    .join("\n");
}

/**
 * The pinned lease grant as a function (migration 5; migration 7 makes it again returning head_z too).
 * Each migration must keep the text it shipped with.
 */
function acquireLeasePinned(s: string, headZ: boolean): string {
  return `CREATE FUNCTION ${s}.acquire_lease_pinned(
  p_agents text[], p_worker text, p_ttl_ms bigint, p_served text[], p_migrating text[]
) RETURNS TABLE (
  session_id text, fence bigint, expires_at bigint, head json, ${headZ ? "head_z bytea, " : ""}run_state text, version bigint, last_event_seq bigint
) LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $body$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH picked AS (
    SELECT s.session_id FROM ${s}.sessions s
${pinnedWork(s, "    ")}
    ORDER BY s.touched_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
  ), granted AS (
    UPDATE ${s}.sessions t SET lease_owner = p_worker, fence = t.fence + 1,
      lease_expires_at = date_trunc('milliseconds', now()) + p_ttl_ms * interval '1 millisecond', touched_at = now()
    FROM picked WHERE t.session_id = picked.session_id
    RETURNING t.session_id, t.fence, (extract(epoch FROM t.lease_expires_at) * 1000)::bigint AS expires_at,
      t.head, ${headZ ? "t.head_z, " : ""}t.run_state, t.version, t.last_event_seq
  )
  SELECT g.session_id, g.fence, g.expires_at, g.head, ${headZ ? "g.head_z, " : ""}g.run_state, g.version, g.last_event_seq FROM granted g;
END
$body$;`;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "sessions, history, events and inbox",
    sql: (s) => `
CREATE TABLE ${s}.sessions (
  session_id text PRIMARY KEY,
  agent text NOT NULL,
  head json NOT NULL,
  version bigint NOT NULL,
  fence bigint NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at timestamptz,
  runnable boolean NOT NULL DEFAULT false,
  inbox_cursor bigint NOT NULL,
  last_inbox_seq bigint NOT NULL DEFAULT 0,
  last_event_seq bigint NOT NULL DEFAULT 0,
  history_length bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  touched_at timestamptz NOT NULL DEFAULT now()
);

-- Only sessions with work are in this index, so finding one costs the same however many idle
-- sessions there are. acquireLease repeats the predicate word for word.
CREATE INDEX sessions_ready ON ${s}.sessions (agent) WHERE runnable OR last_inbox_seq > inbox_cursor;

CREATE TABLE ${s}.history (
  session_id text NOT NULL REFERENCES ${s}.sessions (session_id) ON DELETE CASCADE,
  position bigint NOT NULL,
  item json NOT NULL,
  PRIMARY KEY (session_id, position)
);

CREATE TABLE ${s}.events (
  session_id text NOT NULL REFERENCES ${s}.sessions (session_id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  type text NOT NULL,
  data json NOT NULL,
  PRIMARY KEY (session_id, seq)
);

CREATE TABLE ${s}.inbox (
  session_id text NOT NULL REFERENCES ${s}.sessions (session_id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  dedupe_key text,
  entry json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, seq),
  CONSTRAINT inbox_dedupe UNIQUE (session_id, dedupe_key)
);
`,
  },
  {
    version: 2,
    name: "definition pins and announcements",
    sql: (s) => `
-- The fingerprint of the agent definition a session is pinned to ('' while it is not pinned) and
-- whether it waits for it, kept from the head as runnable and inbox_cursor are, for the lease query.
ALTER TABLE ${s}.sessions
  ADD COLUMN fingerprint text NOT NULL DEFAULT '',
  ADD COLUMN definition_waiting boolean NOT NULL DEFAULT false;

-- The work index gains the fingerprint: a worker's lease query is one = ANY on it, and sessions of
-- definitions it does not serve cost it nothing. The lease queries repeat the predicate word for word.
DROP INDEX ${s}.sessions_ready;
CREATE INDEX sessions_ready ON ${s}.sessions (agent, fingerprint) WHERE runnable OR last_inbox_seq > inbox_cursor;

-- Which definitions each live worker takes (role serves or migrates), until expires_at: a session
-- pinned to a definition no live row names is waiting for its definition.
CREATE TABLE ${s}.definition_announcements (
  agent text NOT NULL,
  fingerprint text NOT NULL,
  role text NOT NULL CHECK (role IN ('serves', 'migrates')),
  worker_id text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (agent, fingerprint, role, worker_id)
);
CREATE INDEX definition_announcements_worker ON ${s}.definition_announcements (worker_id);
`,
  },
  {
    version: 3,
    name: "a commit writes what changed",
    sql: (s) => `
-- The turn's run state in a column of its own (the head keeps "runState": null in its place), moved
-- out of line uncompressed once the row outgrows 2 KB (it is the framework's serialization, often
-- compressed already): a commit that leaves it as it was keeps pointing at the stored value and
-- writes none of it. Heads written before this migration keep their run state inline and load as
-- they were.
ALTER TABLE ${s}.sessions ADD COLUMN run_state text;
ALTER TABLE ${s}.sessions ALTER COLUMN run_state SET STORAGE EXTERNAL;

-- The head keeps the default storage: compressed (lz4 where the server has it) once the row
-- outgrows 2 KB, and moved out of line when it is still too long (a head that holds a long turn), so
-- the updates that leave it as it is (lease, inbox counter, events only) copy a pointer, not the head.
-- The short text columns stay in the row whatever the row's length: with the default storage a long
-- row moves them out too, and a moved lease owner or fingerprint is written again by every update.
ALTER TABLE ${s}.sessions
  ALTER COLUMN session_id SET STORAGE MAIN,
  ALTER COLUMN agent SET STORAGE MAIN,
  ALTER COLUMN lease_owner SET STORAGE MAIN,
  ALTER COLUMN fingerprint SET STORAGE MAIN;
DO $lz4$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
    ALTER TABLE ${s}.sessions ALTER COLUMN head SET COMPRESSION lz4;
  END IF;
END $lz4$;

-- Half of each page is left free, so a commit's new row version fits on the page of the old one
-- (a heap-only update: no index is written unless a column of the work index changed).
ALTER TABLE ${s}.sessions SET (fillfactor = 50);

-- The foreign keys of history, events and inbox cost a row lock on the session (WAL) and a lookup per
-- appended row, for rows the store only ever appends in the statement that updates that session. The
-- cascade they gave (deleting a session deletes its rows) is kept by a trigger.
ALTER TABLE ${s}.history DROP CONSTRAINT history_session_id_fkey;
ALTER TABLE ${s}.events DROP CONSTRAINT events_session_id_fkey;
ALTER TABLE ${s}.inbox DROP CONSTRAINT inbox_session_id_fkey;
CREATE FUNCTION ${s}.delete_session_rows() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  DELETE FROM ${s}.history h USING deleted d WHERE h.session_id = d.session_id;
  DELETE FROM ${s}.events e USING deleted d WHERE e.session_id = d.session_id;
  DELETE FROM ${s}.inbox i USING deleted d WHERE i.session_id = d.session_id;
  RETURN NULL;
END
$body$;
CREATE TRIGGER sessions_delete_rows AFTER DELETE ON ${s}.sessions
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION ${s}.delete_session_rows();
`,
  },
  {
    version: 4,
    name: "one row of events per commit",
    sql: (s) => `
-- A commit's events are one row: the events as the commit gave them (a json array of { type, data }),
-- the seq of the last one, and the commit's time. Seqs stay one per event, from 1 with no gap: the
-- batch's first event has seq last_seq - (its length) + 1. One row and one index entry per commit
-- instead of one per event.
CREATE TABLE ${s}.event_batches (
  session_id text NOT NULL,
  last_seq bigint NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  events json NOT NULL,
  PRIMARY KEY (session_id, last_seq)
);
INSERT INTO ${s}.event_batches (session_id, last_seq, at, events)
  SELECT session_id, seq, at, json_build_array(json_build_object('type', type, 'data', data)) FROM ${s}.events;
DROP TABLE ${s}.events;

-- The events one per row, as the table of that name had them (for SQL readers; the store reads the batches).
CREATE VIEW ${s}.events AS
  SELECT b.session_id, b.last_seq - n.length + e.ord AS seq, b.at, e.value->>'type' AS type, e.value->'data' AS data
  FROM ${s}.event_batches b
  CROSS JOIN LATERAL (SELECT json_array_length(b.events) AS length) n
  CROSS JOIN LATERAL json_array_elements(b.events) WITH ORDINALITY AS e(value, ord);

CREATE OR REPLACE FUNCTION ${s}.delete_session_rows() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  DELETE FROM ${s}.history h USING deleted d WHERE h.session_id = d.session_id;
  DELETE FROM ${s}.event_batches e USING deleted d WHERE e.session_id = d.session_id;
  DELETE FROM ${s}.inbox i USING deleted d WHERE i.session_id = d.session_id;
  RETURN NULL;
END
$body$;
`,
  },
  {
    version: 5,
    name: "the pinned lease grant is planned once",
    sql: (s) => `
-- The lease grant of a worker that serves pinned definitions (until this migration the store's
-- statement acquireLeasePinned, unchanged), as a function whose query is planned once per connection.
-- As a statement, PostgreSQL planned it anew on every call (its generic plan, made for arrays of unknown
-- length, is estimated dearer than one made for the call's own arrays): about 0.35 ms of server CPU
-- per grant and per poll that finds no work, against 0.02 ms for the generic plan, which runs as fast.
${acquireLeasePinned(s, false)}
`,
  },
  {
    version: 6,
    name: "work found without a write",
    sql: (s) => `
-- The session the pinned lease grant would take, read without locking or writing it (the store's
-- findWork): the lease is taken by the drive's first commit instead (commitClaim), so a turn makes one
-- write transaction less. Sessions in p_skip (those the caller drives already) are passed over.
CREATE FUNCTION ${s}.find_work_pinned(
  p_agents text[], p_served text[], p_migrating text[], p_skip text[]
) RETURNS TABLE (
  session_id text, fence bigint, head json, run_state text, version bigint, last_event_seq bigint
) LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $body$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT s.session_id, s.fence, s.head, s.run_state, s.version, s.last_event_seq FROM ${s}.sessions s
${pinnedWork(s, "  ")}
    AND s.session_id <> ALL(p_skip)
  ORDER BY s.touched_at
  LIMIT 1;
END
$body$;
`,
  },
  {
    version: 7,
    name: "the head compressed by the store",
    sql: (s) => `
-- The head in head_z: a format byte, then its JSON compressed with raw deflate against a dictionary of
-- the words heads are made of (head-codec.ts). PostgreSQL compresses a value only once its row passes
-- about 2 KB, so most commits wrote the head whole (about 2 KB of WAL per step); compressed by the
-- store, a two-call turn's head is about 200 bytes. Rows written before keep their head in head (json)
-- and load as they were; a store made with compressHeads: false goes on writing head. Exactly one of
-- the two is set. head_z is moved out of line uncompressed once the row outgrows 2 KB (it is
-- compressed already).
ALTER TABLE ${s}.sessions ALTER COLUMN head DROP NOT NULL;
ALTER TABLE ${s}.sessions ADD COLUMN head_z bytea;
ALTER TABLE ${s}.sessions ALTER COLUMN head_z SET STORAGE EXTERNAL;
ALTER TABLE ${s}.sessions ADD CONSTRAINT sessions_one_head CHECK ((head IS NULL) <> (head_z IS NULL));

-- The pinned lease grant and the pinned work query return head_z too (migrations 5 and 6). The work
-- query picks at random among the 8 sessions that waited longest, not the one that waited longest: the
-- workers that look for work at the same moment then mostly find different sessions, where they all
-- found the same one and all but one had their claim refused (a wasted query each).
DROP FUNCTION ${s}.acquire_lease_pinned(text[], text, bigint, text[], text[]);
${acquireLeasePinned(s, true)}

DROP FUNCTION ${s}.find_work_pinned(text[], text[], text[], text[]);
CREATE FUNCTION ${s}.find_work_pinned(
  p_agents text[], p_served text[], p_migrating text[], p_skip text[]
) RETURNS TABLE (
  session_id text, fence bigint, head json, head_z bytea, run_state text, version bigint, last_event_seq bigint
) LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $body$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT o.session_id, o.fence, o.head, o.head_z, o.run_state, o.version, o.last_event_seq FROM (
  SELECT s.session_id, s.fence, s.head, s.head_z, s.run_state, s.version, s.last_event_seq FROM ${s}.sessions s
${pinnedWork(s, "  ")}
    AND s.session_id <> ALL(p_skip)
  ORDER BY s.touched_at
  LIMIT 8) o
  ORDER BY random()
  LIMIT 1;
END
$body$;
`,
  },
];

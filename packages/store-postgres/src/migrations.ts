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
];

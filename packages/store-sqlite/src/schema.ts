/**
 * The versioned schema of a store file. `PRAGMA user_version` records how many migrations the file
 * has; a migration is never edited once released, a change to the tables is a new entry at the end.
 * `PRAGMA application_id` marks the file as ours, so a store never writes into another program's
 * database.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** "DAgS" in ASCII: the application ID of a Durable Agents store file. */
export const APPLICATION_ID = 0x44416753;

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "sessions, history, events, inbox and signals",
    sql: `
-- A rowid table, so a head of up to about 4 KB stays on the row's own page: in a WITHOUT ROWID
-- table anything past about 1 KB would go to an overflow page that every commit frees and takes
-- again (two more pages written per commit).
CREATE TABLE sessions (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL UNIQUE,
  agent TEXT NOT NULL,
  head TEXT NOT NULL,
  version INTEGER NOT NULL,
  fence INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  runnable INTEGER NOT NULL DEFAULT 0,
  inbox_cursor INTEGER NOT NULL,
  last_inbox_seq INTEGER NOT NULL DEFAULT 0,
  last_event_seq INTEGER NOT NULL DEFAULT 0,
  history_length INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  touched_at INTEGER NOT NULL
);

-- Only sessions with work are in this index, so finding one costs the same however many idle
-- sessions the file holds. The lease query repeats the predicate word for word.
CREATE INDEX sessions_ready ON sessions (agent, touched_at) WHERE runnable OR last_inbox_seq > inbox_cursor;

-- History items, events and inbox entries are rows of rowid tables whose rowid only grows: every
-- insert lands at the right edge of the table's B-tree, where SQLite fills pages whole, and only
-- the small index entry goes into the middle. (Keyed by (session_id, position) instead, a session's
-- new item would split a full page in the middle of the tree, one or two more pages per commit
-- once several sessions share the file.) Another process also finds what is new since its last
-- look with one range read of events and inbox (see change-watcher.ts).
CREATE TABLE history (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  item TEXT NOT NULL,
  UNIQUE (session_id, position)
);

CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at TEXT NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  UNIQUE (session_id, seq)
);

CREATE TABLE inbox (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  dedupe_key TEXT,
  entry TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (session_id, seq)
);
CREATE UNIQUE INDEX inbox_dedupe ON inbox (session_id, dedupe_key) WHERE dedupe_key IS NOT NULL;

-- Counters other processes watch: 'work' grows when a released lease leaves work behind.
CREATE TABLE signals (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO signals (name, value) VALUES ('work', 0);
`,
  },
  {
    version: 2,
    name: "definition pins and announcements",
    sql: `
-- The fingerprint of the agent definition a session is pinned to ('' while it is not pinned) and
-- whether it waits for it, kept from the head as runnable and inbox_cursor are, for the lease query.
ALTER TABLE sessions ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN definition_waiting INTEGER NOT NULL DEFAULT 0;

-- The work index gains the fingerprint: a worker's lease query is one IN list on it, and sessions
-- of definitions it does not serve cost it nothing. The lease queries repeat the predicate.
DROP INDEX sessions_ready;
CREATE INDEX sessions_ready ON sessions (agent, fingerprint, touched_at) WHERE runnable OR last_inbox_seq > inbox_cursor;

-- Which definitions each live worker takes (role 'serves' or 'migrates'), until expires_at (epoch
-- ms): a session pinned to a definition no live row names is waiting for its definition.
CREATE TABLE definition_announcements (
  agent TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  role TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (agent, fingerprint, role, worker_id)
) WITHOUT ROWID;
CREATE INDEX definition_announcements_worker ON definition_announcements (worker_id);
`,
  },
];

export const LATEST_VERSION = migrations.length;

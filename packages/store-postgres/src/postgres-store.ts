import type { Pool, QueryResult, QueryResultRow } from "pg";
import {
  ConfigurationError,
  InvalidInputError,
  LeaseLostError,
  SessionNotFoundError,
  SessionStateError,
  VersionConflictError,
  type EnqueueResult,
  type HistoryItem,
  type InboxEntry,
  type InboxItem,
  type SessionEvent,
  type SessionHead,
  type SessionStore,
} from "@durable-agents/core";
import {
  type AcquireLeaseOptions,
  type Commit,
  type CommitResult,
  type DefinitionAnnouncement,
  type FoundWork,
  type Lease,
  type NewSession,
  type StoreNotification,
  type StoredSession,
  storeInput,
} from "@durable-agents/core/engine";
import { encodeHead, storedHead } from "./head-codec.js";
import { batchEvents, NotificationListener } from "./notification-listener.js";
import { channelName, schemaName } from "./schema-name.js";
import { storeSql, type StoreSql } from "./store-sql.js";

export interface PostgresStoreOptions {
  /** The application's pool; the store never ends it. */
  readonly pool: Pool;
  /** The schema `migrate` created; default `durable_agents`. */
  readonly schema?: string;
  /**
   * How often the LISTEN connection is checked with a query, and the longest wait between two
   * attempts to take it again after it broke. Default 5000.
   */
  readonly pollIntervalMs?: number;
  /**
   * Write each head compressed into `head_z` (a format byte, then raw deflate against a preset
   * dictionary; see head-codec.ts): about 1.2 KB less WAL per step, for 0.1-0.3 ms more worker CPU
   * per step (Node's zlib call, dearer next to a large heap; bench/README.md). Default false: json
   * into `head`, readable with SQL. Either store reads both columns.
   */
  readonly compressHeads?: boolean;
  /**
   * Group commit: at most this many commit statements of this store at PostgreSQL at once; the
   * commits made while that many are out wait for one to come back and then go together, as one
   * statement (one transaction, one WAL flush), each still checked on its own. A commit made while
   * fewer are out goes at once, so a lone step is never held back. Default 2; `Infinity` sends every
   * commit on its own as soon as it is made. Compressed heads (`compressHeads`) and claims always go
   * on their own.
   */
  readonly commitsInFlight?: number;
}

/** A commit waiting for its turn to go (group commit). */
interface WaitingCommit {
  readonly commit: Commit;
  readonly params: unknown[];
  readonly extend: boolean;
  readonly resolve: (result: CommitResult) => void;
  readonly reject: (error: unknown) => void;
}

/** The most commits one group statement carries. */
const MAX_GROUP = 32;

/** A value as JSON text, undefined as null. */
function jsonValue(value: unknown): string {
  return value === undefined || value === null ? "null" : JSON.stringify(value);
}

/**
 * One commit's entry in a group statement's json array (see StoreSql.commitGroup), from the
 * commit statement's parameters; the head, history and events are JSON text already.
 */
function groupEntry(p: readonly unknown[]): string {
  return `{"i":${JSON.stringify(p[0])},"f":${p[1]},"v":${p[2]},"h":${(p[3] as string | null) ?? "null"},"r":${jsonValue(p[4])},"c":${jsonValue(p[5])},"y":${p[6]},"yn":${p[7]},"e":${p[8]},"en":${p[9]},"p":${jsonValue(p[10])},"w":${jsonValue(p[11])},"s":${jsonValue(p[12])},"x":${p[13]},"t":${jsonValue(p[14])}}`;
}

/** A session row as the store's reads return it. */
interface SessionRow {
  readonly head: SessionHead | null;
  readonly head_z: Uint8Array | null;
  readonly run_state: string | null;
  readonly version: string;
  readonly last_event_seq: string;
}

type Statement = keyof StoreSql;

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = "23505";

/**
 * The head as two columns: `head` without the turn's run state, and `run_state` apart. The run state
 * (the framework's own serialization, often already compressed) is the largest part of a head and
 * changes only on model steps; in a column of its own, stored out of line, a commit that leaves it
 * as it was rewrites none of it (the row keeps pointing at the stored value).
 */
function splitHead(head: SessionHead, compressed: boolean): { head: string; runState: string | null } {
  const turn = head.turn;
  if (!turn || typeof turn.runState !== "string") return { head: JSON.stringify(head), runState: null };
  // A short run state stays in a compressed head: its row is under 2 KB either way, so PostgreSQL
  // would keep the column in the row and every update would write it again, uncompressed.
  if (compressed && turn.runState.length <= RUN_STATE_APART) return { head: JSON.stringify(head), runState: null };
  return { head: JSON.stringify({ ...head, turn: { ...turn, runState: null } }), runState: turn.runState };
}

/**
 * The longest run state a compressed head keeps inside (`compressHeads`); a longer one goes to the
 * `run_state` column, whose row then passes 2 KB, so PostgreSQL stores it out of line and a commit
 * that leaves it as it was writes a pointer.
 */
const RUN_STATE_APART = 1800;

/** The head as stored: the run state goes back into its turn (a head written before the split has it inline). */
export function joinHead(head: SessionHead, runState: string | null): SessionHead {
  if (runState === null || !head.turn) return head;
  return { ...head, turn: { ...head.turn, runState } };
}

/** What an applied commit answers, from its row of the commit (or group) statement. */
function applied(
  commit: Commit,
  row: { version: string; last_event_seq: string; expires_at: string | null },
  extend: boolean,
): CommitResult {
  const done = { version: Number(row.version), lastEventSeq: Number(row.last_event_seq) };
  if (commit.release === true) return { ...done, released: true };
  return extend ? { ...done, leaseExpiresAt: Number(row.expires_at) } : done;
}

/** A session row's head (the run state put back) and counters. */
function storedSession(row: SessionRow): StoredSession {
  return {
    head: joinHead(storedHead(row), row.run_state),
    version: Number(row.version),
    lastEventSeq: Number(row.last_event_seq),
  };
}

/**
 * The session store on PostgreSQL: any number of worker processes on any number of machines share
 * the sessions of one schema. Run `migrate(pool)` once before using it.
 */
export class PostgresStore implements SessionStore {
  private readonly pool: Pool;
  private readonly sql: StoreSql;
  private readonly statementPrefix: string;
  private readonly listener: NotificationListener;
  private readonly compressHeads: boolean;
  private readonly commitsInFlight: number;
  /** Commit statements at PostgreSQL now, and the commits waiting to go (group commit). */
  private sending = 0;
  private readonly waiting: WaitingCommit[] = [];

  constructor(options: PostgresStoreOptions) {
    if (!options || typeof options.pool?.query !== "function") {
      throw new ConfigurationError("PostgresStore needs a pg Pool", ["options.pool is not a pg Pool"]);
    }
    const pollIntervalMs = options.pollIntervalMs ?? 5000;
    if (!Number.isFinite(pollIntervalMs) || pollIntervalMs < 10) {
      throw new ConfigurationError("invalid pollIntervalMs", [
        "pollIntervalMs is a number of milliseconds, at least 10",
      ]);
    }
    if (options.compressHeads !== undefined && typeof options.compressHeads !== "boolean") {
      throw new ConfigurationError("invalid compressHeads", ["compressHeads is true or false"]);
    }
    this.compressHeads = options.compressHeads ?? false;
    const inFlight = options.commitsInFlight ?? 2;
    if (!(inFlight === Number.POSITIVE_INFINITY || (Number.isInteger(inFlight) && inFlight >= 1))) {
      throw new ConfigurationError("invalid commitsInFlight", ["commitsInFlight is a whole number >= 1, or Infinity"]);
    }
    this.commitsInFlight = inFlight;
    const schema = schemaName(options.schema);
    this.pool = options.pool;
    this.sql = storeSql(schema, channelName(schema));
    this.statementPrefix = `durable_agents_${schema}_`;
    this.listener = new NotificationListener(this.pool, channelName(schema), pollIntervalMs);
  }

  async createSession(session: NewSession): Promise<CommitResult> {
    // checkNewSession caps the ID (storeInput.maxSessionIdLength), which keeps every NOTIFY payload
    // (`events:<id>`) far below PostgreSQL's 8000-byte limit.
    const { head, events } = storeInput.checkNewSession(session);
    const inbox = session.inbox;
    const stored = splitHead(head, this.compressHeads);
    const columns = this.headColumns(stored.head);
    const result = await this.run<{ last_event_seq: string }>("createSession", [
      head.sessionId,
      head.agent,
      columns.json,
      head.inboxCursor,
      JSON.stringify(events),
      inbox ? JSON.stringify(inbox.entry) : null,
      inbox?.dedupeKey ?? null,
      storeInput.pinColumns(head).fingerprint,
      storeInput.pinColumns(head).waiting,
      stored.runState,
      columns.compressed,
    ]);
    const row = result.rows[0];
    if (!row) throw new SessionStateError(`session "${head.sessionId}" already exists`);
    return { version: 1, lastEventSeq: Number(row.last_event_seq) };
  }

  async loadSession(sessionId: string): Promise<StoredSession | null> {
    storeInput.checkSessionId(sessionId);
    const result = await this.run<SessionRow & QueryResultRow>("loadSession", [sessionId]);
    const row = result.rows[0];
    return row ? storedSession(row) : null;
  }

  async readHistory(sessionId: string, offset = 0): Promise<HistoryItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("offset", offset);
    const result = await this.run<{ item: HistoryItem }>("readHistory", [sessionId, offset]);
    return result.rows.map((row) => row.item);
  }

  async commit(commit: Commit): Promise<CommitResult> {
    const { events, history } = storeInput.checkCommit(commit);
    if (commit.leaseTtlMs !== undefined) storeInput.checkTtl(commit.leaseTtlMs);
    const head = commit.head;
    const pin = head === undefined ? null : storeInput.pinColumns(head);
    const stored = head === undefined ? null : splitHead(head, this.compressHeads);
    const columns = stored === null ? null : this.headColumns(stored.head);
    const extend = commit.release !== true && commit.leaseTtlMs !== undefined;
    const claim = commit.claim?.workerId;
    const params = [
      commit.sessionId,
      commit.fence,
      commit.expectedVersion,
      columns?.json ?? null,
      head === undefined ? null : commit.runnable,
      head === undefined ? null : head.inboxCursor,
      JSON.stringify(history),
      history.length,
      JSON.stringify(events),
      events.length,
      pin?.fingerprint ?? null,
      pin?.waiting ?? null,
      stored?.runState ?? null,
      commit.release === true,
      extend ? Math.ceil(commit.leaseTtlMs!) : null,
      columns?.compressed ?? null,
      ...(claim === undefined ? [] : [claim]),
    ];
    if (claim !== undefined || this.compressHeads || this.commitsInFlight === Number.POSITIVE_INFINITY) {
      return this.commitAlone(commit, params, extend);
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ commit, params, extend, resolve, reject });
      this.sendWaiting();
    });
  }

  /** One commit as its own statement. */
  private async commitAlone(commit: Commit, params: unknown[], extend: boolean): Promise<CommitResult> {
    const result = await this.run<{ version: string; last_event_seq: string; expires_at: string | null }>(
      commit.claim === undefined ? "commit" : "commitClaim",
      params,
    );
    const row = result.rows[0];
    if (row) return applied(commit, row, extend);
    throw await this.refusal(commit);
  }

  /** Sends what waits while fewer than commitsInFlight statements are out. */
  private sendWaiting(): void {
    while (this.sending < this.commitsInFlight && this.waiting.length > 0) {
      // One commit per session in a group (a session's commits follow each other anyway).
      const group: WaitingCommit[] = [];
      const sessions = new Set<string>();
      const rest: WaitingCommit[] = [];
      for (const entry of this.waiting) {
        if (group.length < MAX_GROUP && !sessions.has(entry.commit.sessionId)) {
          group.push(entry);
          sessions.add(entry.commit.sessionId);
        } else rest.push(entry);
      }
      this.waiting.splice(0, this.waiting.length, ...rest);
      this.sending++;
      void this.sendGroup(group).finally(() => {
        this.sending--;
        this.sendWaiting();
      });
    }
  }

  /** Sends commits of different sessions as one statement (one alone as the commit statement) and answers each. */
  private async sendGroup(group: readonly WaitingCommit[]): Promise<void> {
    const alone = (entry: WaitingCommit) =>
      this.commitAlone(entry.commit, entry.params, entry.extend).then(entry.resolve, entry.reject);
    if (group.length === 1) return alone(group[0]!);
    let result: QueryResult<{ session_id: string; version: string; last_event_seq: string; expires_at: string | null }>;
    try {
      result = await this.run("commitGroup", [`[${group.map((entry) => groupEntry(entry.params)).join(",")}]`]);
    } catch (error) {
      // PostgreSQL refused the statement and rolled it back (an error with a code): each commit goes
      // again on its own, for its own answer. Without a code (the connection broke) nothing is known
      // of the outcome, as for a commit alone: each gets the error.
      if (typeof (error as { code?: unknown }).code === "string") {
        await Promise.all(group.map(alone));
        return;
      }
      for (const entry of group) entry.reject(error);
      return;
    }
    const rows = new Map(result.rows.map((row) => [row.session_id, row]));
    await Promise.all(
      group.map(async (entry) => {
        const row = rows.get(entry.commit.sessionId);
        if (row) return entry.resolve(applied(entry.commit, row, entry.extend));
        try {
          entry.reject(await this.refusal(entry.commit));
        } catch (error) {
          entry.reject(error);
        }
      }),
    );
  }

  /** Why a commit changed nothing: no session, a lost lease, or a moved version (checked in that order). */
  private async refusal(commit: Commit): Promise<Error> {
    if (commit.claim !== undefined) {
      // A claim is refused as a lost lease unless the lease was free at the claimed fence.
      const result = await this.run<{ version: string; claimable: boolean }>("claimDiagnosis", [
        commit.sessionId,
        commit.fence,
      ]);
      const row = result.rows[0];
      if (!row) return new SessionNotFoundError(commit.sessionId);
      if (!row.claimable) return new LeaseLostError(commit.sessionId, commit.fence);
      return new VersionConflictError(commit.sessionId, commit.expectedVersion, Number(row.version));
    }
    const result = await this.run<{ version: string; lease_held: boolean }>("commitDiagnosis", [
      commit.sessionId,
      commit.fence,
    ]);
    const row = result.rows[0];
    if (!row) return new SessionNotFoundError(commit.sessionId);
    if (!row.lease_held) return new LeaseLostError(commit.sessionId, commit.fence);
    return new VersionConflictError(commit.sessionId, commit.expectedVersion, Number(row.version));
  }

  async enqueue(sessionId: string, entry: InboxEntry, dedupeKey: string | null): Promise<EnqueueResult> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkInboxEntry(entry);
    storeInput.checkDedupeKey(dedupeKey);
    const params = [sessionId, JSON.stringify(entry), dedupeKey];
    // Two enqueues with the same new key can both pass the duplicate check; the unique index stops
    // the second one, whose whole statement rolls back (no seq is used up), and the retry sees the
    // first one's entry.
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.run<{ seq: string | null; existing_seq: string | null }>("enqueue", params);
        const row = result.rows[0];
        if (row?.existing_seq != null) return { seq: Number(row.existing_seq), duplicate: true };
        if (row?.seq != null) return { seq: Number(row.seq), duplicate: false };
        throw new SessionNotFoundError(sessionId);
      } catch (error) {
        if (attempt < 3 && (error as { code?: string }).code === UNIQUE_VIOLATION) continue;
        throw error;
      }
    }
  }

  async readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("afterSeq", afterSeq);
    const result = await this.run<{ seq: string; entry: InboxEntry }>("readInbox", [sessionId, afterSeq]);
    return result.rows.map((row) => ({ seq: Number(row.seq), ...row.entry }));
  }

  async acquireLease(options: AcquireLeaseOptions): Promise<Lease | null> {
    storeInput.checkLeaseRequest(options);
    if (options.agents.length === 0) return null;
    const wanted = storeInput.leaseFingerprints(options);
    const base = [options.agents, options.workerId, Math.ceil(options.ttlMs)];
    return this.granted(
      options,
      wanted === null
        ? await this.run("acquireLease", base)
        : await this.run("acquireLeasePinned", [...base, wanted.served, wanted.migrating]),
    );
  }

  async acquireLeaseWithSession(
    options: AcquireLeaseOptions,
  ): Promise<{ readonly lease: Lease; readonly session: StoredSession } | null> {
    storeInput.checkLeaseRequest(options);
    if (options.agents.length === 0) return null;
    const wanted = storeInput.leaseFingerprints(options);
    const base = [options.agents, options.workerId, Math.ceil(options.ttlMs)];
    const result =
      wanted === null
        ? await this.run("acquireLeaseWithSession", base)
        : await this.run("acquireLeasePinnedWithSession", [...base, wanted.served, wanted.migrating]);
    const lease = this.granted(options, result);
    if (!lease) return null;
    return { lease, session: storedSession(result.rows[0] as SessionRow) };
  }

  async findWork(options: AcquireLeaseOptions & { readonly skip?: readonly string[] }): Promise<FoundWork | null> {
    storeInput.checkWorkRequest(options);
    if (options.agents.length === 0) return null;
    const wanted = storeInput.leaseFingerprints(options);
    const skip = [...(options.skip ?? [])];
    const result =
      wanted === null
        ? await this.run("findWork", [options.agents, skip])
        : await this.run("findWorkPinned", [options.agents, wanted.served, wanted.migrating, skip]);
    const row = result.rows[0] as (SessionRow & { session_id: string; fence: string }) | undefined;
    if (!row) return null;
    return { sessionId: row.session_id, fence: Number(row.fence), session: storedSession(row) };
  }

  async acquireUnservedLease(options: AcquireLeaseOptions): Promise<Lease | null> {
    storeInput.checkLeaseRequest(options);
    if (options.agents.length === 0) return null;
    const own = [...(options.fingerprints ?? []), ...(options.migrating ?? [])];
    return this.granted(
      options,
      await this.run("acquireUnservedLease", [options.agents, options.workerId, Math.ceil(options.ttlMs), own]),
    );
  }

  async announceDefinitions(announcement: DefinitionAnnouncement): Promise<void> {
    storeInput.checkAnnouncement(announcement);
    await this.run("announceDefinitions", [
      announcement.workerId,
      JSON.stringify(
        announcement.definitions.map((d) => ({ agent: d.agent, fingerprint: d.fingerprint, role: d.role })),
      ),
      Math.ceil(announcement.ttlMs),
    ]);
  }

  private granted(options: AcquireLeaseOptions, result: QueryResult): Lease | null {
    const row = result.rows[0] as { session_id: string; fence: string; expires_at: string } | undefined;
    if (!row) return null;
    return {
      sessionId: row.session_id,
      workerId: options.workerId,
      fence: Number(row.fence),
      expiresAt: Number(row.expires_at),
    };
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease | null> {
    storeInput.checkLease(lease);
    storeInput.checkTtl(ttlMs);
    const result = await this.run<{ expires_at: string }>("renewLease", [
      lease.sessionId,
      lease.fence,
      Math.ceil(ttlMs),
      lease.workerId,
    ]);
    const row = result.rows[0];
    return row ? { ...lease, expiresAt: Number(row.expires_at) } : null;
  }

  async releaseLease(lease: Lease): Promise<void> {
    storeInput.checkLease(lease);
    await this.run("releaseLease", [lease.sessionId, lease.fence]);
  }

  async readEvents(sessionId: string, afterSeq: number, limit = 1000): Promise<SessionEvent[]> {
    storeInput.checkEventPage(sessionId, afterSeq, limit);
    const result = await this.run<{ last_seq: string; at: Date; events: { type: string; data: unknown }[] }>(
      "readEvents",
      [sessionId, afterSeq, limit],
    );
    const events: SessionEvent[] = [];
    for (const row of result.rows) {
      for (const event of batchEvents(Number(row.last_seq), row.at.toISOString(), row.events)) {
        if (event.seq <= afterSeq) continue;
        events.push(event);
        if (events.length === limit) return events;
      }
    }
    return events;
  }

  subscribe(listener: (notification: StoreNotification) => void): () => void {
    if (typeof listener !== "function") throw new InvalidInputError("listener is a function");
    // The LISTEN connection is kept out of the pool; with one connection nothing else could run.
    if ((this.pool.options?.max ?? 10) < 2) {
      throw new ConfigurationError("subscribe needs a pool of at least 2 connections", ["pool.options.max < 2"]);
    }
    return this.listener.subscribe(listener);
  }

  /** Resolves once the LISTEN connection is up, so a notification sent after this is delivered. */
  listening(): Promise<void> {
    return this.listener.listening();
  }

  /** Gives the LISTEN connection back (closed); the pool stays open, it is the application's. */
  close(): Promise<void> {
    return this.listener.close();
  }

  /** The head's JSON as the two columns take it: compressed into `head_z`, or as it is into `head`. */
  private headColumns(json: string): { json: string | null; compressed: Buffer | null } {
    return this.compressHeads ? { json: null, compressed: encodeHead(json) } : { json, compressed: null };
  }

  /** Runs one of the store's statements as a named prepared statement (parsed once per connection). */
  private async run<Row extends QueryResultRow = QueryResultRow>(statement: Statement, values: unknown[]) {
    const listening = this.listener.pending();
    if (listening) await listening;
    return this.pool.query<Row>({ name: this.statementPrefix + statement, text: this.sql[statement], values });
  }
}

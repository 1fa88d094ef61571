import { realpathSync } from "node:fs";
import type { DatabaseSync } from "node:sqlite";
import {
  ConfigurationError,
  InvalidInputError,
  LeaseLostError,
  SessionNotFoundError,
  SessionStateError,
  VersionConflictError,
  WaitTimeoutError,
  type EnqueueResult,
  type EventBody,
  type HistoryItem,
  type InboxEntry,
  type InboxItem,
  type SessionEvent,
  type SessionStore,
} from "@durable-agents/core";
import {
  storeInput,
  type AcquireLeaseOptions,
  type Commit,
  type CommitResult,
  type DefinitionAnnouncement,
  type FoundWork,
  type Lease,
  type NewSession,
  type StoreNotification,
  type StoredSession,
} from "@durable-agents/core/engine";
import { ChangeWatcher } from "./change-watcher.js";
import { openDatabase, type Synchronous } from "./open-database.js";
import { isBusy } from "./sqlite-codes.js";
import { prepareStatements, type Statements } from "./statements.js";

export interface SqliteStoreOptions {
  /** The store file; created (with its schema) when missing. Its folder must exist. */
  readonly path: string;
  /**
   * `"full"` (default): a commit is on disk when it returns, through power loss. `"normal"`: a
   * commit survives a crash of the process, but the last commits before a power loss or an OS
   * crash may be lost (the file stays consistent); commits cost one disk sync less.
   */
  readonly synchronous?: Synchronous;
  /** How long a write waits for another process's write before `WaitTimeoutError`. Default 10000. */
  readonly busyTimeoutMs?: number;
  /** How often a subscribed store checks the file for other processes' writes. Default 25. */
  readonly watchIntervalMs?: number;
  /** The clock for lease expiry and event times; tests may move it. Default `Date.now`. */
  readonly now?: () => number;
}

/** The columns a commit reads before it writes. */
interface StoredRow {
  id: number;
  version: number;
  fence: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  runnable: number;
  inbox_cursor: number;
  history_length: number;
  last_event_seq: number;
  fingerprint: string;
  definition_waiting: number;
}

/** Stores of this process, by file: a write wakes every store on the same file at once. */
const openStores = new Map<string, Set<SqliteStore>>();

/** How long the SQLite call itself waits for a lock before the store waits without blocking. */
const SYNC_BUSY_MS = 0;

/** An event as its row holds it: the data as JSON text. */
interface StoredEventRow {
  readonly seq: number;
  readonly at: string;
  readonly type: string;
  readonly data: string;
}

/** The event a row holds, as `readEvents` answers it. */
function eventOfRow(row: StoredEventRow): SessionEvent {
  return { seq: row.seq, at: row.at, type: row.type, data: JSON.parse(row.data) } as SessionEvent;
}

/**
 * The embedded durable store: every session in one SQLite file, through Node's built-in
 * `node:sqlite`. Worker processes on one machine may share the file; leases fence them as on any
 * store. Each write is one transaction; the history and the events are appended, never rewritten.
 */
export class SqliteStore implements SessionStore {
  /** The store file's absolute path. */
  readonly path: string;
  private readonly db: DatabaseSync;
  private readonly statements: Statements;
  private readonly now: () => number;
  private readonly busyTimeoutMs: number;
  private readonly listeners = new Set<(notification: StoreNotification) => void>();
  private readonly watcher: ChangeWatcher;
  private closed = false;

  constructor(options: SqliteStoreOptions) {
    const busyTimeoutMs = options?.busyTimeoutMs ?? 10_000;
    const watchIntervalMs = options?.watchIntervalMs ?? 25;
    if (!Number.isFinite(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw new ConfigurationError("invalid busyTimeoutMs", ["busyTimeoutMs is a non-negative number of milliseconds"]);
    }
    if (!Number.isFinite(watchIntervalMs) || watchIntervalMs < 1) {
      throw new ConfigurationError("invalid watchIntervalMs", [
        "watchIntervalMs is a number of milliseconds, at least 1",
      ]);
    }
    this.db = openDatabase({ path: options?.path, synchronous: options.synchronous ?? "full", busyTimeoutMs });
    this.db.exec(`PRAGMA busy_timeout = ${Math.min(SYNC_BUSY_MS, busyTimeoutMs)}`);
    this.path = realpathSync(options.path);
    this.statements = prepareStatements(this.db);
    this.now = options.now ?? Date.now;
    this.busyTimeoutMs = busyTimeoutMs;
    this.watcher = new ChangeWatcher(
      this.statements,
      watchIntervalMs,
      (n) => this.emit(n),
      () => {},
      () => this.now(),
    );
    const peers = openStores.get(this.path) ?? new Set<SqliteStore>();
    openStores.set(this.path, peers);
    peers.add(this);
  }

  async createSession(session: NewSession): Promise<CommitResult> {
    const { head, events } = storeInput.checkNewSession(session);
    const inbox = session.inbox;
    const pin = storeInput.pinColumns(head);
    await this.write(() => {
      const now = this.now();
      const created = this.statements.createSession.run(
        head.sessionId,
        head.agent,
        JSON.stringify(head),
        head.inboxCursor,
        events.length,
        inbox ? 1 : 0,
        now,
        now,
        pin.fingerprint,
        pin.waiting ? 1 : 0,
      );
      if (created.changes === 0) throw new SessionStateError(`a session with ID "${head.sessionId}" already exists`);
      this.insertEvents(head.sessionId, 0, events, now);
      if (inbox) {
        this.statements.insertInbox.run(head.sessionId, 1, inbox.dedupeKey, JSON.stringify(inbox.entry), now);
      }
    });
    if (events.length > 0) this.notify({ kind: "events", sessionId: head.sessionId });
    if (inbox) {
      this.notify({ kind: "inbox", sessionId: head.sessionId });
      if (head.inboxCursor < 1) this.notify({ kind: "work" });
    }
    return { version: 1, lastEventSeq: events.length };
  }

  async loadSession(sessionId: string): Promise<StoredSession | null> {
    storeInput.checkSessionId(sessionId);
    const row = await this.read(
      () =>
        this.statements.loadSession.get(sessionId) as
          | { head: string; version: number; last_event_seq: number }
          | undefined,
    );
    if (!row) return null;
    return { head: JSON.parse(row.head), version: row.version, lastEventSeq: row.last_event_seq };
  }

  async readHistory(sessionId: string, offset = 0): Promise<HistoryItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("offset", offset);
    const rows = await this.read(() => this.statements.readHistory.all(sessionId, offset) as { item: string }[]);
    return rows.map((row) => JSON.parse(row.item) as HistoryItem);
  }

  async commit(commit: Commit): Promise<CommitResult> {
    const { events, history } = storeInput.checkCommit(commit);
    if (commit.leaseTtlMs !== undefined) storeInput.checkTtl(commit.leaseTtlMs);
    const head = commit.head;
    const result = await this.write(() => {
      const now = this.now();
      const row = this.statements.commitRead.get(commit.sessionId) as StoredRow | undefined;
      if (!row) throw new SessionNotFoundError(commit.sessionId);
      const leaseLive = row.lease_owner !== null && (row.lease_expires_at ?? 0) > now;
      // A claim takes a free lease at the fence after the session's; any other commit needs the live one.
      const allowed = commit.claim
        ? !leaseLive && row.fence === commit.fence - 1
        : leaseLive && row.fence === commit.fence;
      if (!allowed) throw new LeaseLostError(commit.sessionId, commit.fence);
      if (row.version !== commit.expectedVersion) {
        throw new VersionConflictError(commit.sessionId, commit.expectedVersion, row.version);
      }
      if (head === undefined) {
        this.statements.commitEvents.run(events.length, row.id);
      } else {
        const runnable = commit.runnable ? 1 : 0;
        const text = JSON.stringify(head);
        if (runnable === row.runnable && head.inboxCursor === row.inbox_cursor) {
          this.statements.commitHead.run(text, history.length, events.length, row.id);
        } else {
          this.statements.commitHeadAndWork.run(
            text,
            runnable,
            head.inboxCursor,
            history.length,
            events.length,
            row.id,
          );
        }
        const pin = storeInput.pinColumns(head);
        if (pin.fingerprint !== row.fingerprint || (pin.waiting ? 1 : 0) !== row.definition_waiting) {
          this.statements.commitPin.run(pin.fingerprint, pin.waiting ? 1 : 0, row.id);
        }
        for (const [i, item] of history.entries()) {
          this.statements.insertHistory.run(commit.sessionId, row.history_length + i, JSON.stringify(item));
        }
      }
      const appended = this.insertEvents(commit.sessionId, row.last_event_seq, events, now);
      // The lease goes in the same transaction, after the write (Commit.release).
      let hasWork = false;
      let leaseExpiresAt: number | null = null;
      if (commit.claim) {
        leaseExpiresAt = now + Math.ceil(commit.leaseTtlMs!);
        this.statements.claimLease.run(commit.claim.workerId, commit.fence, leaseExpiresAt, now, row.id);
      }
      if (commit.release === true) {
        const released = this.statements.releaseLease.get(now, commit.sessionId, commit.fence) as
          | { has_work: number }
          | undefined;
        hasWork = Boolean(released?.has_work);
        if (hasWork) this.statements.bumpWork.run();
      } else if (commit.leaseTtlMs !== undefined && !commit.claim) {
        leaseExpiresAt = now + Math.ceil(commit.leaseTtlMs);
        this.statements.extendLease.run(leaseExpiresAt, row.id);
      }
      return {
        version: head === undefined ? row.version : row.version + 1,
        lastEventSeq: row.last_event_seq + events.length,
        hasWork,
        leaseExpiresAt,
        appended,
      };
    });
    if (events.length > 0) this.notifyEvents(commit.sessionId, result.appended);
    if (result.hasWork) this.notify({ kind: "work" });
    const done = { version: result.version, lastEventSeq: result.lastEventSeq };
    if (commit.release === true) return { ...done, released: true };
    return result.leaseExpiresAt === null ? done : { ...done, leaseExpiresAt: result.leaseExpiresAt };
  }

  async enqueue(sessionId: string, entry: InboxEntry, dedupeKey: string | null): Promise<EnqueueResult> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkInboxEntry(entry);
    storeInput.checkDedupeKey(dedupeKey);
    const stored = JSON.stringify(entry);
    const result = await this.write((): EnqueueResult & { leased?: boolean } => {
      if (dedupeKey !== null) {
        const existing = this.statements.findDuplicate.get(sessionId, dedupeKey) as { seq: number } | undefined;
        if (existing) return { seq: existing.seq, duplicate: true };
      }
      const now = this.now();
      const bumped = this.statements.bumpInbox.get({ session: sessionId, now }) as
        | { last_inbox_seq: number; leased: number }
        | undefined;
      if (!bumped) throw new SessionNotFoundError(sessionId);
      this.statements.insertInbox.run(sessionId, bumped.last_inbox_seq, dedupeKey, stored, now);
      return { seq: bumped.last_inbox_seq, duplicate: false, leased: bumped.leased === 1 };
    });
    if (!result.duplicate) {
      // The notice carries the entry (as readInbox reads it): the write is committed and every
      // earlier entry of this process's writes was before it, so a drive whose cursor it continues
      // takes it without reading the inbox.
      this.notify(storeInput.carriedInboxNotice(sessionId, stored, result.seq));
      // `work` only for a session no live lease holds: its holder hears the inbox notice, and no
      // other worker may take it (a lease that lapses later is found by the workers' poll).
      if (!result.leased) this.notify({ kind: "work" });
    }
    return { seq: result.seq, duplicate: result.duplicate };
  }

  async readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("afterSeq", afterSeq);
    const rows = await this.read(
      () => this.statements.readInbox.all(sessionId, afterSeq) as { seq: number; entry: string }[],
    );
    return rows.map((row) => ({ ...(JSON.parse(row.entry) as InboxEntry), seq: row.seq }));
  }

  async acquireLease(options: AcquireLeaseOptions): Promise<Lease | null> {
    storeInput.checkLeaseRequest(options);
    if (options.agents.length === 0) return null;
    const agents = JSON.stringify(options.agents);
    const wanted = storeInput.leaseFingerprints(options);
    if (wanted === null) return this.grant(options, (now) => this.statements.findReady.get({ agents, now }));
    const served = JSON.stringify(wanted.served);
    const migrating = JSON.stringify(wanted.migrating);
    return this.grant(options, (now) => this.statements.findReadyPinned.get({ agents, served, migrating, now }));
  }

  async findWork(options: AcquireLeaseOptions & { readonly skip?: readonly string[] }): Promise<FoundWork | null> {
    storeInput.checkWorkRequest(options);
    if (options.agents.length === 0) return null;
    const agents = JSON.stringify(options.agents);
    const skip = JSON.stringify(options.skip ?? []);
    const wanted = storeInput.leaseFingerprints(options);
    const row = await this.read(() => {
      const now = this.now();
      return (
        wanted === null
          ? this.statements.findWork.get({ agents, skip, now })
          : this.statements.findWorkPinned.get({
              agents,
              served: JSON.stringify(wanted.served),
              migrating: JSON.stringify(wanted.migrating),
              skip,
              now,
            })
      ) as { session_id: string; fence: number; head: string; version: number; last_event_seq: number } | undefined;
    });
    if (!row) return null;
    return {
      sessionId: row.session_id,
      fence: row.fence,
      session: { head: JSON.parse(row.head), version: row.version, lastEventSeq: row.last_event_seq },
    };
  }

  async announceDefinitions(announcement: DefinitionAnnouncement): Promise<void> {
    storeInput.checkAnnouncement(announcement);
    await this.write(() => {
      const now = this.now();
      this.statements.dropExpiredAnnouncements.run(now);
      this.statements.withdrawAnnouncement.run(announcement.workerId);
      const expiresAt = now + Math.ceil(announcement.ttlMs);
      for (const d of announcement.definitions) {
        this.statements.insertAnnouncement.run(d.agent, d.fingerprint, d.role, announcement.workerId, expiresAt);
      }
    });
  }

  async acquireUnservedLease(options: AcquireLeaseOptions): Promise<Lease | null> {
    storeInput.checkLeaseRequest(options);
    if (options.agents.length === 0) return null;
    const agents = JSON.stringify(options.agents);
    const own = JSON.stringify([...(options.fingerprints ?? []), ...(options.migrating ?? [])]);
    return this.grant(options, (now) => this.statements.findUnserved.get({ agents, own, now }));
  }

  /** Leases the session `find` names at `now`: found by a read first, then again inside the write. */
  private async grant(options: AcquireLeaseOptions, find: (now: number) => unknown): Promise<Lease | null> {
    const pick = (now: number) => find(now) as { session_id: string } | undefined;
    // A read first: a worker that finds nothing to do never takes the file's write lock.
    const candidate = await this.read(() => pick(this.now()));
    if (!candidate) return null;
    return this.write(() => {
      // In the write transaction the candidate is checked again: another process may have taken it.
      const now = this.now();
      const found = pick(now);
      if (!found) return null;
      const expiresAt = now + Math.ceil(options.ttlMs);
      const row = this.statements.grantLease.get(options.workerId, expiresAt, now, found.session_id, now) as
        | { fence: number; lease_expires_at: number }
        | undefined;
      if (!row) return null;
      return {
        sessionId: found.session_id,
        workerId: options.workerId,
        fence: row.fence,
        expiresAt: row.lease_expires_at,
      };
    });
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease | null> {
    storeInput.checkLease(lease);
    storeInput.checkTtl(ttlMs);
    return this.write(() => {
      const now = this.now();
      const row = this.statements.renewLease.get(
        now + Math.ceil(ttlMs),
        lease.sessionId,
        lease.fence,
        lease.workerId,
        now,
      ) as { lease_expires_at: number } | undefined;
      return row ? { ...lease, expiresAt: row.lease_expires_at } : null;
    });
  }

  async releaseLease(lease: Lease): Promise<void> {
    storeInput.checkLease(lease);
    const hasWork = await this.write(() => {
      const row = this.statements.releaseLease.get(this.now(), lease.sessionId, lease.fence) as
        | { has_work: number }
        | undefined;
      if (row?.has_work) this.statements.bumpWork.run();
      return Boolean(row?.has_work);
    });
    if (hasWork) this.notify({ kind: "work" });
  }

  async readEvents(sessionId: string, afterSeq: number, limit = 1000): Promise<SessionEvent[]> {
    storeInput.checkEventPage(sessionId, afterSeq, limit);
    const rows = await this.read(
      () => this.statements.readEvents.all(sessionId, afterSeq, limit) as unknown as StoredEventRow[],
    );
    return rows.map(eventOfRow);
  }

  /**
   * Wake-ups: at once for writes made through any store of this process on the same file; within
   * about `watchIntervalMs` for writes of other processes.
   */
  subscribe(listener: (notification: StoreNotification) => void): () => void {
    if (typeof listener !== "function") throw new InvalidInputError("listener is a function");
    this.listeners.add(listener);
    if (!this.closed) this.watcher.start();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.watcher.stop();
    };
  }

  /** Closes the file. Calls after this fail; closing twice is a no-op. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watcher.stop();
    this.listeners.clear();
    const peers = openStores.get(this.path);
    peers?.delete(this);
    if (peers?.size === 0) openStores.delete(this.path);
    this.db.close();
  }

  /** Appends the events after `lastSeq`; answers them as stored (their data as JSON text). */
  private insertEvents(
    sessionId: string,
    lastSeq: number,
    events: readonly EventBody[],
    now: number,
  ): StoredEventRow[] {
    const at = new Date(now).toISOString();
    const rows: StoredEventRow[] = [];
    for (const [i, event] of events.entries()) {
      const row = { seq: lastSeq + i + 1, at, type: event.type, data: JSON.stringify(event.data) };
      this.statements.insertEvent.run(sessionId, row.seq, at, row.type, row.data);
      rows.push(row);
    }
    return rows;
  }

  /**
   * The `events` notice of a write, carrying the events it appended, read as `readEvents` reads them
   * the first time a subscriber asks (shared by the process's subscribers): a follower in this
   * process that keeps up uses them instead of reading. Other processes learn of writes from the
   * file's watch, which carries none.
   */
  private notifyEvents(sessionId: string, rows: readonly StoredEventRow[]): void {
    let events: SessionEvent[] | undefined;
    this.notify({
      kind: "events",
      sessionId,
      get events(): SessionEvent[] {
        events ??= rows.map(eventOfRow);
        return events;
      },
    });
  }

  /**
   * Runs `body` in one write transaction (`BEGIN IMMEDIATE`). While another process holds the write
   * lock, waits without blocking the event loop and tries again, up to `busyTimeoutMs`. `body` is
   * synchronous, so no other call of this process runs inside the transaction.
   */
  private async write<T>(body: () => T): Promise<T> {
    return this.retryWhileBusy(() => {
      this.db.exec("BEGIN IMMEDIATE");
      try {
        const result = body();
        this.db.exec("COMMIT");
        return result;
      } catch (error) {
        if (this.db.isTransaction) this.db.exec("ROLLBACK");
        throw error;
      }
    });
  }

  /** A read sees the last committed state; it waits only while the file is being recovered. */
  private read<T>(body: () => T): Promise<T> {
    return this.retryWhileBusy(body);
  }

  private async retryWhileBusy<T>(body: () => T): Promise<T> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return body();
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (Date.now() >= deadline) {
          throw new WaitTimeoutError(
            `the store file "${this.path}" stayed locked by another process for ${this.busyTimeoutMs} ms`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(attempt, 8) * (0.5 + Math.random())));
      }
    }
  }

  private notify(notification: StoreNotification): void {
    for (const store of openStores.get(this.path) ?? []) store.emit(notification);
  }

  private emit(notification: StoreNotification): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(notification);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

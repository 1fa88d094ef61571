/**
 * The in-process store (a test store, published as `@durable-agents/store-memory`): for tests,
 * demos and throwaway sessions. Everything lives in this process's memory and is lost when it
 * exits; within the process it keeps every promise of the store interface (atomic commits with
 * events, fencing, leases, ordered inbox, event cursors). It lives in core's `/testing` entry point
 * so that core's own engine tests can run on it; core's production code imports no store.
 */
import type { RawStoreReader } from "../conformance/types.js";
import { LeaseLostError, SessionNotFoundError, SessionStateError, VersionConflictError } from "../errors.js";
import type { EventBody, HistoryItem, InboxEntry, InboxItem, SessionEvent, SessionHead } from "../schemas.js";
import * as storeInput from "../store-input.js";
import type {
  AcquireLeaseOptions,
  Commit,
  CommitResult,
  DefinitionAnnouncement,
  EnqueueResult,
  FoundWork,
  Lease,
  NewSession,
  SessionStore,
  StoredSession,
  StoreNotification,
} from "../store.js";

/** One session as stored. Values are kept as JSON text, as a database would, so no caller can alias them. */
export interface MemorySessionRecord {
  sessionId: string;
  agent: string;
  head: string;
  version: number;
  fence: number;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  runnable: boolean;
  inboxCursor: number;
  /** The fingerprint the session is pinned to; `""` while it is not pinned. */
  fingerprint: string;
  /** Whether the session is marked waiting for its definition. */
  definitionWaiting: boolean;
  history: string[];
  events: { seq: number; at: string; body: string }[];
  inbox: { seq: number; dedupeKey: string | null; entry: string }[];
}

export interface MemoryStoreOptions {
  /** The clock used for lease expiry; tests may move it. Default `Date.now`. */
  readonly now?: () => number;
}

/** The records of a store, for `memoryRawReader` only: the class's public surface exposes no storage. */
let recordsOf: (store: MemoryStore) => ReadonlyMap<string, MemorySessionRecord>;

/** A stored event as `readEvents` answers it. */
function eventOf(event: MemorySessionRecord["events"][number]): SessionEvent {
  return { ...(JSON.parse(event.body) as EventBody), seq: event.seq, at: event.at } as SessionEvent;
}

export class MemoryStore implements SessionStore {
  /** Private (a plain field, so that a `Proxy` around the store still works); `memoryRawReader` reads it. */
  private readonly records = new Map<string, MemorySessionRecord>();
  private readonly listeners = new Set<(n: StoreNotification) => void>();
  /** Each worker's announced definitions (`agent` NUL `fingerprint`, and the role) and when the announcement expires. */
  private readonly announcements = new Map<
    string,
    { definitions: { key: string; role: "serves" | "migrates" }[]; expiresAt: number }
  >();
  private readonly now: () => number;

  static {
    recordsOf = (store) => store.records;
  }

  constructor(options: MemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  async createSession(session: NewSession): Promise<CommitResult> {
    storeInput.checkNewSession(session);
    const sessionId = session.head.sessionId;
    if (this.records.has(sessionId)) throw new SessionStateError(`a session with ID "${sessionId}" already exists`);
    const record: MemorySessionRecord = {
      sessionId,
      agent: session.head.agent,
      head: JSON.stringify(session.head),
      version: 1,
      fence: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      runnable: false,
      inboxCursor: session.head.inboxCursor,
      ...pinOf(session.head),
      history: [],
      events: [],
      inbox: [],
    };
    this.appendEvents(record, session.events);
    if (session.inbox) {
      record.inbox.push({ seq: 1, dedupeKey: session.inbox.dedupeKey, entry: JSON.stringify(session.inbox.entry) });
    }
    this.records.set(sessionId, record);
    this.notify({ kind: "events", sessionId });
    if (session.inbox) {
      this.notify({ kind: "inbox", sessionId });
      this.notify({ kind: "work" });
    }
    return { version: 1, lastEventSeq: record.events.length };
  }

  async loadSession(sessionId: string): Promise<StoredSession | null> {
    storeInput.checkSessionId(sessionId);
    const record = this.records.get(sessionId);
    if (!record) return null;
    return { head: JSON.parse(record.head) as SessionHead, version: record.version, lastEventSeq: lastSeq(record) };
  }

  async readHistory(sessionId: string, offset = 0): Promise<HistoryItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("offset", offset);
    const record = this.records.get(sessionId);
    if (!record) return [];
    return record.history.slice(offset).map((item) => JSON.parse(item) as HistoryItem);
  }

  async commit(commit: Commit): Promise<CommitResult> {
    storeInput.checkCommit(commit);
    if (commit.leaseTtlMs !== undefined) storeInput.checkTtl(commit.leaseTtlMs);
    const record = this.records.get(commit.sessionId);
    if (!record) throw new SessionNotFoundError(commit.sessionId);
    const claimable =
      commit.claim !== undefined &&
      record.fence === commit.fence - 1 &&
      (record.leaseOwner === null || (record.leaseExpiresAt ?? 0) <= this.now());
    if (commit.claim ? !claimable : !this.holds(record, commit.fence)) {
      throw new LeaseLostError(commit.sessionId, commit.fence);
    }
    if (record.version !== commit.expectedVersion) {
      throw new VersionConflictError(commit.sessionId, commit.expectedVersion, record.version);
    }
    if (commit.claim) {
      record.fence = commit.fence;
      record.leaseOwner = commit.claim.workerId;
    }
    if (commit.head) {
      record.head = JSON.stringify(commit.head);
      record.version += 1;
      record.runnable = commit.runnable ?? false;
      record.inboxCursor = commit.head.inboxCursor;
      Object.assign(record, pinOf(commit.head));
      for (const item of commit.appendHistory ?? []) record.history.push(JSON.stringify(item));
    }
    const from = record.events.length;
    this.appendEvents(record, commit.events);
    if (commit.events.length > 0) this.notifyEvents(record, from);
    if (commit.release === true) {
      this.release(record);
      return { version: record.version, lastEventSeq: lastSeq(record), released: true };
    }
    if (commit.leaseTtlMs !== undefined) {
      record.leaseExpiresAt = this.now() + Math.ceil(commit.leaseTtlMs);
      return { version: record.version, lastEventSeq: lastSeq(record), leaseExpiresAt: record.leaseExpiresAt };
    }
    return { version: record.version, lastEventSeq: lastSeq(record) };
  }

  async enqueue(sessionId: string, entry: InboxEntry, dedupeKey: string | null): Promise<EnqueueResult> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkInboxEntry(entry);
    storeInput.checkDedupeKey(dedupeKey);
    const record = this.records.get(sessionId);
    if (!record) throw new SessionNotFoundError(sessionId);
    if (dedupeKey !== null) {
      const existing = record.inbox.find((item) => item.dedupeKey === dedupeKey);
      if (existing) return { seq: existing.seq, duplicate: true };
    }
    const seq = (record.inbox.at(-1)?.seq ?? 0) + 1;
    const stored = JSON.stringify(entry);
    record.inbox.push({ seq, dedupeKey, entry: stored });
    // The notice carries the entry (as readInbox reads it).
    this.notify(storeInput.carriedInboxNotice(sessionId, stored, seq));
    // `work` only for a session no live lease holds: its holder hears the inbox notice, and no other
    // worker may take it (a lease that lapses later is found by the workers' poll).
    if (!this.leased(record)) this.notify({ kind: "work" });
    return { seq, duplicate: false };
  }

  async readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("afterSeq", afterSeq);
    const record = this.records.get(sessionId);
    if (!record) return [];
    return record.inbox
      .filter((item) => item.seq > afterSeq)
      .map((item) => ({ ...(JSON.parse(item.entry) as InboxEntry), seq: item.seq }));
  }

  async acquireLease(options: AcquireLeaseOptions): Promise<Lease | null> {
    storeInput.checkLeaseRequest(options);
    return this.grant(options, this.servedBy(options));
  }

  async findWork(options: AcquireLeaseOptions & { readonly skip?: readonly string[] }): Promise<FoundWork | null> {
    storeInput.checkWorkRequest(options);
    const skip = new Set(options.skip ?? []);
    const fits = this.servedBy(options);
    const record = this.pick(options, (r) => !skip.has(r.sessionId) && fits(r));
    if (!record) return null;
    return {
      sessionId: record.sessionId,
      fence: record.fence,
      session: { head: JSON.parse(record.head) as SessionHead, version: record.version, lastEventSeq: lastSeq(record) },
    };
  }

  /** Which sessions with work a lease request takes: those of its fingerprints (and of those it migrates, served by nobody). */
  private servedBy(options: AcquireLeaseOptions): (record: MemorySessionRecord) => boolean {
    const wanted = storeInput.leaseFingerprints(options);
    if (wanted === null) return () => true;
    // The live announcements are read only when a session pinned to a migrating fingerprint has work.
    let served: Set<string> | undefined;
    const isServed = (record: MemorySessionRecord): boolean => {
      served ??= this.announced("serves");
      return served.has(`${record.agent}\0${record.fingerprint}`);
    };
    return (record) =>
      wanted.served.includes(record.fingerprint) ||
      (wanted.migrating.includes(record.fingerprint) && !isServed(record));
  }

  async announceDefinitions(announcement: DefinitionAnnouncement): Promise<void> {
    storeInput.checkAnnouncement(announcement);
    if (announcement.definitions.length === 0) {
      this.announcements.delete(announcement.workerId);
      return;
    }
    this.announcements.set(announcement.workerId, {
      definitions: announcement.definitions.map((d) => ({ key: `${d.agent}\0${d.fingerprint}`, role: d.role })),
      expiresAt: this.now() + announcement.ttlMs,
    });
  }

  async acquireUnservedLease(options: AcquireLeaseOptions): Promise<Lease | null> {
    storeInput.checkLeaseRequest(options);
    const taken = this.announced(null);
    const own = new Set([...(options.fingerprints ?? []), ...(options.migrating ?? [])]);
    return this.grant(
      options,
      (record) =>
        record.fingerprint !== "" &&
        !record.definitionWaiting &&
        !own.has(record.fingerprint) &&
        !taken.has(`${record.agent}\0${record.fingerprint}`),
    );
  }

  /** The definitions (`agent` NUL `fingerprint`) live announcements name in this role (null: in either). */
  private announced(role: "serves" | "migrates" | null): Set<string> {
    const now = this.now();
    const keys = new Set<string>();
    for (const a of this.announcements.values()) {
      if (a.expiresAt <= now) continue;
      for (const d of a.definitions) if (role === null || d.role === role) keys.add(d.key);
    }
    return keys;
  }

  /** The first session of the agents that has work, no live lease and passes `fits`. */
  private pick(
    options: AcquireLeaseOptions,
    fits: (record: MemorySessionRecord) => boolean,
  ): MemorySessionRecord | null {
    const now = this.now();
    for (const record of this.records.values()) {
      // Cheapest first: most sessions have no work.
      if (!record.runnable && (record.inbox.at(-1)?.seq ?? 0) <= record.inboxCursor) continue;
      if (record.leaseOwner !== null && (record.leaseExpiresAt ?? 0) > now) continue;
      if (!options.agents.includes(record.agent)) continue;
      if (fits(record)) return record;
    }
    return null;
  }

  /** Leases the session `pick` finds. */
  private grant(options: AcquireLeaseOptions, fits: (record: MemorySessionRecord) => boolean): Lease | null {
    const record = this.pick(options, fits);
    if (!record) return null;
    record.fence += 1;
    record.leaseOwner = options.workerId;
    record.leaseExpiresAt = this.now() + options.ttlMs;
    return {
      sessionId: record.sessionId,
      workerId: options.workerId,
      fence: record.fence,
      expiresAt: record.leaseExpiresAt,
    };
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease | null> {
    storeInput.checkLease(lease);
    storeInput.checkTtl(ttlMs);
    const record = this.records.get(lease.sessionId);
    if (!record || !this.holds(record, lease.fence) || record.leaseOwner !== lease.workerId) return null;
    record.leaseExpiresAt = this.now() + ttlMs;
    return { ...lease, expiresAt: record.leaseExpiresAt };
  }

  async releaseLease(lease: Lease): Promise<void> {
    storeInput.checkLease(lease);
    const record = this.records.get(lease.sessionId);
    if (!record || record.fence !== lease.fence || record.leaseOwner === null) return;
    this.release(record);
  }

  /** Clears the lease (the fence stays); a session left with work wakes the workers. */
  private release(record: MemorySessionRecord): void {
    record.leaseOwner = null;
    record.leaseExpiresAt = null;
    const pendingInbox = (record.inbox.at(-1)?.seq ?? 0) > record.inboxCursor;
    if (record.runnable || pendingInbox) this.notify({ kind: "work" });
  }

  async readEvents(sessionId: string, afterSeq: number, limit = 1000): Promise<SessionEvent[]> {
    storeInput.checkEventPage(sessionId, afterSeq, limit);
    const record = this.records.get(sessionId);
    if (!record) return [];
    const out: SessionEvent[] = [];
    // Events are kept in seq order with seq = index + 1.
    for (let i = Math.max(0, afterSeq); i < record.events.length && out.length < limit; i++) {
      out.push(eventOf(record.events[i]!));
    }
    return out;
  }

  subscribe(listener: (notification: StoreNotification) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }

  private holds(record: MemorySessionRecord, fence: number): boolean {
    return record.fence === fence && this.leased(record);
  }

  /** Whether a live lease holds the session. */
  private leased(record: MemorySessionRecord): boolean {
    return record.leaseOwner !== null && (record.leaseExpiresAt ?? 0) > this.now();
  }

  private appendEvents(record: MemorySessionRecord, events: readonly EventBody[]): void {
    const at = new Date(this.now()).toISOString();
    for (const event of events) {
      record.events.push({ seq: record.events.length + 1, at, body: JSON.stringify(event) });
    }
  }

  /**
   * The `events` notice of a commit, carrying the events it appended (from index `from`), parsed
   * the first time a subscriber reads them: a follower that keeps up uses them instead of reading.
   * The process's subscribers share the parsed events, as with a store whose notice arrives over a
   * connection.
   */
  private notifyEvents(record: MemorySessionRecord, from: number): void {
    const appended = record.events.slice(from);
    let events: SessionEvent[] | undefined;
    this.notify({
      kind: "events",
      sessionId: record.sessionId,
      get events(): SessionEvent[] {
        events ??= appended.map(eventOf);
        return events;
      },
    });
  }

  private notify(notification: StoreNotification): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(notification);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

function pinOf(head: SessionHead): { fingerprint: string; definitionWaiting: boolean } {
  const { fingerprint, waiting } = storeInput.pinColumns(head);
  return { fingerprint, definitionWaiting: waiting };
}

function lastSeq(record: MemorySessionRecord): number {
  return record.events.at(-1)?.seq ?? 0;
}

/** Reads a MemoryStore's records directly, not through its API: for core's store conformance suite and tests. */
export function memoryRawReader(store: MemoryStore): RawStoreReader {
  const records = recordsOf(store);
  return {
    async session(sessionId) {
      const r = records.get(sessionId);
      if (!r) return null;
      return {
        sessionId: r.sessionId,
        agent: r.agent,
        version: r.version,
        fence: r.fence,
        leaseOwner: r.leaseOwner,
        leaseExpiresAt: r.leaseExpiresAt,
        runnable: r.runnable,
        inboxCursor: r.inboxCursor,
        fingerprint: r.fingerprint === "" ? null : r.fingerprint,
        definitionWaiting: r.definitionWaiting,
        head: JSON.parse(r.head),
      };
    },
    async history(sessionId) {
      return (records.get(sessionId)?.history ?? []).map((item) => JSON.parse(item));
    },
    async events(sessionId) {
      return (records.get(sessionId)?.events ?? []).map((e) => {
        const body = JSON.parse(e.body) as { type: string; data: unknown };
        return { seq: e.seq, type: body.type, data: body.data };
      });
    },
    async inbox(sessionId) {
      return (records.get(sessionId)?.inbox ?? []).map((i) => ({
        seq: i.seq,
        dedupeKey: i.dedupeKey,
        entry: JSON.parse(i.entry),
      }));
    },
  };
}

/**
 * A `SessionStore` that hands every call to another store and counts, per session, the commits and
 * the bytes of JSON they store (the head, each appended history item, each event), as the memory
 * store keeps them.
 */
import type {
  EnqueueResult,
  HistoryItem,
  InboxEntry,
  InboxItem,
  SessionEvent,
  SessionStore,
} from "@durable-agents/core";
import type {
  AcquireLeaseOptions,
  Commit,
  CommitResult,
  Lease,
  NewSession,
  StoreNotification,
  StoredSession,
} from "@durable-agents/core/engine";

export interface WriteCount {
  commits: number;
  bytes: number;
  headBytes: number;
  historyBytes: number;
  eventBytes: number;
}

const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

export class MeasuringStore implements SessionStore {
  private readonly counts = new Map<string, WriteCount>();

  constructor(readonly inner: SessionStore) {}

  /** What was committed for the session since the last `reset`. */
  written(sessionId: string): WriteCount {
    return {
      ...(this.counts.get(sessionId) ?? { commits: 0, bytes: 0, headBytes: 0, historyBytes: 0, eventBytes: 0 }),
    };
  }

  reset(sessionId: string): void {
    this.counts.delete(sessionId);
  }

  async commit(commit: Commit): Promise<CommitResult> {
    const result = await this.inner.commit(commit);
    const count = this.counts.get(commit.sessionId) ?? {
      commits: 0,
      bytes: 0,
      headBytes: 0,
      historyBytes: 0,
      eventBytes: 0,
    };
    const head = commit.head ? size(commit.head) : 0;
    const history = (commit.appendHistory ?? []).reduce((sum, item) => sum + size(item), 0);
    const events = commit.events.reduce((sum, event) => sum + size(event), 0);
    count.commits += 1;
    count.headBytes += head;
    count.historyBytes += history;
    count.eventBytes += events;
    count.bytes += head + history + events;
    this.counts.set(commit.sessionId, count);
    return result;
  }

  createSession(session: NewSession): Promise<CommitResult> {
    return this.inner.createSession(session);
  }
  loadSession(sessionId: string): Promise<StoredSession | null> {
    return this.inner.loadSession(sessionId);
  }
  readHistory(sessionId: string, offset?: number): Promise<HistoryItem[]> {
    return this.inner.readHistory(sessionId, offset);
  }
  enqueue(sessionId: string, entry: InboxEntry, dedupeKey: string | null): Promise<EnqueueResult> {
    return this.inner.enqueue(sessionId, entry, dedupeKey);
  }
  readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]> {
    return this.inner.readInbox(sessionId, afterSeq);
  }
  acquireLease(options: AcquireLeaseOptions): Promise<Lease | null> {
    return this.inner.acquireLease(options);
  }
  renewLease(lease: Lease, ttlMs: number): Promise<Lease | null> {
    return this.inner.renewLease(lease, ttlMs);
  }
  releaseLease(lease: Lease): Promise<void> {
    return this.inner.releaseLease(lease);
  }
  readEvents(sessionId: string, afterSeq: number, limit?: number): Promise<SessionEvent[]> {
    return this.inner.readEvents(sessionId, afterSeq, limit);
  }
  subscribe(listener: (notification: StoreNotification) => void): () => void {
    return this.inner.subscribe(listener);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

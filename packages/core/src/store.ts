/**
 * The store interface: what a storage backend implements (DESIGN §7). The session head is stored
 * whole; history and events are appended, so a commit's cost does not grow with history length.
 */
import type { EventBody, HistoryItem, InboxEntry, InboxItem, SessionEvent, SessionHead } from "./schemas.js";

/** An exclusive, expiring right to advance one session. `fence` grows with every grant. */
export interface Lease {
  readonly sessionId: string;
  readonly workerId: string;
  readonly fence: number;
  /** Epoch milliseconds. */
  readonly expiresAt: number;
}

export interface StoredSession {
  /**
   * The head as stored. A store returns what it stored (it need not parse it); core reads every
   * session through `loadStoredSession`, which parses it with `parseSessionHead`.
   */
  readonly head: SessionHead;
  readonly version: number;
  readonly lastEventSeq: number;
}

export interface NewSession {
  readonly head: SessionHead;
  readonly events: readonly EventBody[];
  /** A first inbox entry written in the same atomic operation. */
  readonly inbox?: { readonly entry: InboxEntry; readonly dedupeKey: string | null };
}

export interface Commit {
  readonly sessionId: string;
  /** The lease this commit is made under; a commit under any other fence is refused. */
  readonly fence: number;
  readonly expectedVersion: number;
  /** The new head; absent for a commit of events only (which leaves the version as it is). */
  readonly head?: SessionHead;
  /** Whether the session has work a worker can do without new input. Required with `head`. */
  readonly runnable?: boolean;
  readonly appendHistory?: readonly HistoryItem[];
  readonly events: readonly EventBody[];
  /**
   * Also release the lease, in the same atomic operation, after the write: as `releaseLease` would
   * (the fence is kept, and a session left with work gets a `work` notification). A store that does
   * answers `released: true`; one that does not (the option is optional for stores) writes the commit
   * and leaves the lease held, and the caller releases it. A refused commit releases nothing.
   */
  readonly release?: boolean;
  /**
   * Also extend the lease to this many milliseconds from now, as `renewLease` would, in the same
   * atomic write (ignored with `release`). A store that does answers `leaseExpiresAt`; one that does
   * not leaves the lease's expiry as it was, and the caller renews it as usual.
   */
  readonly leaseTtlMs?: number;
  /**
   * Takes the lease in this commit, for `leaseTtlMs` (required with it), instead of before it: the
   * write is applied only while no live lease holds the session and its fence is `fence - 1` (as
   * `findWork` answered it); the lease then goes to `workerId`, with fence `fence`. Refused with
   * `LeaseLostError` otherwise (another worker took it first), and nothing is written. Only for a
   * store that has `findWork`.
   */
  readonly claim?: { readonly workerId: string };
}

/** A session `findWork` answered: its lease is taken by the first commit (`Commit.claim`) with fence `fence + 1`. */
export interface FoundWork {
  readonly sessionId: string;
  /** The session's fence now (its last lease's). */
  readonly fence: number;
  readonly session: StoredSession;
}

export interface CommitResult {
  readonly version: number;
  readonly lastEventSeq: number;
  /** True when the commit released the lease (`Commit.release`). */
  readonly released?: boolean;
  /** The lease's new expiry (epoch milliseconds) when the commit extended it (`Commit.leaseTtlMs`). */
  readonly leaseExpiresAt?: number;
}

export interface EnqueueResult {
  readonly seq: number;
  /** True when an entry with the same dedupe key was already in the inbox; nothing was written. */
  readonly duplicate: boolean;
}

/**
 * What a store's subscribers hear. `work`: a session may be there to lease, after an entry enqueued
 * for a session no live lease holds, a commit or release that leaves work, or a lost connection.
 * `inbox`: an entry was enqueued for the session (whoever holds its lease takes it). `events`: the
 * session has new events.
 */
export type StoreNotification =
  | { readonly kind: "work" }
  | {
      readonly kind: "inbox";
      readonly sessionId: string;
      /**
       * The entries the notice carries, when it does: contiguous, in seq order, and ending with the
       * entry whose write sent the notice (every entry before it was in the inbox by then). A drive
       * whose inbox cursor they continue takes them instead of reading the inbox; without them, or
       * when they leave a gap after its cursor, it reads.
       */
      readonly entries?: readonly InboxItem[];
    }
  | {
      readonly kind: "events";
      readonly sessionId: string;
      /**
       * The events the store read with this notice, when it did: contiguous, in order, and ending
       * with the session's last event as the store read it. A follower whose cursor they reach uses
       * them instead of reading (`SessionClient.followEvents`); without them it reads.
       */
      readonly events?: readonly SessionEvent[];
    };

export interface AcquireLeaseOptions {
  readonly workerId: string;
  readonly ttlMs: number;
  /** Only sessions of these agents. */
  readonly agents: readonly string[];
  /**
   * Only sessions pinned to one of these definition fingerprints (`head.definition.fingerprint`), or
   * not pinned yet, or pinned to one of `migrating` that no live announcement serves. Absent:
   * whatever their pin (and `migrating` is ignored).
   */
  readonly fingerprints?: readonly string[];
  /** Fingerprints the worker migrates from: their sessions are leased only while no live announcement serves them. */
  readonly migrating?: readonly string[];
}

/** One definition a worker takes: one it serves, or one it migrates from (to a definition it serves). */
export interface AnnouncedDefinition {
  readonly agent: string;
  readonly fingerprint: string;
  readonly role: "serves" | "migrates";
}

/** The agent definitions one worker takes. */
export interface DefinitionAnnouncement {
  readonly workerId: string;
  /** Replaces the worker's earlier announcement; empty withdraws it. */
  readonly definitions: readonly AnnouncedDefinition[];
  /** The announcement holds this long (a worker renews it; one that dies lets it expire). */
  readonly ttlMs: number;
}

export interface SessionStore {
  /** Throws `SessionStateError` when the ID is taken. */
  createSession(session: NewSession): Promise<CommitResult>;
  /** The session as stored, or null. Core parses its head (`loadStoredSession`); a store need not. */
  loadSession(sessionId: string): Promise<StoredSession | null>;
  readHistory(sessionId: string, offset?: number): Promise<HistoryItem[]>;
  /**
   * Atomically writes the head, the appended history and the events. Throws `LeaseLostError` when
   * `fence` is not the session's live lease, `VersionConflictError` when the version moved.
   */
  commit(commit: Commit): Promise<CommitResult>;
  /**
   * Appends to the session's inbox. Throws `SessionNotFoundError`. With a dedupe key that is
   * already present, writes nothing and answers `duplicate: true` with the first entry's seq.
   */
  enqueue(sessionId: string, entry: InboxEntry, dedupeKey: string | null): Promise<EnqueueResult>;
  /** Inbox entries with `seq > afterSeq`, in order. */
  readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]>;
  /**
   * Leases one runnable session (its `runnable` flag is set, or it has inbox entries past the head's
   * `inboxCursor`) that no live lease holds, or null.
   */
  acquireLease(options: AcquireLeaseOptions): Promise<Lease | null>;
  /**
   * `acquireLease`, answering the leased session too, as `loadSession` would right after the grant
   * (one round trip where a worker would make two). Optional: a worker falls back to
   * `acquireLease` and `loadSession`.
   */
  acquireLeaseWithSession?(
    options: AcquireLeaseOptions,
  ): Promise<{ readonly lease: Lease; readonly session: StoredSession } | null>;
  /**
   * Optional, with `Commit.claim`: a session `acquireLease` could lease, with its fence, read without
   * leasing it (nothing is written: the lease rides in the drive's first commit). Sessions named in
   * `skip` (those the caller drives) are passed over. Two workers can be answered the same session;
   * the first claim wins. A store may answer any of the few sessions that waited longest, not always
   * the one that waited longest (PostgreSQL picks at random among 8), so that workers looking at the
   * same moment mostly find different sessions.
   */
  findWork?(options: AcquireLeaseOptions & { readonly skip?: readonly string[] }): Promise<FoundWork | null>;
  /**
   * Records which definitions a worker takes, until `ttlMs` from now (replacing its earlier record;
   * an empty list removes it). Optional, with `acquireUnservedLease`: a store without them still pins
   * sessions, but no worker can tell that a session's definition is served by nobody.
   */
  announceDefinitions?(announcement: DefinitionAnnouncement): Promise<void>;
  /**
   * Leases one session of these agents that has work, that no live lease holds, that is pinned to a
   * fingerprint that no live announcement names (in either role) and that is not in the options'
   * `fingerprints` or `migrating`, and that is not marked waiting already (`head.definition.waiting`),
   * or null. The worker marks it waiting and releases it.
   */
  acquireUnservedLease?(options: AcquireLeaseOptions): Promise<Lease | null>;
  /** Extends a live lease; null when it was lost. */
  renewLease(lease: Lease, ttlMs: number): Promise<Lease | null>;
  releaseLease(lease: Lease): Promise<void>;
  /** Events with `seq > afterSeq`, in order, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit?: number): Promise<SessionEvent[]>;
  /** In-process wake-ups; returns the unsubscribe function. Notifications may be lost: poll too. */
  subscribe(listener: (notification: StoreNotification) => void): () => void;
  close(): Promise<void>;
}

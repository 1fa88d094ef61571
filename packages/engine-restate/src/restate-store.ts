/**
 * The sessions of a Restate deployment seen as core's `SessionStore`, over Restate's HTTP ingress:
 * hand it to core's `SessionClient` and a client gets the whole client API (start, send, approve and
 * reject, cancel, steer, snapshots, events from a cursor and followed live, waits) on sessions the
 * Restate engine drives. Every write is a call to the inbox object with an idempotency key (a
 * retried request is applied once); reads are shared handlers of the session and inbox objects,
 * which never wait for a running turn.
 *
 * The engine commits its transitions itself and needs no leases, so `commit` and the lease methods
 * refuse with `ConfigurationError`: a core `Worker` cannot drive these sessions.
 *
 * `subscribe` is fed by long polls (the watch service) on the sessions this store touched in the
 * last half minute, while at least one listener is subscribed: the client's waits and event
 * followers wake up when a session moves, without polling it. While a session's drive runs in this
 * very process (the store shares its process with the endpoint), the drive tells the store what it
 * writes as it writes it (`local-moves.ts`), and the store does not poll the session meanwhile.
 */
import { randomUUID } from "node:crypto";
import {
  ConfigurationError,
  ContractViolationError,
  type HistoryItem,
  type InboxEntry,
  type InboxItem,
  InvalidInputError,
  type SessionEvent,
  SessionNotFoundError,
  SessionStateError,
} from "@durable-agents/core";
import {
  type CommitResult,
  type EnqueueResult,
  type Lease,
  type NewSession,
  type SessionStore,
  type StoredSession,
  type StoreNotification,
  storeInput,
} from "@durable-agents/core/engine";
import { IngressClient, type IngressOptions } from "./ingress.js";
import { type LocalMove, subscribeLocalMoves } from "./local-moves.js";
import { type ServiceNames, serviceNames } from "./names.js";
import type { Answer, NextAnswer, NextRequest, PollAnswer, PollRequest, SessionCursor } from "./protocol.js";

export interface RestateSessionStoreOptions extends IngressOptions {
  /** The prefix the engine's services were created with (`restateSessions({ prefix })`). */
  readonly prefix?: string;
  /** How long one long poll waits before it is asked again (ms, default 10,000). */
  readonly longPollMs?: number;
  /**
   * The shortest time between two polls of one session (ms, default 15). An idle session is
   * long-polled (answered when it moves); while a drive runs, the session's live status is read
   * this often, so a follower costs the cluster at most one short read per interval, and sees a
   * change at most this long after it happened. 0: no pause (a busy loop while a drive runs).
   */
  readonly minPollIntervalMs?: number;
}

/** Polls in a row a store makes for a drive that was sent (an entry not applied yet) but has not started. */
const maxPollsAwaitingDrive = 10;

/** The most events one poll brings along with its notice (more: the follower reads them). */
const pollEventLimit = 200;

/** While a drive runs in this process, its session is still read this often, to be safe. */
const localCheckMs = 1_000;

/** Sessions watched for notifications this long after the store last touched them. */
const watchForMs = 30_000;
/**
 * Long polls go on this long after the last listener left: a client subscribes anew for each wait,
 * and a poll that kept its cursor reports what moved after the client's read.
 */
const lingerMs = 2_000;

export class RestateSessionStore implements SessionStore {
  readonly names: ServiceNames;
  readonly ingress: IngressClient;
  private readonly listeners = new Set<(n: StoreNotification) => void>();
  /** Sessions touched (by any call), with when. */
  private readonly touched = new Map<string, number>();
  /** Sessions with a long-poll loop running. */
  private readonly polling = new Map<string, AbortController>();
  private readonly longPollMs: number;
  private readonly minPollIntervalMs: number;
  private lastListenerAt = 0;
  private closed = false;
  /** Drive attempts running in this process, per session. */
  private readonly localDrives = new Map<string, number>();
  /** Per session: what local drives wrote and was not told yet, and when the last notice went. */
  private readonly localNews = new Map<
    string,
    { events: SessionEvent[] | null; pending: boolean; at: number; timer: NodeJS.Timeout | null }
  >();
  /** Where the last local drive of each session left it, as it wrote it. */
  private readonly lastLocal = new Map<string, SessionCursor & { readonly running: boolean }>();
  /** Wakes a session's poll loop that waits while a local drive runs. */
  private readonly pollWakes = new Map<string, () => void>();
  private readonly unsubscribeLocal: () => void;

  constructor(options: RestateSessionStoreOptions) {
    this.names = serviceNames(options.prefix);
    this.ingress = new IngressClient(options);
    this.longPollMs = options.longPollMs ?? 10_000;
    this.minPollIntervalMs = options.minPollIntervalMs ?? 15;
    this.unsubscribeLocal = subscribeLocalMoves((service, move) => {
      if (service === this.names.session) this.localMove(move);
    });
  }

  async createSession(session: NewSession): Promise<CommitResult> {
    const { head } = storeInput.checkNewSession(session);
    const answer = await this.callInbox<Answer<CommitResult>>(
      head.sessionId,
      "create",
      { session, at: new Date().toISOString() },
      randomUUID(),
    );
    return unwrap(answer, head.sessionId);
  }

  async loadSession(sessionId: string): Promise<StoredSession | null> {
    storeInput.checkSessionId(sessionId);
    return this.callSession<StoredSession | null>(sessionId, "load", null);
  }

  async readHistory(sessionId: string, offset = 0): Promise<HistoryItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("offset", offset);
    return this.callSession<HistoryItem[]>(sessionId, "history", { offset });
  }

  async commit(): Promise<CommitResult> {
    throw new ConfigurationError(
      "sessions on Restate are committed by their drive in the session object, not through the store: run them with restateSessions(), not a Worker",
    );
  }

  async enqueue(sessionId: string, entry: InboxEntry, dedupeKey: string | null): Promise<EnqueueResult> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkInboxEntry(entry);
    storeInput.checkDedupeKey(dedupeKey);
    const answer = await this.callInbox<Answer<EnqueueResult>>(
      sessionId,
      "enqueue",
      { entry, dedupeKey },
      randomUUID(),
    );
    return unwrap(answer, sessionId);
  }

  async readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]> {
    storeInput.checkSessionId(sessionId);
    storeInput.checkCount("afterSeq", afterSeq);
    return this.callInbox<InboxItem[]>(sessionId, "inbox", { after: afterSeq });
  }

  async acquireLease(): Promise<Lease | null> {
    throw new ConfigurationError("sessions on Restate need no leases: Restate runs one drive per session at a time");
  }

  async renewLease(): Promise<Lease | null> {
    return this.acquireLease();
  }

  async releaseLease(): Promise<void> {
    await this.acquireLease();
  }

  async readEvents(sessionId: string, afterSeq: number, limit = 1000): Promise<SessionEvent[]> {
    storeInput.checkEventPage(sessionId, afterSeq, limit);
    return this.callSession<SessionEvent[]>(sessionId, "events", { after: afterSeq, limit });
  }

  subscribe(listener: (notification: StoreNotification) => void): () => void {
    this.listeners.add(listener);
    for (const sessionId of this.touched.keys()) this.poll(sessionId);
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.lastListenerAt = Date.now();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribeLocal();
    for (const news of this.localNews.values()) if (news.timer) clearTimeout(news.timer);
    this.localNews.clear();
    this.listeners.clear();
    for (const [, abort] of this.polling) abort.abort();
    this.polling.clear();
    for (const wake of [...this.pollWakes.values()]) wake();
    this.ingress.close();
  }

  private async callSession<T>(sessionId: string, handler: string, body: unknown): Promise<T> {
    this.touch(sessionId);
    return this.ingress.call<T>(this.names.session, sessionId, handler, body);
  }

  private async callInbox<T>(sessionId: string, handler: string, body: unknown, idempotencyKey?: string): Promise<T> {
    this.touch(sessionId);
    return this.ingress.call<T>(this.names.inbox, sessionId, handler, body, idempotencyKey ? { idempotencyKey } : {});
  }

  private touch(sessionId: string): void {
    this.touched.delete(sessionId);
    this.touched.set(sessionId, Date.now());
    // Forget sessions untouched for long (the map is in touch order).
    for (const [id, at] of this.touched) {
      if (Date.now() - at < watchForMs) break;
      this.touched.delete(id);
      this.lastLocal.delete(id);
    }
    if (this.listeners.size > 0) this.poll(sessionId);
  }

  /**
   * Runs one poll loop for the session, while someone listens and the session was touched lately.
   * While a drive may run (and at first, when nothing is known yet) the session object's `poll` is
   * read at most every `minPollIntervalMs`: one request that answers the status and the events
   * past the cursor, which go with the notice (a follower then needs no read). Once no drive runs,
   * the watch service long-polls the session until it moves.
   */
  private poll(sessionId: string): void {
    if (this.closed || this.polling.has(sessionId)) return;
    const abort = new AbortController();
    this.polling.set(sessionId, abort);
    void (async () => {
      let cursor: SessionCursor | null = null;
      let polledAt = Number.NEGATIVE_INFINITY;
      /** Poll the session object (a drive may run, or nothing is known yet) rather than long-poll. */
      let live = true;
      /** Polls in a row that found an entry no drive applied yet, and no drive running. */
      let awaitingDrive = 0;
      try {
        const listening = () => this.listeners.size > 0 || Date.now() - this.lastListenerAt < lingerMs;
        while (!abort.signal.aborted && listening()) {
          if ((this.localDrives.get(sessionId) ?? 0) > 0 && cursor !== null) {
            // The drive runs here and tells what it writes: poll again once it ended (and, to be
            // safe, every second meanwhile).
            await this.pause(sessionId, localCheckMs);
            const local = this.lastLocal.get(sessionId);
            if ((this.localDrives.get(sessionId) ?? 0) === 0 && local && !local.running) {
              // It ended here, and told where it left the session: its listeners know; wait for
              // what comes next (an entry, another process's drive) without reading it again.
              cursor = {
                version: Math.max(cursor.version, local.version),
                lastEventSeq: Math.max(cursor.lastEventSeq, local.lastEventSeq),
                inboxSeq: Math.max(cursor.inboxSeq, local.inboxSeq),
              };
              live = false;
              continue;
            }
            live = true;
          }
          const wait = polledAt + this.minPollIntervalMs - performance.now();
          if (wait > 0) {
            // A drive that starts here meanwhile wakes the wait: it is then followed as it writes.
            await this.pause(sessionId, wait);
            if ((this.localDrives.get(sessionId) ?? 0) > 0 && cursor !== null) continue;
          }
          polledAt = performance.now();
          const touchedAt = this.touched.get(sessionId);
          if (touchedAt === undefined || Date.now() - touchedAt > watchForMs) break;
          if (live) {
            const request: PollRequest = { after: cursor?.lastEventSeq ?? -1, limit: pollEventLimit };
            const answer = await this.ingress.call<PollAnswer | null>(this.names.session, sessionId, "poll", request, {
              signal: abort.signal,
            });
            if (answer === null) break; // no such session
            const { meta, events } = answer;
            const next = { version: meta.version, lastEventSeq: meta.lastEventSeq, inboxSeq: cursor?.inboxSeq ?? -1 };
            // The events go with the notice when they are all the events past the cursor.
            const complete =
              cursor !== null && events.length === meta.lastEventSeq - cursor.lastEventSeq && events.length > 0;
            cursor = this.moved(sessionId, cursor, next, complete ? events : undefined);
            // An entry past the head's cursor: a drive is about to run (polled a few times at most,
            // for an entry that starts none, e.g. of a session waiting for its definition).
            const unapplied =
              cursor.inboxSeq >= 0 && meta.inboxCursor !== undefined && meta.inboxCursor < cursor.inboxSeq;
            awaitingDrive = meta.running !== true && unapplied ? awaitingDrive + 1 : 0;
            live = meta.running === true || (unapplied && awaitingDrive <= maxPollsAwaitingDrive);
            continue;
          }
          const request: NextRequest = {
            sessionId,
            version: cursor?.version ?? -1,
            lastEventSeq: cursor?.lastEventSeq ?? -1,
            inboxSeq: cursor?.inboxSeq ?? -1,
            timeoutMs: this.longPollMs,
          };
          const next: NextAnswer | null = await this.ingress.callService<NextAnswer | null>(
            this.names.watch,
            "next",
            request,
            { signal: abort.signal },
          );
          if (next === null) continue; // timed out (or the session is gone: the next poll says)
          // The answer counts as a read: the first poll of the drive an entry starts comes at most
          // one interval later, or not at all when that drive starts in this process meanwhile (a
          // poll at once would mostly find it not started yet).
          polledAt = performance.now();
          // A new inbox entry starts a drive: follow it from its first write.
          live = next.running || (cursor !== null && next.inboxSeq > cursor.inboxSeq);
          cursor = this.moved(sessionId, cursor, next);
        }
      } catch {
        // Aborted, or the ingress is gone: the client's own poll carries on.
      } finally {
        if (this.polling.get(sessionId) === abort) this.polling.delete(sessionId);
      }
    })();
  }

  /**
   * Notifies what moved from `cursor` to `next` (with the events past the cursor, when read);
   * returns the new cursor. An inbox seq of -1 is not known yet: learning it is no move.
   */
  private moved(
    sessionId: string,
    cursor: SessionCursor | null,
    next: SessionCursor,
    events?: readonly SessionEvent[],
  ): SessionCursor {
    if (cursor !== null) {
      if (next.version !== cursor.version || next.lastEventSeq !== cursor.lastEventSeq)
        this.notify(events ? { kind: "events", sessionId, events } : { kind: "events", sessionId });
      if (cursor.inboxSeq >= 0 && next.inboxSeq !== cursor.inboxSeq) this.notify({ kind: "inbox", sessionId });
    }
    return { version: next.version, lastEventSeq: next.lastEventSeq, inboxSeq: next.inboxSeq };
  }

  /**
   * What a drive of this process did. Its writes are told at most every `minPollIntervalMs` per
   * session (the first at once), with their events, as the polls they stand in for would; a
   * drive's end is told at once, and the session's poll loop then reads the session again.
   */
  private localMove(move: LocalMove): void {
    const { sessionId } = move;
    if (move.kind === "attached") {
      this.localDrives.set(sessionId, (this.localDrives.get(sessionId) ?? 0) + 1);
      this.pollWakes.get(sessionId)?.();
      return;
    }
    if (move.kind === "detached") {
      const left = (this.localDrives.get(sessionId) ?? 1) - 1;
      if (left > 0) this.localDrives.set(sessionId, left);
      else this.localDrives.delete(sessionId);
      this.flushLocal(sessionId);
      this.pollWakes.get(sessionId)?.();
      return;
    }
    this.lastLocal.set(sessionId, {
      version: move.version,
      lastEventSeq: move.lastEventSeq,
      inboxSeq: move.inboxCursor,
      running: move.running,
    });
    if (this.listeners.size === 0) return;
    const news = this.localNews.get(sessionId) ?? {
      events: [],
      pending: false,
      at: Number.NEGATIVE_INFINITY,
      timer: null,
    };
    this.localNews.set(sessionId, news);
    news.events = mergeEvents(news.pending ? news.events : [], move.events);
    news.pending = true;
    const due = news.at + this.minPollIntervalMs - performance.now();
    if (!move.running || due <= 0) this.flushLocal(sessionId);
    else news.timer ??= setTimeout(() => this.flushLocal(sessionId), due);
  }

  private flushLocal(sessionId: string): void {
    const news = this.localNews.get(sessionId);
    if (!news?.pending) return;
    if (news.timer) clearTimeout(news.timer);
    news.timer = null;
    news.pending = false;
    news.at = performance.now();
    const events = news.events;
    news.events = [];
    this.notify(events && events.length > 0 ? { kind: "events", sessionId, events } : { kind: "events", sessionId });
  }

  /** Waits `ms`, or until a local drive of the session starts or ends, or the store closes. */
  private pause(sessionId: string, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wakes = this.pollWakes;
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        if (wakes.get(sessionId) === done) wakes.delete(sessionId);
        resolve();
      }
      wakes.set(sessionId, done);
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

/** `kept` followed by `incoming`, or null (read instead) when they do not join without a gap. */
function mergeEvents(kept: SessionEvent[] | null, incoming: readonly SessionEvent[]): SessionEvent[] | null {
  if (kept === null) return null;
  const last = kept.at(-1)?.seq;
  if (last !== undefined && incoming.length > 0 && incoming[0]!.seq !== last + 1) return null;
  return [...kept, ...incoming];
}

/** The value of an answer, or the typed error of core it carries. */
function unwrap<T>(answer: Answer<T>, sessionId: string): T {
  if (answer?.ok === true) return answer.value;
  const error = answer?.ok === false ? answer.error : { code: "contract_violation", message: "no answer" };
  switch (error.code) {
    case "session_not_found":
      throw new SessionNotFoundError(sessionId);
    case "session_state":
      throw new SessionStateError(error.message);
    case "invalid_input":
      throw new InvalidInputError(error.message);
    default:
      throw new ContractViolationError("store", `the session object answered ${error.code}: ${error.message}`);
  }
}

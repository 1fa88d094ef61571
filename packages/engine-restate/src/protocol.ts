/**
 * What the engine's services send each other and what the ingress client sends them: plain JSON.
 * A handler that refuses a request answers `{ ok: false, error }` rather than throwing, so that the
 * client can rebuild the exact typed error of core (a thrown TerminalError would reach it as an
 * HTTP status and a message only).
 */
import type { ErrorCode, EventBody, InboxEntry, InboxItem, SessionEvent, SessionHead } from "@durable-agents/core";
import type { CommitResult, EnqueueResult, NewSession } from "@durable-agents/core/engine";

export type Answer<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: { readonly code: ErrorCode; readonly message: string } };

/** Where a session's head, events and inbox are: what a long poll compares and answers. */
export interface SessionCursor {
  /** Grows by one with every committed head, as a store's version does. */
  readonly version: number;
  readonly lastEventSeq: number;
  /** The seq of the last inbox entry. */
  readonly inboxSeq: number;
}

/** Where the session object's head and events are (its `meta` state entry). */
export interface SessionMeta {
  readonly version: number;
  readonly lastEventSeq: number;
  /** History items stored (`h:0` … `h:<historyLength - 1>`). */
  readonly historyLength: number;
  /** A drive is running (set by its first write, cleared when it ends): followers poll the status meanwhile. */
  readonly running?: boolean;
  /**
   * The head's inbox cursor as of this write: an inbox past it has entries no drive applied yet (a
   * drive is about to run). Missing in meta written before it was added.
   */
  readonly inboxCursor?: number;
}

/** The inbox object's bookkeeping (its `meta` state entry). */
export interface InboxMeta {
  /** The seq of the last entry stored (`i:1` … `i:<inboxSeq>`). */
  readonly inboxSeq: number;
  /**
   * The invocation IDs of the drives sent and not known to have ended, oldest first (Restate runs
   * them in that order): each new entry is signalled to all of them, so the one running applies it
   * at once. Missing in meta written before it was added.
   */
  readonly drives?: readonly string[];
  /** Long polls of an idle session, waiting for it to move past their cursors. */
  readonly watchers: readonly Watcher[];
  /** Where the session was when its last drive ended (what a new watcher is compared with). */
  readonly known: { readonly version: number; readonly lastEventSeq: number };
  /**
   * A drive was sent and has not ended, or an ended drive left entries to the next: the session
   * may move at any moment, so a long poll is told to follow the session's status instead.
   */
  readonly active: boolean;
}

export interface Watcher extends SessionCursor {
  readonly awakeableId: string;
}

export interface CreateRequest {
  readonly session: NewSession;
  /** ISO time stamped on the events: a handler's input, so that a replay of the handler writes the same. */
  readonly at: string;
}

/** What the inbox object asks the session object to store when a session is created. */
export interface InitRequest {
  readonly head: SessionHead;
  readonly events: readonly EventBody[];
  readonly at: string;
}

export interface EnqueueRequest {
  readonly entry: InboxEntry;
  readonly dedupeKey: string | null;
}

/** A drive's parameter: the inbox entries handed to it (those at or below its head's cursor are skipped). */
export interface DriveRequest {
  readonly entries: readonly InboxItem[];
  /** Sent by a drive that handed over to a fresh one (a long journal): it starts with a tick. */
  readonly handover?: boolean;
}

/** What an entry's signal carries: the entry. */
export interface Wake {
  readonly entries: readonly InboxItem[];
}

/** A drive that ends tells the inbox object where the session is. */
export interface EndedRequest {
  /** The drive's invocation ID: it and every drive sent before it have ended. */
  readonly invocationId: string;
  /** The invocation ID of the fresh drive it handed over to. */
  readonly next?: string;
  readonly version: number;
  readonly lastEventSeq: number;
  /** The head's inbox cursor: entries past it go to the drives sent for them. */
  readonly inboxCursor: number;
  /** A fresh drive takes over at once (the session goes on running). */
  readonly handover: boolean;
}

/** The inbox object's answer to a long poll. */
export type WatchAnswer =
  | { readonly state: "moved"; readonly cursor: SessionCursor }
  | { readonly state: "running"; readonly inboxSeq: number }
  | { readonly state: "waiting" };

/** The watch service's answer: the session's cursor, and whether a drive runs (then: poll the status). */
export interface NextAnswer extends SessionCursor {
  readonly running: boolean;
}

/** A follower's poll of a session: its status, and the events after `after` (none when `after` < 0). */
export interface PollRequest {
  readonly after: number;
  readonly limit: number;
}

/** The session object's answer to a poll: its status and the events asked for (up to `limit`). */
export interface PollAnswer {
  readonly meta: SessionMeta;
  readonly events: readonly SessionEvent[];
}

/** What resolves a streaming model step's delta awakeable: the text deltas it produced. */
export interface DeltaBatch {
  readonly events: readonly EventBody[];
  readonly at: number;
  /**
   * The index of the batch's first event among the events the step streamed (absent in batches
   * journaled before it was added: written whole).
   */
  readonly first?: number;
}

/** A long poll: answer once the session's version, events or inbox moved past these, or after `timeoutMs`. */
export interface NextRequest extends SessionCursor {
  readonly sessionId: string;
  readonly timeoutMs: number;
}

export type { CommitResult, EnqueueResult };

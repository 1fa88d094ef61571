/**
 * What the engine's services send each other and what the ingress client sends them: plain JSON.
 * A handler that refuses a request answers `{ ok: false, error }` rather than throwing, so that the
 * client can rebuild the exact typed error of core (a thrown TerminalError would reach it as an
 * HTTP status and a message only).
 */
import type { ErrorCode, EventBody, HistoryItem, InboxEntry, InboxItem, SessionHead } from "@durable-agents/core";
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

/** The session object's bookkeeping: one state entry (`meta`) that every handler reads first. */
export interface SessionMeta extends SessionCursor {
  /** History items stored (`h:0` … `h:<historyLength - 1>`). */
  readonly historyLength: number;
  /** The awakeable of a running drive that waits for the inbox, resolved by the next entry. */
  readonly driverWake: string | null;
  /** Long polls waiting for the session to move past their cursors. */
  readonly watchers: readonly Watcher[];
}

export interface Watcher extends SessionCursor {
  readonly awakeableId: string;
}

export interface CreateRequest {
  readonly session: NewSession;
  /** ISO time stamped on the events: a handler's input, so that a replay of the handler writes the same. */
  readonly at: string;
}

export interface EnqueueRequest {
  readonly entry: InboxEntry;
  readonly dedupeKey: string | null;
}

/** One transition of the state machine, sent by the drive: the head, the history it appends, its events. */
export interface CommitRequest {
  readonly head: SessionHead;
  readonly appendHistory: readonly HistoryItem[];
  readonly events: readonly EventBody[];
  readonly at: string;
}

/** Events without a head (a model step's text deltas while it streams). */
export interface AppendEventsRequest {
  readonly events: readonly EventBody[];
  readonly at: string;
}

/** What a drive starts from: the head as committed, and the inbox entries it has not applied. */
export interface Opened {
  readonly head: SessionHead;
  readonly version: number;
  readonly inbox: readonly InboxItem[];
}

export interface WatchInboxRequest {
  readonly cursor: number;
  readonly awakeableId: string;
}

/** What resolves a drive's wake-up awakeable: the inbox entry that arrived. */
export interface Wake {
  readonly entries: readonly InboxItem[];
}

/** A long poll: answer once the session's version, events or inbox moved past these, or after `timeoutMs`. */
export interface NextRequest extends SessionCursor {
  readonly sessionId: string;
  readonly timeoutMs: number;
}

export type { CommitResult, EnqueueResult };

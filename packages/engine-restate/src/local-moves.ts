/**
 * What the drives running in this process write, told to the `RestateSessionStore`s of this
 * process as they write it: a client that shares its process with the endpoint that drives a
 * session (a UI server that is also the session's endpoint) follows it without polling the
 * cluster while the drive runs here.
 *
 * What a drive tells is what it wrote into the session object's state (the events with their seqs,
 * the version), before Restate has stored it: a transition is computed from journaled inputs only
 * (step results, signals, clock reads), so a replay writes exactly the same, and what a listener
 * was told is what every reader reads once the writes are applied.
 */
import type { SessionEvent } from "@durable-agents/core";

export type LocalMove =
  /** A drive attempt for the session started in this process. */
  | { readonly kind: "attached"; readonly sessionId: string }
  /** It ended, however it ended: what it wrote is read from the cluster again. */
  | { readonly kind: "detached"; readonly sessionId: string }
  /** It wrote a transition (or its end): the events it appended, and where the session is. */
  | {
      readonly kind: "wrote";
      readonly sessionId: string;
      readonly events: readonly SessionEvent[];
      readonly version: number;
      readonly lastEventSeq: number;
      /** The head's inbox cursor: the entries up to it are applied. */
      readonly inboxCursor: number;
      /** False once the drive ended (its last write). */
      readonly running: boolean;
    };

type Listener = (service: string, move: LocalMove) => void;

const listeners = new Set<Listener>();

/** Whether anyone in this process listens (a drive skips building its news otherwise). */
export const localListeners = (): boolean => listeners.size > 0;

/** Tells every listener of this process that a drive of the session object `service` moved. */
export function publishLocalMove(service: string, move: LocalMove): void {
  for (const listener of [...listeners]) {
    try {
      listener(service, move);
    } catch {
      // A listener's failure is its own.
    }
  }
}

/** Listens to the drives of this process; returns the unsubscribe. */
export function subscribeLocalMoves(listener: Listener): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

/**
 * The abort signals of a session's steps, one per turn: a step's signal is aborted once its turn is
 * no longer running its model or tools (it was cancelled, or it ended), or when the engine's own
 * signal aborts (a lost lease, a dead process). Every engine that drives the state machine keeps one
 * and calls `abortEnded` with each head it stores.
 */
import type { SessionHead, Turn } from "./schemas.js";

const running = (head: SessionHead, turnId: string): boolean => {
  const turn: Turn | null = head.turn;
  return turn?.turnId === turnId && (turn.phase === "model" || turn.phase === "tools");
};

const abortError = (message: string): Error => Object.assign(new Error(message), { name: "AbortError" });

export class TurnSignals {
  readonly #controllers = new Map<string, AbortController>();

  /** The signal for a step of `turnId` launched from `head`: already aborted when that turn is not running. */
  signalFor(head: SessionHead, turnId: string, engine: AbortSignal): AbortSignal {
    if (!running(head, turnId)) return AbortSignal.abort(abortError("the turn was cancelled or ended"));
    let controller = this.#controllers.get(turnId);
    if (!controller) {
      controller = new AbortController();
      this.#controllers.set(turnId, controller);
    }
    return AbortSignal.any([engine, controller.signal]);
  }

  /** Aborts the steps of every turn that `head` no longer runs (cancelled, ended). */
  abortEnded(head: SessionHead): void {
    for (const [turnId, controller] of this.#controllers) {
      if (running(head, turnId)) continue;
      this.#controllers.delete(turnId);
      const cancelling = head.turn?.turnId === turnId && head.turn.phase === "cancelling";
      controller.abort(abortError(cancelling ? "the turn was cancelled" : "the turn ended"));
    }
  }
}

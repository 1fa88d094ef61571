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

/** A running turn's step controllers, and the engine signal they follow (aborted with it). */
interface TurnEntry {
  readonly steps: AbortController[];
  readonly engine: AbortSignal;
  readonly onEngineAbort: () => void;
}

export class TurnSignals {
  readonly #turns = new Map<string, TurnEntry>();

  /**
   * The signal for a step of `turnId` launched from `head`: already aborted when that turn is not
   * running. Each step gets its own controller, which the turn's entry aborts (one listener on the
   * engine signal per turn, no composed signal per step); a step given another engine signal than
   * the turn's first gets that one composed in.
   */
  signalFor(head: SessionHead, turnId: string, engine: AbortSignal): AbortSignal {
    if (!running(head, turnId)) return AbortSignal.abort(abortError("the turn was cancelled or ended"));
    if (engine.aborted) return AbortSignal.abort(engine.reason);
    let entry = this.#turns.get(turnId);
    if (!entry) {
      const steps: AbortController[] = [];
      const onEngineAbort = () => {
        for (const step of steps) step.abort(engine.reason);
      };
      engine.addEventListener("abort", onEngineAbort, { once: true });
      entry = { steps, engine, onEngineAbort };
      this.#turns.set(turnId, entry);
    }
    const step = new AbortController();
    entry.steps.push(step);
    return entry.engine === engine ? step.signal : AbortSignal.any([engine, step.signal]);
  }

  /** Aborts the steps of every turn that `head` no longer runs (cancelled, ended). */
  abortEnded(head: SessionHead): void {
    for (const [turnId, entry] of this.#turns) {
      if (running(head, turnId)) continue;
      this.#turns.delete(turnId);
      entry.engine.removeEventListener("abort", entry.onEngineAbort);
      const cancelling = head.turn?.turnId === turnId && head.turn.phase === "cancelling";
      const reason = abortError(cancelling ? "the turn was cancelled" : "the turn ended");
      for (const step of entry.steps) step.abort(reason);
    }
  }
}

import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import type { SessionHead, Turn } from "../src/index.js";
import { newSessionHead, TurnSignals } from "../src/engine.js";

/** A head whose turn `turnId` is in `phase` (only what TurnSignals reads). */
const headWith = (turnId: string, phase: Turn["phase"]): SessionHead => ({
  ...newSessionHead("s", "agent", "2026-01-01T00:00:00.000Z"),
  turn: { turnId, phase } as Turn,
});

const reasonOf = (signal: AbortSignal) => signal.reason as Error;

describe("TurnSignals", () => {
  it("gives each step of a running turn its own signal, all aborted once the turn ends or is cancelled", () => {
    const signals = new TurnSignals();
    const engine = new AbortController().signal;
    const running = headWith("t1", "model");
    const a = signals.signalFor(running, "t1", engine);
    const b = signals.signalFor(headWith("t1", "tools"), "t1", engine);
    expect(a).not.toBe(b);
    expect([a.aborted, b.aborted]).toEqual([false, false]);
    signals.abortEnded(headWith("t1", "tools"));
    expect(a.aborted).toBe(false);
    signals.abortEnded(headWith("t1", "completed"));
    expect([a.aborted, b.aborted]).toEqual([true, true]);
    expect(reasonOf(a).name).toBe("AbortError");
    expect(reasonOf(a).message).toBe("the turn ended");
    expect(getEventListeners(engine, "abort")).toHaveLength(0);

    const c = signals.signalFor(headWith("t2", "model"), "t2", engine);
    signals.abortEnded(headWith("t2", "cancelling"));
    expect(reasonOf(c).message).toBe("the turn was cancelled");
    // a step of a turn that is not running is aborted from the start
    const late = signals.signalFor(headWith("t2", "cancelling"), "t2", engine);
    expect(late.aborted).toBe(true);
  });

  it("aborts every step with the engine's reason when the engine's signal aborts, with one listener per turn", () => {
    const signals = new TurnSignals();
    const engine = new AbortController();
    const steps = [1, 2, 3].map(() => signals.signalFor(headWith("t1", "model"), "t1", engine.signal));
    const other = signals.signalFor(headWith("t2", "model"), "t2", engine.signal);
    expect(getEventListeners(engine.signal, "abort")).toHaveLength(2);
    const lost = new Error("the lease was lost");
    engine.abort(lost);
    for (const signal of [...steps, other]) expect(signal.reason).toBe(lost);
    expect(signals.signalFor(headWith("t1", "model"), "t1", engine.signal).reason).toBe(lost);
    // the turn ending afterwards keeps the engine's reason
    signals.abortEnded(headWith("t1", "completed"));
    expect(steps[0]!.reason).toBe(lost);
  });

  it("composes a step's signal with another engine signal than the turn's first", () => {
    const signals = new TurnSignals();
    const first = new AbortController();
    const second = new AbortController();
    const a = signals.signalFor(headWith("t1", "model"), "t1", first.signal);
    const b = signals.signalFor(headWith("t1", "tools"), "t1", second.signal);
    second.abort(new Error("attempt over"));
    expect(b.aborted).toBe(true);
    expect(a.aborted).toBe(false);
    first.abort(new Error("gone"));
    expect(reasonOf(a).message).toBe("gone");
  });
});

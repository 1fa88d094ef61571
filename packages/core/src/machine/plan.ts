/** The planner: after every applied input, start each step that is ready by `now` and not started yet. */
import type { Draft } from "./draft.js";
import { currentCalls } from "./state.js";

export function startReadySteps(draft: Draft, now: number): void {
  const turn = draft.activeTurn();
  if (!turn) return;
  const ready = (notBefore: number | null) => notBefore === null || notBefore <= now;
  if (turn.phase === "model") {
    if (!turn.modelRunning && ready(turn.modelRetryAt)) draft.startModel(turn);
    return;
  }
  for (const call of currentCalls(turn)) {
    // A turn being cancelled starts no call (none is pending then); checks of calls in doubt run in any phase.
    if (call.status === "pending" && turn.phase === "tools" && ready(call.retryAt)) draft.startCall(turn, call);
    if (call.status === "reconcile_pending" && ready(call.retryAt)) draft.startReconcile(turn, call);
  }
}

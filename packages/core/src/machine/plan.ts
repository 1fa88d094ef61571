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
    if (call.status === "pending" && ready(call.retryAt)) draft.startCall(turn, call);
  }
}

import { describe, expect, it } from "vitest";
import { ConfigurationError, ToolCancelledError } from "@durable-agents/core";
import { runInToolCall } from "@durable-agents/core/engine";
import { OrderDesk } from "../src/order-desk.js";
import { lookUpDelayFromEnv, lookUpOrder } from "../src/slow-look-up.js";

const call = (signal: AbortSignal) => ({
  sessionId: "s1",
  turnId: "turn-1",
  toolCallId: "c1",
  toolName: "look_up_order",
  idempotencyKey: "s1/turn-1/c1",
  attempt: 1,
  signal,
});

describe("the slow look-up", () => {
  it("answers at once without a delay, and after the delay with one", async () => {
    const desk = new OrderDesk();
    expect(await lookUpOrder(desk, "1001", {})).toBe(desk.describeOrder("1001"));
    const started = Date.now();
    expect(await lookUpOrder(desk, "1002", { lookUpDelayMs: 50 })).toBe(desk.describeOrder("1002"));
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it("stops waiting when the call's signal is aborted, with ToolCancelledError", async () => {
    const desk = new OrderDesk();
    const abort = new AbortController();
    const looking = runInToolCall(call(abort.signal), () => lookUpOrder(desk, "1001", { lookUpDelayMs: 600_000 }));
    abort.abort(new Error("the turn was cancelled"));
    const error = await looking.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(ToolCancelledError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      "the look-up of order 1001 stopped before the desk answered (the turn was cancelled)",
    );
    // A signal aborted before the look-up starts stops it too, even without a delay.
    await expect(runInToolCall(call(abort.signal), () => lookUpOrder(desk, "1001", {}))).rejects.toThrow(
      ToolCancelledError,
    );
  });

  it("reads ORDER_SUPPORT_LOOKUP_DELAY_MS, and refuses what is not a whole number of milliseconds", () => {
    expect(lookUpDelayFromEnv({})).toBe(0);
    expect(lookUpDelayFromEnv({ ORDER_SUPPORT_LOOKUP_DELAY_MS: " 250 " })).toBe(250);
    for (const bad of ["-1", "1.5", "soon", "99999999999"]) {
      expect(() => lookUpDelayFromEnv({ ORDER_SUPPORT_LOOKUP_DELAY_MS: bad })).toThrow(ConfigurationError);
    }
  });
});

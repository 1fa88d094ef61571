import { describe, expect, it } from "vitest";
import { ConfigurationError, ToolCancelledError } from "@durable-agents/core";
import { runInToolCall } from "@durable-agents/core/engine";
import { MemoryStore } from "@durable-agents/store-memory";
import { OrderSupportDemoModel } from "../src/demo-model.js";
import { OrderDesk } from "../src/order-desk.js";
import { startOrderSupportRuntime } from "../src/order-support-runtime.js";
import { createOrderSupportSession, orderSupportAgentName } from "../src/order-support-session.js";
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

describe("a runtime with slow look-ups", () => {
  it("stops at once with a look-up in flight; the next worker runs the look-up again", async () => {
    const store = new MemoryStore();
    const desk = new OrderDesk();
    const slow = startOrderSupportRuntime({
      store,
      desk,
      session: (d, { stopping }) =>
        createOrderSupportSession(d, new OrderSupportDemoModel({ chunkDelayMs: 0 }), {
          lookUpDelayMs: 600_000,
          stopping,
        }),
    });
    const { sessionId } = await slow.client.startSession({
      agent: orderSupportAgentName,
      message: "look up order 1001",
    });
    await waitUntil(async () => (await slow.client.snapshot(sessionId)).turn?.calls[0]?.status === "running");
    // Without the stop signal, this would wait for the ten-minute look-up.
    await slow.stop();
    const stopped = await slow.client.snapshot(sessionId);
    expect(stopped.status).toBe("running");
    expect(stopped.turn?.calls[0]).toMatchObject({ name: "look_up_order", status: "pending", attempts: 1 });
    expect(stopped.turn?.calls[0]?.lastError).toContain("the process is stopping");

    const next = startOrderSupportRuntime({ store, desk, model: new OrderSupportDemoModel({ chunkDelayMs: 0 }) });
    try {
      await waitUntil(async () => (await next.client.snapshot(sessionId)).status === "idle");
      const done = await next.client.snapshot(sessionId);
      expect(done.turn?.calls[0]).toMatchObject({ status: "succeeded", attempts: 2 });
      expect(done.messages.at(-1)?.text).toBe(`I looked up order 1001: ${desk.describeOrder("1001")}`);
    } finally {
      await next.stop();
      await store.close();
    }
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("the condition did not hold in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

import { defineSession, SessionClient, Worker, type SessionStore } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/index.js";

/** A store whose inbox reads take a while, as a database round trip does. */
function slowInbox(store: MemoryStore, ms: number): SessionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== "readInbox") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<MemoryStore["readInbox"]>) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return target.readInbox(...args);
      };
    },
  });
}

describe("the engine", () => {
  it("never launches a step again while its result waits to be applied", async () => {
    const runner = new ScriptedRunner({
      tools: [{ name: "look_up_order", description: "Look up.", parameters: { order_id: "string" }, execute: (a) => `order ${String(a.order_id)}` }],
    });
    // A model that takes a little time, so inbox reads overlap model steps.
    const slowRunner = Object.assign(Object.create(runner) as ScriptedRunner, {
      runModel: async (input: Parameters<ScriptedRunner["runModel"]>[0]) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        return runner.runModel(input);
      },
    });
    const definition = defineSession({ name: "race", runner: slowRunner, policies: { look_up_order: { effect: "read" } } });
    const store = slowInbox(new MemoryStore(), 15);
    const errors: unknown[] = [];
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20, onError: (e) => errors.push(e) }).start();
    const client = new SessionClient({ store });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { sessionId } = await client.startSession({ agent: "race", message: `call look_up_order {"order_id":"${i}"}` });
      ids.push(sessionId);
    }
    // Messages arrive while model steps run: each wakes the engine, which reads the inbox (slowly).
    for (const [i, id] of ids.entries()) {
      await new Promise((resolve) => setTimeout(resolve, 4));
      await client.sendMessage(id, `second ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 7));
      await client.sendMessage(id, `third ${i}`);
    }
    let modelSteps = 0;
    for (const id of ids) {
      const done = await client.waitUntilIdle(id, { timeoutMs: 10_000 });
      expect(done.turnCount).toBe(3);
      modelSteps += (await client.steps(id)).filter((s) => s.step === "RunModel").length;
    }
    await worker.stop();
    expect(errors).toEqual([]);
    expect(modelSteps).toBe(8 * 4);
    expect(runner.modelCalls).toBe(modelSteps);
  });

  it("starts a retry when its backoff ends, not at the next poll", async () => {
    let failures = 2;
    const runner = new ScriptedRunner({
      tools: [
        {
          name: "flaky",
          description: "Fails twice.",
          parameters: { key: "string" },
          execute: () => {
            if (failures-- > 0) throw new Error("down");
            return "up";
          },
        },
      ],
    });
    const definition = defineSession({ name: "retry", runner, policies: { flaky: { effect: "read" } }, toolBackoff: { initialDelayMs: 5, maxDelayMs: 5 } });
    const store = new MemoryStore();
    // With a poll of a minute, only the backoff timer can start the retries in time.
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 60_000 }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "retry", message: 'call flaky {"key":"k"}' });
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 5_000 });
    await worker.stop();
    expect(done.turn?.calls[0]?.attempts).toBe(3);
    expect(done.turn?.calls[0]?.status).toBe("succeeded");
  });
});

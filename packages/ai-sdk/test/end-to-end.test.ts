/**
 * The README's example, run through core's real Worker, SessionClient and the in-memory store,
 * with the scripted model in place of a provider.
 */
import { SessionClient, Worker, currentToolCall, type HistoryItem } from "@durable-agents/core";
import { memoryRawReader, MemoryStore } from "@durable-agents/store-memory";
import { tool, type ModelMessage } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkSession } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";

const running: Worker[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((worker) => worker.stop({ timeoutMs: 2_000 })));
});

function setup() {
  const refunds: { orderId: string; amount: number; key: string | undefined }[] = [];
  const model = new ScriptedLanguageModel();
  const support = aiSdkSession({
    name: "support",
    model,
    instructions: "You help customers with their orders.",
    tools: {
      look_up_order: tool({
        description: "Looks an order up by its ID",
        inputSchema: z.object({ orderId: z.string() }),
        execute: async ({ orderId }) => ({ orderId, status: "shipped" }),
      }),
      refund_order: tool({
        description: "Refunds part of an order",
        inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
        needsApproval: async ({ amount }) => amount > 100,
        execute: async ({ orderId, amount }) => {
          refunds.push({ orderId, amount, key: currentToolCall()?.idempotencyKey });
          return `refunded ${amount} on ${orderId}`;
        },
      }),
    },
    policies: { look_up_order: { effect: "read" }, refund_order: { effect: "idempotent_write" } },
    modelRetry: { initialDelayMs: 5, maxDelayMs: 20 },
    toolBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
  });
  const store = new MemoryStore();
  const worker = new Worker({ store, sessions: [support], pollIntervalMs: 25 }).start();
  running.push(worker);
  return { client: new SessionClient({ store }), store, model, refunds };
}

describe("an AI SDK agent as a durable session", () => {
  it("asks a person only for the calls the tool's needsApproval function picks, and runs each once", async () => {
    const { client, refunds } = setup();
    const { sessionId } = await client.startSession({
      agent: "support",
      message:
        'call look_up_order {"orderId":"1001"}\nthen\ncall refund_order {"orderId":"1001","amount":20}\ncall refund_order {"orderId":"1001","amount":500}',
    });
    const waiting = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    expect(waiting.status).toBe("awaiting_approval");
    expect(waiting.pendingInterrupts.map((interrupt) => interrupt.arguments)).toEqual([
      '{"orderId":"1001","amount":500}',
    ]);
    // The small refund needed no one and may already have run; the large one has not.
    expect(refunds.map((refund) => refund.amount)).not.toContain(500);

    await client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    expect(done.status).toBe("idle");
    expect(done.turn?.finalText).toBe(
      'Results: look_up_order -> {"orderId":"1001","status":"shipped"} | refund_order -> refunded 20 on 1001 | refund_order -> refunded 500 on 1001',
    );
    expect(refunds.map((refund) => refund.amount).sort((a, b) => a - b)).toEqual([20, 500]);
    expect(refunds.every((refund) => refund.key?.startsWith(`${sessionId}/`))).toBe(true);
    expect(done.usage.modelCalls).toBe(3);
  });

  it("stores the turn as SDK model messages and replays them on the next turn", async () => {
    const { client, store, model } = setup();
    const { sessionId } = await client.startSession({
      agent: "support",
      message: 'call look_up_order {"orderId":"7"}',
    });
    await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    await client.sendMessage(sessionId, "thanks");
    const done = await client.waitFor(sessionId, (snapshot) => snapshot.turnCount === 2 && snapshot.status === "idle", {
      timeoutMs: 10_000,
    });
    expect(done.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(done.messages.at(-1)?.text).toBe("You said: thanks");

    const stored = (await memoryRawReader(store).history(sessionId)) as HistoryItem[];
    const roles = stored.map((entry) => (entry.item as ModelMessage).role);
    expect(roles).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"]);
    // The second turn's model call saw the first turn's messages as stored.
    const lastPrompt = model.doStreamCalls.at(-1)!.prompt;
    expect(lastPrompt.map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
  });
});

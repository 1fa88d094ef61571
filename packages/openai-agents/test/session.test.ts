import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent } from "@openai/agents";
import { SessionClient, Worker, currentToolCall } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { durableTool, openAIAgentsSession } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

describe("openAIAgentsSession on core's worker and the memory store", () => {
  it("runs the README's refund session: a read, an approval, a single-attempt write, a handoff", async () => {
    const refunds: string[] = [];
    const searchOrders = durableTool({
      name: "search_orders",
      description: "Find a customer's open orders.",
      parameters: z.object({ customer_id: z.string() }),
      execute: ({ customer_id }) => `customer ${customer_id} has order 7`,
    });
    const createRefund = durableTool({
      name: "create_refund",
      description: "Refund one order.",
      parameters: z.object({ order_id: z.string() }),
      execute: ({ order_id }) => {
        refunds.push(currentToolCall()?.idempotencyKey ?? "none");
        return `refunded order ${order_id}`;
      },
    });
    const billing = new Agent({ name: "billing", instructions: "Refund orders.", tools: [createRefund] });
    const support = new Agent({
      name: "support",
      instructions: "Help with orders.",
      tools: [searchOrders],
      handoffs: [billing],
    });
    const model = new ScriptedModel();
    const definition = openAIAgentsSession(support, {
      name: "support",
      model,
      policies: { search_orders: { effect: "read" }, create_refund: { effect: "non_idempotent_write" } },
    });

    const store = new MemoryStore();
    const worker = new Worker({ store, sessions: [definition] }).start();
    workers.push(worker);
    const client = new SessionClient({ store, agents: ["support"] });
    const message =
      'call search_orders {"customer_id":"3"}\nthen\ncall transfer_to_billing {}\nthen\ncall create_refund {"order_id":"7"}';
    const { sessionId } = await client.startSession({ agent: "support", sessionId: "session-42", message });

    const waiting = await client.waitUntilIdle(sessionId);
    expect(waiting.status).toBe("awaiting_approval");
    expect(waiting.pendingInterrupts.map((i) => i.toolName)).toEqual(["create_refund"]);
    expect(refunds).toEqual([]);
    await client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);

    const done = await client.waitUntilIdle(sessionId);
    expect(done.status).toBe("idle");
    expect(refunds).toHaveLength(1);
    const last = done.messages.at(-1)!;
    expect(last.role).toBe("assistant");
    expect(last.text).toMatch(
      /search_orders -> customer 3 has order 7 \| transfer_to_billing -> .* \| create_refund -> refunded order 7$/,
    );
    expect(done.usage.modelCalls).toBe(model.calls);
    const steps = (await client.steps(sessionId)).map((s) => s.step);
    expect(steps.filter((s) => s === "RunModel")).toHaveLength(3); // the handoff step made two model calls
    expect(model.calls).toBe(4);
    expect(steps).toContain("CallSingleAttemptTool");
    expect(steps).toContain("AwaitToolApproval");
  }, 60_000);
});

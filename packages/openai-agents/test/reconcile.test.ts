/**
 * `reconcile` in the policies of an OpenAI Agents session: core runs the check, the adapter's tools
 * and runner need nothing of their own. A write whose response was lost is found done; one that
 * never happened is offered to a person again and runs once more only after the approval; one the
 * check cannot tell raises an attention interrupt, which a person resolves.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent } from "@openai/agents";
import { PolicyError, SessionClient, Worker, currentToolCall, type ReconcileResult } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { durableTool, openAIAgentsSession } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

/** A refund service: it records a refund by idempotency key; the connection drops on the call's first attempt. */
function refundService() {
  const ledger = new Map<string, string>();
  const executions: { key: string; orderId: string }[] = [];
  const createRefund = durableTool({
    name: "create_refund",
    description: "Refund one order.",
    parameters: z.object({ order_id: z.string() }),
    execute: ({ order_id }) => {
      const key = currentToolCall()!.idempotencyKey;
      const first = !executions.some((e) => e.key === key);
      executions.push({ key, orderId: order_id });
      // Order "lost": the refund is made, then the response is lost. Order "dropped": it fails before.
      if (order_id === "lost" || !first || order_id === "maybe") ledger.set(key, `refunded order ${order_id}`);
      if (first) throw new Error("the refund service dropped the connection");
      return `refunded order ${order_id}`;
    },
  });
  const reconcile = ({
    idempotencyKey,
    arguments: args,
  }: {
    idempotencyKey: string;
    arguments: unknown;
  }): ReconcileResult => {
    if ((args as { order_id?: string }).order_id === "maybe") return { status: "unknown" };
    const entry = ledger.get(idempotencyKey);
    return entry === undefined ? { status: "not_done" } : { status: "done", output: entry };
  };
  return { ledger, executions, createRefund, reconcile };
}

function setup() {
  const service = refundService();
  const agent = new Agent({ name: "billing", instructions: "Refund orders.", tools: [service.createRefund] });
  const definition = openAIAgentsSession(agent, {
    name: "billing",
    model: new ScriptedModel(),
    policies: {
      create_refund: { effect: "non_idempotent_write", needsApproval: false, reconcile: service.reconcile },
    },
  });
  const store = new MemoryStore();
  workers.push(new Worker({ store, sessions: [definition], pollIntervalMs: 25 }).start());
  return { service, definition, client: new SessionClient({ store }) };
}

describe("reconcile in an OpenAI Agents session's policies", () => {
  it("finds a lost response done, and offers a refund that never happened to a person again", async () => {
    const { service, definition, client } = setup();
    expect(typeof definition.policies.create_refund?.reconcile).toBe("function");

    const { sessionId } = await client.startSession({
      agent: "billing",
      message: 'call create_refund {"order_id":"lost"}',
    });
    const done = await client.waitUntilIdle(sessionId);
    const call = done.turn!.calls[0]!;
    expect(call.status).toBe("succeeded");
    expect(call.reconciled).toEqual({ by: "tool", found: "done" });
    expect(done.turn?.finalText).toMatch(/create_refund -> refunded order lost$/);
    expect(service.executions.filter((e) => e.orderId === "lost")).toHaveLength(1);

    await client.sendMessage(sessionId, 'call create_refund {"order_id":"dropped"}');
    const waiting = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "awaiting_approval");
    const [again] = waiting.pendingInterrupts;
    expect(again?.reason).toMatch(/did not take effect/);
    expect(service.executions.filter((e) => e.orderId === "dropped")).toHaveLength(1);
    await client.approve(sessionId, again!.interruptId);
    const second = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
    expect(second.turn?.calls[0]?.status).toBe("succeeded");
    const runs = service.executions.filter((e) => e.orderId === "dropped");
    expect(runs).toHaveLength(2);
    expect(new Set(runs.map((r) => r.key)).size).toBe(1);
    expect(second.turn?.finalText).toMatch(/create_refund -> refunded order dropped$/);
  }, 60_000);

  it("raises an attention interrupt when the check cannot tell; a person marks it done and the model is told", async () => {
    const { client } = setup();
    const { sessionId } = await client.startSession({
      agent: "billing",
      message: 'call create_refund {"order_id":"maybe"}',
    });
    const first = await client.waitUntilIdle(sessionId);
    expect(first.turn?.calls[0]?.status).toBe("outcome_unknown");
    const [attention] = first.pendingInterrupts;
    expect(attention?.kind).toBe("attention");
    await client.resolveAttention(sessionId, attention!.interruptId, {
      outcome: "done",
      output: "the ledger shows the refund",
    });
    const done = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
    expect(done.pendingInterrupts).toEqual([]);
    expect(done.turn?.finalText).toMatch(
      /^You said: \[attention resolved\] .*it took effect\. Its result: the ledger shows the refund$/,
    );
  }, 60_000);

  it("refuses reconcile on a read, and a reconcile that is not a function", () => {
    const { createRefund } = refundService();
    const agent = new Agent({ name: "billing", instructions: "Refund orders.", tools: [createRefund] });
    const define = (policy: unknown) =>
      openAIAgentsSession(agent, {
        name: "billing",
        model: new ScriptedModel(),
        policies: { create_refund: policy as never },
      });
    expect(() => define({ effect: "read", reconcile: () => ({ status: "unknown" }) })).toThrow(PolicyError);
    expect(() => define({ effect: "non_idempotent_write", reconcile: "ask the ledger" })).toThrow(
      /reconcile must be a function/,
    );
  });
});

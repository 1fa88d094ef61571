/**
 * `reconcile` in the policies of an AI SDK session: core runs the check, the adapter's tools and
 * runner need nothing of their own. An `idempotent_write` out of attempts is checked: found done, it
 * is `succeeded` and never runs again; found not done, it runs again with the same key.
 */
import { PolicyError, SessionClient, Worker, currentToolCall, type ReconcileInput } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { tool } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkSession } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";

const running: Worker[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((worker) => worker.stop({ timeoutMs: 2_000 })));
});

/** A bank: transfers by idempotency key. Every answer is lost for "lost" (the transfer is made); "down" fails three times first. */
function bank() {
  const ledger = new Map<string, string>();
  const attempts: { key: string; to: string; attempt: number }[] = [];
  const transfer = tool({
    description: "Transfers money",
    inputSchema: z.object({ to: z.string() }),
    execute: async ({ to }) => {
      const call = currentToolCall()!;
      attempts.push({ key: call.idempotencyKey, to, attempt: call.attempt });
      if (to === "lost") {
        ledger.set(call.idempotencyKey, `sent to ${to}`);
        throw new Error("the bank's answer was lost");
      }
      if (call.attempt <= 3) throw new Error("the bank is down");
      ledger.set(call.idempotencyKey, `sent to ${to}`);
      return `sent to ${to}`;
    },
  });
  const checks: ReconcileInput[] = [];
  const reconcile = (input: ReconcileInput) => {
    checks.push(input);
    const entry = ledger.get(input.idempotencyKey);
    return entry === undefined ? ({ status: "not_done" } as const) : ({ status: "done", output: entry } as const);
  };
  return { transfer, reconcile, attempts, checks };
}

describe("reconcile in an AI SDK session's policies", () => {
  it("checks an idempotent write out of attempts: done is never run again; not done runs again with its key", async () => {
    const { transfer, reconcile, attempts, checks } = bank();
    const definition = aiSdkSession({
      name: "payments",
      model: new ScriptedLanguageModel(),
      tools: { transfer },
      policies: { transfer: { effect: "idempotent_write", reconcile } },
      toolBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
    });
    const store = new MemoryStore();
    running.push(new Worker({ store, sessions: [definition], pollIntervalMs: 25 }).start());
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({
      agent: "payments",
      message: 'call transfer {"to":"lost"}\ncall transfer {"to":"down"}',
    });
    const done = await client.waitUntilIdle(sessionId);
    const [lost, down] = done.turn!.calls;
    expect(lost?.status).toBe("succeeded");
    expect(lost?.attempts).toBe(3);
    expect(lost?.reconciled).toEqual({ by: "tool", found: "done" });
    expect(attempts.filter((a) => a.to === "lost")).toHaveLength(3);
    expect(down?.status).toBe("succeeded");
    expect(down?.attempts).toBe(4);
    expect(down?.reconciled).toEqual({ by: "tool", found: "not_done" });
    const downRuns = attempts.filter((a) => a.to === "down");
    expect(downRuns.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
    expect(new Set(downRuns.map((a) => a.key))).toEqual(new Set([down!.idempotencyKey]));
    expect(checks.map((c) => [c.toolName, c.arguments, c.idempotencyKey])).toEqual(
      expect.arrayContaining([
        ["transfer", { to: "lost" }, lost!.idempotencyKey],
        ["transfer", { to: "down" }, down!.idempotencyKey],
      ]),
    );
    expect(done.pendingInterrupts).toEqual([]);
    expect(done.turn?.finalText).toBe("Results: transfer -> sent to lost | transfer -> sent to down");
  });

  it("refuses reconcile on a read, and a reconcile that is not a function", () => {
    const { transfer } = bank();
    const define = (policy: unknown) =>
      aiSdkSession({
        name: "payments",
        model: new ScriptedLanguageModel(),
        tools: { transfer },
        policies: { transfer: policy as never },
      });
    expect(() => define({ effect: "read", reconcile: () => ({ status: "unknown" }) })).toThrow(PolicyError);
    expect(() => define({ effect: "idempotent_write", reconcile: 42 })).toThrow(/reconcile must be a function/);
  });
});

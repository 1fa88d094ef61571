/**
 * Pinning on Restate (core's rules, applied by the drive): a session pinned to one definition is
 * not run by an endpoint that serves another. Without a migration it waits, visibly, and its inbox
 * entries wait with it; with a migration from its fingerprint, the drive migrates it first (the
 * transform in a journaled step of its own) and then runs it. The suite's pinning scenarios need
 * workers picked by fingerprint, which Restate's routing (the latest deployment) does not do.
 */
import assert from "node:assert/strict";
import { defineSession, type SessionDefinition, SessionClient, type ToolPolicies } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterEach, describe, it } from "vitest";
import { RestateTestEnv, restateFromEnv } from "../src/testing/index.js";

const executions: { version: string; args: Record<string, unknown> }[] = [];
const policies: ToolPolicies = { refund: { effect: "non_idempotent_write" } };

/** v1's refund takes an order; v2's also a reason (a new schema: another fingerprint). */
function version(name: "v1" | "v2", migrations?: Parameters<typeof defineSession>[0]["migrations"]): SessionDefinition {
  const runner = new ScriptedRunner({
    tools: [
      {
        name: "refund",
        description: "Refunds an order.",
        parameters: name === "v1" ? { order_id: "string" } : { order_id: "string", reason: "string" },
        execute: (args) => {
          executions.push({ version: name, args });
          return `order ${String(args.order_id)} refunded by ${name}${args.reason ? ` (${String(args.reason)})` : ""}`;
        },
      },
    ],
  });
  return defineSession({ name: "pinned", runner, policies, ...(migrations ? { migrations } : {}) });
}

let env: RestateTestEnv | null = null;
afterEach(async () => {
  await env?.close();
  env = null;
  executions.length = 0;
});

/** A session of v1 waiting for approval, its v1 endpoint stopped. */
async function waitingOnV1(v1: SessionDefinition) {
  env = await new RestateTestEnv(restateFromEnv()).start();
  const worker = env.worker({
    store: env.store,
    definition: v1,
    pollIntervalMs: 25,
    leaseTtlMs: 5_000,
    concurrency: 16,
  });
  worker.start();
  const client = new SessionClient({ store: env.store });
  const { sessionId } = await client.startSession({ agent: "pinned", message: 'call refund {"order_id":"9"}' });
  const waiting = await client.waitUntilIdle(sessionId);
  assert.equal(waiting.status, "awaiting_approval");
  assert.equal(waiting.definition?.fingerprint, v1.fingerprint);
  await worker.stop();
  return { client, sessionId, interruptId: waiting.pendingInterrupts[0]!.interruptId, waiting };
}

describe("pinning on Restate", () => {
  it("an endpoint of another definition leaves the session waiting, visibly, with its decision unapplied", async () => {
    const v1 = version("v1");
    const v2 = version("v2");
    assert.notEqual(v1.fingerprint, v2.fingerprint);
    const { client, sessionId, interruptId, waiting } = await waitingOnV1(v1);
    env!.worker({ store: env!.store, definition: v2, pollIntervalMs: 25, leaseTtlMs: 5_000, concurrency: 16 }).start();
    await client.approve(sessionId, interruptId);
    const parked = await client.waitFor(sessionId, (s) => s.status === "waiting_for_definition");
    assert.equal(parked.definition?.fingerprint, v1.fingerprint);
    assert.equal(parked.definition?.waiting?.reason, "unserved");
    assert.equal(parked.unappliedDecisions, 1, "the approval is not applied to v2's tool");
    assert.deepEqual(parked.turn?.calls, waiting.turn?.calls, "nothing of the turn changed");
    assert.deepEqual(executions, []);
    const events = await client.readEvents(sessionId);
    assert.deepEqual(
      events.filter((e) => e.type === "definition_waiting").map((e) => e.data),
      [{ fingerprint: v1.fingerprint, reason: "unserved", error: null }],
    );
    assert.equal(events.filter((e) => e.type === "turn_failed").length, 0);
  });

  it("a migration from the session's fingerprint moves it to the new definition, then the turn finishes there", async () => {
    const v1 = version("v1");
    const v2 = version("v2", [
      {
        from: v1.fingerprint,
        transform: ({ head }) => {
          const withReason = (args: string) => JSON.stringify({ ...JSON.parse(args), reason: "migrated" });
          for (const call of head.turn?.calls ?? []) call.arguments = withReason(call.arguments);
          for (const interrupt of head.pendingInterrupts) interrupt.arguments = withReason(interrupt.arguments);
          return { head };
        },
      },
    ]);
    const { client, sessionId, interruptId } = await waitingOnV1(v1);
    env!.worker({ store: env!.store, definition: v2, pollIntervalMs: 25, leaseTtlMs: 5_000, concurrency: 16 }).start();
    await client.approve(sessionId, interruptId);
    const done = await client.waitFor(sessionId, (s) => s.status === "idle" && s.turn?.phase === "completed");
    assert.equal(done.definition?.fingerprint, v2.fingerprint);
    assert.equal(done.turn?.finalText, "Results: refund -> order 9 refunded by v2 (migrated)");
    assert.deepEqual(executions, [{ version: "v2", args: { order_id: "9", reason: "migrated" } }]);
    const events = await client.readEvents(sessionId);
    const at = (type: string) => events.findIndex((e) => e.type === type);
    assert.ok(at("definition_migrated") >= 0 && at("definition_migrated") < at("interrupt_resolved"));
    assert.deepEqual(
      events.filter((e) => e.type === "definition_migrated").map((e) => [e.data.from, e.data.to, e.data.migration]),
      [[v1.fingerprint, v2.fingerprint, "transform"]],
    );
  });
});

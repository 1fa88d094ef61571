/**
 * Crash tests with real processes: the engine's endpoint is a `node` child process
 * (`support/crash-endpoint.mjs`, the built package), killed with SIGKILL in the middle of a
 * single-attempt call, of a read and of a model call, then started again on the same port; and the
 * restate-server itself is killed and restarted in the middle of sessions. Every tool execution and
 * model call is in the endpoint's executions file (fsync'd), so each test first proves its kill
 * landed mid-call, then checks the invariants: no single-attempt call executed twice, no message or
 * decision lost or applied twice, every session ends.
 */
import assert from "node:assert/strict";
import { type SessionSnapshot, SessionClient } from "@durable-agents/core";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RestateSessionStore } from "../src/index.js";
import type { RestateServer } from "../src/testing/index.js";
import {
  type EndpointProcess,
  type EndpointRig,
  startEndpointRig,
  type Execution,
  interruptedCalls,
  readExecutions,
  singleAttemptRepeats,
  waitUntil,
} from "./support/crash-rig.js";

const singleAttemptTools = ["charge", "refund"];

let rig: EndpointRig;
let server: RestateServer;
let endpoint: EndpointProcess;
let client: SessionClient;
let store: RestateSessionStore;
const prefix = `crash${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  rig = await startEndpointRig("crash", prefix);
  ({ server, endpoint } = rig);
  store = new RestateSessionStore({ url: server.ingressUrl, prefix });
  client = new SessionClient({ store });
}, 60_000);

afterAll(async () => {
  await store?.close();
  await rig?.close();
});

const executions = () => readExecutions(endpoint.executions);
const mine = (sessionId: string, filter: Partial<Execution> = {}) =>
  executions().filter(
    (e) =>
      e.key?.startsWith(`${sessionId}/`) &&
      Object.entries(filter).every(([k, v]) => (e as unknown as Record<string, unknown>)[k] === v),
  );

/** Waits for the session's call (or model call) to start, kills the endpoint, proves the kill landed mid-call. */
async function killDuring(sessionId: string, filter: Partial<Execution>): Promise<Execution> {
  await waitUntil(
    `${JSON.stringify(filter)} of ${sessionId} to start`,
    () => mine(sessionId, { ...filter, event: "start" }).length > 0,
  );
  const started = mine(sessionId, { ...filter, event: "start" })[0]!;
  const pid = endpoint.pid!;
  await endpoint.kill();
  assert.ok(
    interruptedCalls(executions(), pid).some((e) => e.key === started.key),
    "the kill landed while the call was running",
  );
  return started;
}

const callOf = (snapshot: SessionSnapshot, name: string) => {
  const call = snapshot.turn?.calls.find((c) => c.name === name);
  assert.ok(call, `the turn has a ${name} call`);
  return call;
};

/** No single-attempt call was executed twice, over the whole run. */
function assertNoSingleAttemptTwice(): void {
  assert.deepEqual(
    [...singleAttemptRepeats(executions(), singleAttemptTools)],
    [],
    "single-attempt calls executed twice",
  );
}

describe("the crash invariants", () => {
  const e = (over: Partial<Execution>): Execution => ({ kind: "tool", event: "start", pid: 1, at: 0, ...over });
  it("catch a single-attempt call started twice, and only that", () => {
    const clean = [
      e({ tool: "charge", key: "s/t/c1" }),
      e({ tool: "lookup", key: "s/t/r1" }),
      e({ tool: "lookup", key: "s/t/r1", pid: 2 }),
    ];
    assert.equal(singleAttemptRepeats(clean, singleAttemptTools).size, 0, "a read may run twice");
    const broken = [...clean, e({ tool: "charge", key: "s/t/c1", pid: 2 })];
    assert.deepEqual([...singleAttemptRepeats(broken, singleAttemptTools)], [["s/t/c1", 2]]);
  });
  it("tell a call a kill interrupted from one that ended", () => {
    const log = [
      e({ key: "a" }),
      e({ key: "a", event: "end" }),
      e({ key: "b" }),
      e({ key: "b", pid: 2, event: "end" }),
    ];
    assert.deepEqual(
      interruptedCalls(log, 1).map((x) => x.key),
      ["b"],
    );
  });
});

describe("crashes of the endpoint process and of restate-server", () => {
  // Each test restarts the endpoint and waits up to 30 s for a session (twice in the steered one): a
  // test timeout above those waits, so a slow restart fails at the wait that names it.
  it("SIGKILL inside a single-attempt call: outcome_unknown, never executed again", async () => {
    const { sessionId } = await client.startSession({ agent: "crash", message: 'call charge {"amount":5}' });
    const started = await killDuring(sessionId, { tool: "charge" });
    await endpoint.start();
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 30_000 });
    assert.equal(callOf(done, "charge").status, "outcome_unknown");
    assert.match(done.turn?.finalText ?? "", /charge -> The outcome of this tool call is unknown/);
    assert.equal(mine(sessionId, { tool: "charge", event: "start" }).length, 1, "charged once");
    assert.equal(started.attempt, 1);
    assertNoSingleAttemptTwice();
  }, 90_000);

  it("SIGKILL inside a read: the read runs again, as attempt 2 with the same key", async () => {
    const { sessionId } = await client.startSession({ agent: "crash", message: 'call lookup {"id":"7"}' });
    const started = await killDuring(sessionId, { tool: "lookup" });
    await endpoint.start();
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 30_000 });
    const call = callOf(done, "lookup");
    assert.equal(call.status, "succeeded");
    assert.equal(call.attempts, 2, "the crashed attempt counts");
    const runs = mine(sessionId, { tool: "lookup", event: "start" });
    assert.deepEqual(
      runs.map((r) => [r.attempt, r.key]),
      [
        [1, started.key],
        [2, started.key],
      ],
    );
    assert.equal(done.turn?.finalText, 'Results: lookup -> lookup done for {"id":"7"}');
  }, 90_000);

  it("SIGKILL inside a model call: the call runs again and the turn ends", async () => {
    const { sessionId } = await client.startSession({ agent: "crash", message: "slow model, please" });
    await killDuring(sessionId, { kind: "model" });
    await endpoint.start();
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 30_000 });
    assert.equal(done.turn?.phase, "completed");
    assert.equal(done.turn?.finalText, "You said: slow model, please");
    const calls = mine(sessionId, { kind: "model", event: "start" });
    assert.equal(calls.length, 2, "one model call interrupted, one that answered");
    assert.notEqual(calls[0]!.pid, calls[1]!.pid);
    const failed = (await client.steps(sessionId)).filter((s) => s.step === "RunModel" && s.status === "failed");
    assert.equal(failed.length, 1, "the interrupted attempt is counted");
  }, 90_000);

  // Six endpoint restarts and waits of up to 90 s: a timeout above the default 30 s.
  it("a storm of SIGKILLs over sessions, messages and decisions: every invariant holds", async () => {
    let seed = Number(process.env.CRASH_SEED ?? 20_261_201);
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const scripts = [
      'call lookup {"id":"a"}\ncall charge {"amount":1}\nthen\ncall lookup {"id":"b"}',
      'slow model\ncall lookup {"id":"c"}\nthen\ncall charge {"amount":2}',
      'call refund {"amount":4}',
      'call charge {"amount":6}\ncall charge {"amount":7}',
    ];
    const sessions = await Promise.all(
      scripts.map(async (message) => (await client.startSession({ agent: "crash", message })).sessionId),
    );
    const before = executions().length;
    const followUps = new Map<string, string>();
    let kills = 0;
    let midCall = 0;
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200 + random() * 500));
      const pid = endpoint.pid!;
      await endpoint.kill();
      if (interruptedCalls(executions(), pid).length > 0) midCall += 1;
      kills += 1;
      // While the endpoint is down: a follow-up message (sent twice with one messageId) and, once, the approval.
      const target = sessions[i % sessions.length]!;
      const text = `follow-up ${i}`;
      followUps.set(target, text);
      const sends = [0, 1].map(() => client.sendMessage(target, text, { messageId: `storm-${i}` }));
      await endpoint.start();
      const [first, second] = await Promise.all(sends);
      assert.equal(first!.seq, second!.seq);
      if (i === 2) {
        const waiting = await client.waitFor(sessions[2]!, (s) => s.pendingInterrupts.length > 0, {
          timeoutMs: 30_000,
        });
        await client.approve(sessions[2]!, waiting.pendingInterrupts[0]!.interruptId);
      }
    }
    const sent = new Map<string, string[]>();
    for (let i = 0; i < 6; i++) {
      const target = sessions[i % sessions.length]!;
      sent.set(target, [...(sent.get(target) ?? []), `follow-up ${i}`]);
    }
    for (const [index, sessionId] of sessions.entries()) {
      const expected = [scripts[index]!, ...(sent.get(sessionId) ?? [])];
      const done = await client.waitFor(
        sessionId,
        (s) => s.status !== "running" && s.queuedMessages === 0 && s.turnCount === expected.length,
        { timeoutMs: 90_000 },
      );
      const users = done.messages.filter((m) => m.role === "user").map((m) => m.text);
      assert.deepEqual(users, expected, "every message applied once, in order");
      assert.notEqual(done.status, "running");
    }
    assertNoSingleAttemptTwice();
    const refunds = mine(sessions[2]!, { tool: "refund", event: "start" });
    assert.ok(refunds.length <= 1, "the approval was applied once");
    assert.ok(midCall >= 1, `at least one kill landed in the middle of a call (${midCall} of ${kills})`);
    console.info(
      `crash storm: ${kills} SIGKILLs, ${midCall} mid-call, ${executions().length - before} executions recorded, seed ${process.env.CRASH_SEED ?? 20_261_201}`,
    );
  }, 120_000);

  it("a steered message and a cancellation accepted just before a SIGKILL are each applied once", async () => {
    const { sessionId: steered } = await client.startSession({
      agent: "crash",
      message: 'call lookup {"id":"k1"}\nthen\ncall lookup {"id":"k2"}',
    });
    await waitUntil("the first lookup", () => mine(steered, { tool: "lookup", event: "start" }).length > 0);
    await client.steer(steered, "also check k3", { messageId: "steer-before-kill" });
    const pid = endpoint.pid!;
    await endpoint.kill();
    assert.ok(interruptedCalls(executions(), pid).length > 0, "the kill landed mid-call");
    await endpoint.start();
    const again = await client.steer(steered, "also check k3", { messageId: "steer-before-kill" });
    assert.equal(again.duplicate, true);
    const done = await client.waitUntilIdle(steered, { timeoutMs: 30_000 });
    assert.equal(done.turnCount, 1, "the steered message joined the running turn");
    assert.equal(done.messages.filter((m) => m.text === "also check k3").length, 1, "stored once");
    const joined = (await client.readEvents(steered)).filter((e) => e.type === "message_steered");
    assert.equal(joined.length, 1, "joined once");
    assert.match(done.turn?.finalText ?? "", /\(also: also check k3\)/);

    const { sessionId: cancelled } = await client.startSession({
      agent: "crash",
      message: 'call lookup {"id":"c1"}\nthen\ncall charge {"amount":8}',
    });
    await waitUntil("the lookup", () => mine(cancelled, { tool: "lookup", event: "start" }).length > 0);
    const accepted = await client.cancelTurn(cancelled, { requestId: "stop-before-kill", reason: "stop" });
    await endpoint.kill();
    await endpoint.start();
    const repeated = await client.cancelTurn(cancelled, { requestId: "stop-before-kill" });
    assert.deepEqual(repeated, { seq: accepted.seq, duplicate: true, turnId: "turn-1" });
    const ended = await client.waitUntilIdle(cancelled, { timeoutMs: 30_000 });
    assert.equal(ended.turn?.phase, "cancelled");
    const events = await client.readEvents(cancelled);
    assert.equal(events.filter((e) => e.type === "turn_cancelled").length, 1, "one receipt");
    assert.equal((await store.readInbox(cancelled, 0)).filter((e) => e.kind === "cancel").length, 1);
    assert.equal(mine(cancelled, { tool: "charge", event: "start" }).length, 0, "nothing ran after the cancellation");
  }, 90_000);

  // A restate-server restart and waits of up to 60 s: a timeout above the default 30 s.
  it("restate-server killed and restarted mid-session: nothing lost or applied twice, every session ends", async () => {
    const { sessionId: chain } = await client.startSession({
      agent: "crash",
      message: 'call lookup {"id":"r1"}\nthen\ncall charge {"amount":3}',
    });
    const { sessionId: approval } = await client.startSession({
      agent: "crash",
      message: 'call refund {"amount":2}',
    });
    const waiting = await client.waitUntilIdle(approval, { timeoutMs: 30_000 });
    assert.equal(waiting.status, "awaiting_approval");
    await waitUntil("the lookup to start", () => mine(chain, { tool: "lookup", event: "start" }).length > 0);
    await server.kill("SIGKILL");
    // While the server is down, a decision and a message are sent; the client retries until it is back.
    const approved = client.approve(approval, waiting.pendingInterrupts[0]!.interruptId);
    const sent = client.sendMessage(chain, "after the restart", { messageId: "after-restart" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await server.start();
    await approved;
    const first = await sent;
    const again = await client.sendMessage(chain, "after the restart", { messageId: "after-restart" });
    assert.equal(again.duplicate, true);
    assert.equal(again.seq, first.seq);

    const doneApproval = await client.waitUntilIdle(approval, { timeoutMs: 60_000 });
    assert.equal(callOf(doneApproval, "refund").status, "succeeded");
    assert.equal(mine(approval, { tool: "refund", event: "start" }).length, 1, "the approval was applied once");

    const doneChain = await client.waitFor(chain, (s) => s.turnCount === 2 && s.status === "idle", {
      timeoutMs: 60_000,
    });
    assert.equal(doneChain.turn?.phase, "completed");
    const users = doneChain.messages.filter((m) => m.role === "user").map((m) => m.text);
    assert.deepEqual(users, ['call lookup {"id":"r1"}\nthen\ncall charge {"amount":3}', "after the restart"]);
    assert.equal(mine(chain, { tool: "charge", event: "start" }).length, 1, "charged once");
    const lookups = mine(chain, { tool: "lookup", event: "start" });
    assert.ok(
      lookups.length >= 1 && lookups.length <= 2,
      `the read ran once or, interrupted, twice (${lookups.length})`,
    );
    assertNoSingleAttemptTwice();
    const events = await client.readEvents(chain);
    assert.deepEqual(
      events.map((e) => e.seq),
      events.map((_, i) => i + 1),
      "events keep their sequence numbers",
    );
  }, 120_000);
});

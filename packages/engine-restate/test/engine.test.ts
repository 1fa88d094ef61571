/**
 * The engine's own promises beyond core's suite: a session waiting for a person holds no Restate
 * invocation (the approval can come hours later); the store over the ingress refuses what the
 * engine does itself; setup mistakes are `ConfigurationError`s.
 */
import assert from "node:assert/strict";
import { ConfigurationError, defineSession, SessionClient, SessionNotFoundError } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RestateSessionStore, restateSessions, serviceNames } from "../src/index.js";
import { queryRestate, RestateTestEnv, restateFromEnv } from "../src/testing/index.js";
import type { InboxMeta } from "../src/protocol.js";
import { countCalls, followTurns } from "./support/ingress-spy.js";

let env: RestateTestEnv;
let client: SessionClient;
let executions = 0;

const runner = new ScriptedRunner({
  tools: [
    {
      name: "refund",
      description: "Refunds an order.",
      parameters: { order_id: "string" },
      execute: ({ order_id }) => {
        executions += 1;
        return `order ${String(order_id)} refunded`;
      },
    },
  ],
});
const definition = defineSession({ name: "engine", runner, policies: { refund: { effect: "non_idempotent_write" } } });

beforeAll(async () => {
  env = await new RestateTestEnv(restateFromEnv()).start();
  env.worker({ store: env.store, definition, pollIntervalMs: 25, leaseTtlMs: 5_000, concurrency: 16 }).start();
  client = new SessionClient({ store: env.store });
}, 60_000);

afterAll(async () => {
  await env?.close();
});

/** The session's drive invocations that have not completed. */
const openDrives = async (sessionId: string) =>
  (
    await queryRestate<{ n: number }>(
      restateFromEnv().adminUrl,
      `SELECT count(*) AS n FROM sys_invocation WHERE target_service_name = '${env.names.session}' AND target_handler_name = 'drive'
       AND target_service_key = '${sessionId}' AND status != 'completed'`,
    )
  )[0]!.n;

/** Whether a long poll waits in the session's inbox object for an entry after its last one. */
const longPollWaits = async (sessionId: string) => {
  const [row] = await queryRestate<{ value: string }>(
    restateFromEnv().adminUrl,
    `SELECT value_utf8 AS value FROM state WHERE service_name = '${env.names.inbox}'
     AND service_key = '${sessionId}' AND key = 'meta'`,
  );
  if (!row) return false;
  const meta = JSON.parse(row.value) as InboxMeta;
  return meta.watchers.some((watcher) => watcher.inboxSeq === meta.inboxSeq);
};

describe("the Restate engine", () => {
  it("holds no invocation while a session waits for approval; the decision starts a new drive", async () => {
    const { sessionId } = await client.startSession({ agent: "engine", message: 'call refund {"order_id":"9"}' });
    const waiting = await client.waitUntilIdle(sessionId);
    assert.equal(waiting.status, "awaiting_approval");
    // The drive that asked for the approval ended: nothing of the session runs or is suspended in Restate.
    const deadline = Date.now() + 10_000;
    while (Number(await openDrives(sessionId)) > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(Number(await openDrives(sessionId)), 0, "no drive invocation is open while the session waits");
    await client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
    const done = await client.waitUntilIdle(sessionId);
    assert.equal(done.turn?.finalText, "Results: refund -> order 9 refunded");
    assert.equal(executions, 1);
  });

  it("a follower of a running session gets its events with the status polls, without reading them", async () => {
    const { sessionId } = await client.startSession({ agent: "engine", message: 'call refund {"order_id":"F"}' });
    const waiting = await client.waitUntilIdle(sessionId);
    // A client of its own, whose requests are counted by handler.
    const store = new RestateSessionStore({ url: restateFromEnv().ingressUrl, prefix: env.prefix });
    const calls = countCalls(store);
    const follower = new SessionClient({ store });
    const after = (await follower.readEvents(sessionId, { limit: 10_000 })).at(-1)!.seq;
    calls.clear();
    const seen: string[] = [];
    const following = (async () => {
      for await (const event of follower.followEvents(sessionId, { after })) {
        seen.push(event.type);
        if (event.type === "turn_completed") return;
      }
    })();
    // The follower made its first read before the turn starts.
    while ((calls.get("events") ?? 0) === 0) await new Promise((r) => setTimeout(r, 5));
    await client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
    await following;
    await store.close();
    const all = (await client.readEvents(sessionId, { after, limit: 10_000 })).map((e) => e.type);
    assert.deepEqual(seen, all.slice(0, seen.length), "every event once, in order");
    assert.ok((calls.get("poll") ?? 0) >= 1, "the running session was polled");
    // The one events read is followEvents' first; every later event came with a poll's answer.
    assert.equal(calls.get("events") ?? 0, 1, `handlers called: ${JSON.stringify([...calls])}`);
  });

  it("a follower in the drive's own process follows back-to-back turns without polling the session", async () => {
    const { sessionId } = await client.startSession({ agent: "engine" });
    // A long poll interval: a poll of this store right after a long poll's answer (before the drive
    // that answer announces started here) would be counted below. A drive that starts here wakes the
    // store's wait at once, so the turns take no longer for it.
    const store = new RestateSessionStore({
      url: restateFromEnv().ingressUrl,
      prefix: env.prefix,
      minPollIntervalMs: 2_000,
    });
    const calls = countCalls(store);
    const turns = followTurns(new SessionClient({ store }), sessionId);
    const turn = async (text: string) => {
      const target = turns.completed() + 1;
      await client.sendMessage(sessionId, text);
      await turns.until(target);
    };
    await turn("first");
    // Count once the follower's long poll waits in the inbox object for the next entry: a long poll
    // sent while the first drive was ending may have been told to follow the drive, and then polls.
    const deadline = Date.now() + 30_000;
    while (!(await longPollWaits(sessionId)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(await longPollWaits(sessionId), "the follower's long poll waits for the next entry");
    calls.clear();
    for (let i = 0; i < 4; i++) await turn(`again ${i}`);
    const polls = calls.get("poll") ?? 0;
    await turns.stop();
    await store.close();
    const all = (await client.readEvents(sessionId, { limit: 10_000 })).map((e) => e.type);
    assert.deepEqual(turns.seen, all.slice(0, turns.seen.length), "every event once, in order");
    assert.equal(turns.completed(), 5);
    assert.equal(polls, 0, `handlers called during the four turns: ${JSON.stringify([...calls])}`);
  });

  it("the store over the ingress refuses commits and leases, which the engine does itself", async () => {
    await assert.rejects(() => env.store.commit(), ConfigurationError.isInstance);
    await assert.rejects(() => env.store.acquireLease(), ConfigurationError.isInstance);
    await assert.rejects(() => env.store.renewLease(), ConfigurationError.isInstance);
    await assert.rejects(() => env.store.releaseLease(), ConfigurationError.isInstance);
    assert.equal(await env.store.loadSession("no-such-session"), null);
    await assert.rejects(
      () => env.store.enqueue("no-such-session", { kind: "message", text: "hi", messageId: null }, null),
      SessionNotFoundError.isInstance,
    );
  });

  it("a store pointed at services that are not registered is a ConfigurationError", async () => {
    const store = new RestateSessionStore({ url: restateFromEnv().ingressUrl, prefix: "nobodyRegisteredThis" });
    await assert.rejects(() => store.loadSession("s-1"), ConfigurationError.isInstance);
    await store.close();
  });

  it("setup mistakes are ConfigurationErrors", () => {
    assert.throws(() => serviceNames("1-bad"), ConfigurationError.isInstance);
    assert.throws(
      () => restateSessions({ sessions: [], ingressUrl: "http://127.0.0.1:8080" }),
      ConfigurationError.isInstance,
    );
    assert.throws(
      () => restateSessions({ sessions: [definition, definition], ingressUrl: "http://127.0.0.1:8080" }),
      ConfigurationError.isInstance,
    );
    assert.throws(
      () => restateSessions({ sessions: [definition], ingressUrl: "restate:8080" }),
      ConfigurationError.isInstance,
    );
  });
});

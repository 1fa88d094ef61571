/**
 * Following a session whose drive runs in another process (a real endpoint child process, as in the
 * crash tests): the follower's store reads the session at most every `minPollIntervalMs`, and the
 * long poll's answer counts as one of those reads. So the poll of the drive a new entry starts
 * comes one interval after the long poll announced the entry, not at once (when it would mostly
 * find the drive not started yet), and the follower still sees every event once, in order.
 */
import assert from "node:assert/strict";
import { SessionClient } from "@durable-agents/core";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RestateSessionStore } from "../src/index.js";
import { type EndpointRig, startEndpointRig } from "./support/crash-rig.js";
import { countCalls, followTurns, onServiceAnswers } from "./support/ingress-spy.js";

let rig: EndpointRig;
const prefix = `follow${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  rig = await startEndpointRig("follow", prefix, 400);
}, 60_000);

afterAll(async () => {
  await rig?.close();
});

describe("a follower in another process than the drive", () => {
  it("reads the session at most every minPollIntervalMs, the long poll's answer included, and sees every event once", async () => {
    const interval = 150;
    const sender = new RestateSessionStore({ url: rig.server.ingressUrl, prefix });
    const client = new SessionClient({ store: sender });
    const { sessionId } = await client.startSession({ agent: "crash" });
    const store = new RestateSessionStore({ url: rig.server.ingressUrl, prefix, minPollIntervalMs: interval });
    // Every read of the session by the follower's store: a poll when it starts, a long poll when it answers.
    const reads: { kind: string; at: number }[] = [];
    countCalls(store, (handler) => {
      if (handler === "poll") reads.push({ kind: "poll", at: performance.now() });
    });
    onServiceAnswers(store, () => reads.push({ kind: "next", at: performance.now() }));
    const turns = followTurns(new SessionClient({ store }), sessionId);
    for (let turn = 1; turn <= 3; turn++) {
      await new Promise((r) => setTimeout(r, 300));
      await client.sendMessage(sessionId, `call lookup {"id":"${turn}"}`);
      await turns.until(turn);
    }
    await turns.stop();
    await store.close();
    await sender.close();
    const { seen } = turns;
    assert.equal(turns.completed(), 3);
    const all = (await client.readEvents(sessionId, { limit: 10_000 })).map((e) => e.type);
    assert.deepEqual(seen, all.slice(0, seen.length), "every event once, in order");
    const polls = reads.filter((r) => r.kind === "poll");
    assert.ok(polls.length >= 3, `the running turns were polled (${polls.length} polls)`);
    assert.ok(reads.filter((r) => r.kind === "next").length >= 3, "between turns the session was long-polled");
    // Each poll comes at least one interval after the store's read before it (timers may fire a
    // moment early against performance.now()).
    const gaps = polls
      .map((poll) => {
        const before = reads.filter((r) => r.at < poll.at && r !== poll).at(-1);
        return before ? { after: before.kind, ms: poll.at - before.at } : null;
      })
      .filter((gap) => gap !== null);
    const short = gaps.filter((gap) => gap.ms < interval - 5);
    assert.deepEqual(short, [], `polls sooner than ${interval} ms after the read before them`);
    assert.ok(
      gaps.some((gap) => gap.after === "next"),
      "some poll followed a long poll's answer (the turn's first)",
    );
  });
});

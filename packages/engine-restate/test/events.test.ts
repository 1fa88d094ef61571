/**
 * How the session object keeps events: one state entry per write (`e:<seq of its last event>`,
 * one event or an array of them), read back by seq from any cursor with any limit. A turn whose
 * model response asks for several tools at once writes many events in one transition; every page
 * read from every cursor must equal the same slice of the whole list, through `events` (what
 * `readEvents` calls) and through the follower's `poll`. While a drive runs, a transition's events
 * ride in the head's entry (its tail) until there are more than 16 or the meta is written alone:
 * a read in the middle of a turn must see them too, and once the drive ended they are in `e:`
 * entries.
 */
import assert from "node:assert/strict";
import { defineSession, type SessionEvent, SessionClient } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterAll, beforeAll, describe, it } from "vitest";
import { queryRestate, RestateTestEnv, restateFromEnv } from "../src/testing/index.js";

let env: RestateTestEnv;
let client: SessionClient;
/** The `hold` tool's calls wait until the test releases them. */
const held: (() => void)[] = [];

beforeAll(async () => {
  env = await new RestateTestEnv(restateFromEnv()).start();
  const runner = new ScriptedRunner({
    tools: [
      { name: "look_up", description: "Looks up.", parameters: { id: "string" }, execute: ({ id }) => `found ${id}` },
      {
        name: "hold",
        description: "Waits to be released.",
        parameters: {},
        execute: () => new Promise<string>((resolve) => held.push(() => resolve("released"))),
      },
    ],
  });
  const definition = defineSession({
    name: "events",
    runner,
    policies: { look_up: { effect: "read" }, hold: { effect: "read" } },
  });
  env.worker({ store: env.store, definition, pollIntervalMs: 25, leaseTtlMs: 5_000, concurrency: 16 }).start();
  client = new SessionClient({ store: env.store });
}, 60_000);

afterAll(async () => {
  await env?.close();
});

describe("events kept one entry per write", () => {
  it("reads every page from every cursor as the same slice of the whole list", async () => {
    const { sessionId } = await client.startSession({ agent: "events" });
    const calls = Array.from({ length: 20 }, (_, i) => `call look_up {"id":"${i}"}`).join("\n");
    await client.sendMessage(sessionId, calls);
    await client.waitUntilIdle(sessionId);
    const all: SessionEvent[] = [];
    for (;;) {
      const page = await env.store.readEvents(sessionId, all.length, 1000);
      if (page.length === 0) break;
      all.push(...page);
    }
    const last = (await env.store.loadSession(sessionId))!.lastEventSeq;
    assert.equal(all.length, last, "every event, once");
    assert.deepEqual(
      all.map((event) => event.seq),
      Array.from({ length: last }, (_, i) => i + 1),
      "in seq order, without a gap",
    );
    const types = new Map<string, number>();
    for (const event of all) types.set(event.type, (types.get(event.type) ?? 0) + 1);
    assert.ok(last > 40, `a long list (${last}: ${JSON.stringify([...types])})`);
    // Fewer entries than events, and some holding a full batch: the reads above crossed entries.
    const entries = await queryRestate<{ key: string; value: string }>(
      restateFromEnv().adminUrl,
      `SELECT key, value_utf8 AS value FROM state WHERE service_name = '${env.names.session}'
       AND service_key = '${sessionId}' AND key LIKE 'e:%'`,
    );
    const sizes = entries.map((entry) => {
      const value = JSON.parse(entry.value) as unknown;
      return Array.isArray(value) ? value.length : 1;
    });
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      last,
      "the entries hold every event once",
    );
    assert.ok(entries.length < last / 2, `${entries.length} entries for ${last} events`);
    assert.ok(sizes.includes(16), `an entry holds 16 events (${sizes.join(",")})`);
    for (const limit of [1, 2, 3, 7, 16, 17, 1000]) {
      for (let after = 0; after <= last; after++) {
        const page = await env.store.readEvents(sessionId, after, limit);
        assert.deepEqual(page, all.slice(after, after + limit), `after ${after}, limit ${limit}`);
      }
    }
    for (let after = 0; after <= last; after += 5) {
      const answer = await env.store.ingress.call<{ events: SessionEvent[] }>(env.names.session, sessionId, "poll", {
        after,
        limit: 10,
      });
      assert.deepEqual(answer.events, all.slice(after, after + 10), `poll after ${after}`);
    }
  }, 120_000);

  it("reads the events of a running turn, those in the head's tail included, and moves them into entries when the drive ends", async () => {
    const { sessionId } = await client.startSession({ agent: "events" });
    await client.sendMessage(sessionId, 'call look_up {"id":"a"}\nthen\ncall hold {}');
    const deadline = Date.now() + 30_000;
    while (held.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(held.length, 1, "the hold call runs");
    const state = async () => {
      const rows = await queryRestate<{ key: string; value: string }>(
        restateFromEnv().adminUrl,
        `SELECT key, value_utf8 AS value FROM state WHERE service_name = '${env.names.session}'
         AND service_key = '${sessionId}' AND (key LIKE 'e:%' OR key = 'head')`,
      );
      const inEntries = rows
        .filter((row) => row.key.startsWith("e:"))
        .reduce(
          (n, row) => n + (Array.isArray(JSON.parse(row.value)) ? (JSON.parse(row.value) as unknown[]).length : 1),
          0,
        );
      const head = JSON.parse(rows.find((row) => row.key === "head")!.value) as { $tail?: unknown[] };
      return { inEntries, tail: head.$tail?.length ?? 0 };
    };
    const last = (await env.store.loadSession(sessionId))!.lastEventSeq;
    const running = await state();
    assert.ok(running.tail > 0, `the running turn's last events are in the head's tail (${JSON.stringify(running)})`);
    assert.equal(running.inEntries + running.tail, last, "entries and tail hold every event once");
    const all = await env.store.readEvents(sessionId, 0, 1000);
    assert.deepEqual(
      all.map((event) => event.seq),
      Array.from({ length: last }, (_, i) => i + 1),
      "every event of the running session, in seq order",
    );
    assert.equal(all.at(-1)?.type, "step_started", "up to the hold call's start");
    for (const limit of [1, 2, 5, 1000]) {
      for (let after = 0; after <= last; after++) {
        const page = await env.store.readEvents(sessionId, after, limit);
        assert.deepEqual(page, all.slice(after, after + limit), `running: after ${after}, limit ${limit}`);
      }
    }
    const polled = await env.store.ingress.call<{ events: SessionEvent[] }>(env.names.session, sessionId, "poll", {
      after: last - 3,
      limit: 10,
    });
    assert.deepEqual(polled.events, all.slice(last - 3), "a poll reads the tail too");
    held.shift()!();
    await client.waitUntilIdle(sessionId);
    const ended = (await env.store.loadSession(sessionId))!.lastEventSeq;
    // The head keeps the tail it was last written with; the meta written at the drive's end is newer.
    assert.equal((await state()).inEntries, ended, "after the drive ended: every event in entries");
    const after = await env.store.readEvents(sessionId, 0, 1000);
    assert.deepEqual(after.slice(0, last), all, "the events read while it ran, unchanged");
    assert.equal(after.length, ended);
  }, 60_000);
});

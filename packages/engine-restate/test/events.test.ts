/**
 * How the session object keeps events: one state entry per write (`e:<seq of its last event>`,
 * one event or an array of them), read back by seq from any cursor with any limit. A turn whose
 * model response asks for several tools at once writes many events in one transition; every page
 * read from every cursor must equal the same slice of the whole list, through `events` (what
 * `readEvents` calls) and through the follower's `poll`.
 */
import assert from "node:assert/strict";
import { defineSession, type SessionEvent, SessionClient } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterAll, beforeAll, describe, it } from "vitest";
import { queryRestate, RestateTestEnv, restateFromEnv } from "../src/testing/index.js";

let env: RestateTestEnv;
let client: SessionClient;

beforeAll(async () => {
  env = await new RestateTestEnv(restateFromEnv()).start();
  const runner = new ScriptedRunner({
    tools: [
      { name: "look_up", description: "Looks up.", parameters: { id: "string" }, execute: ({ id }) => `found ${id}` },
    ],
  });
  const definition = defineSession({ name: "events", runner, policies: { look_up: { effect: "read" } } });
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
});

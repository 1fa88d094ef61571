/**
 * What Restate journals for a session: a drive's journal must not carry the history. The same turn
 * (model step, read, model step) is run once on a short history and once after the history grew by
 * a hundred kilobytes (after the same small turn both times, since the head carries the previous
 * turn), and the whole journal of the drive that ran it is read from `sys_journal` (the test keeps
 * the drives' journals with `journalRetention`): it is the same size both times, far below the
 * history's, because model steps read the history outside the journal.
 */
import assert from "node:assert/strict";
import { defineSession, SessionClient } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterAll, beforeAll, describe, it } from "vitest";
import { queryRestate, RestateTestEnv, restateFromEnv } from "../src/testing/index.js";

let env: RestateTestEnv;
let client: SessionClient;

beforeAll(async () => {
  env = await new RestateTestEnv({ ...restateFromEnv(), engineOptions: { journalRetention: { minutes: 10 } } }).start();
  const runner = new ScriptedRunner({
    tools: [{ name: "look_up", description: "Looks up.", parameters: { id: "string" }, execute: () => "found" }],
  });
  const definition = defineSession({ name: "journal", runner, policies: { look_up: { effect: "read" } } });
  env.worker({ store: env.store, definition, pollIntervalMs: 25, leaseTtlMs: 5_000, concurrency: 16 }).start();
  client = new SessionClient({ store: env.store });
}, 60_000);

afterAll(async () => {
  await env?.close();
});

/** The whole journal of the drive that ran one `call look_up` turn. */
async function journalOfTurn(
  sessionId: string,
): Promise<{ bytes: number; entries: number; steps: number; calls: number }> {
  // The head carries the previous turn: make it the same small one before each measurement.
  await client.sendMessage(sessionId, "ping");
  const { turnCount: before } = await client.waitUntilIdle(sessionId);
  await client.sendMessage(sessionId, 'call look_up {"id":"1"}');
  const { turnCount } = await client.waitFor(sessionId, (s) => s.turnCount === before + 1 && s.status === "idle");
  const [row] = await queryRestate<{ bytes: number; entries: number; calls: number }>(
    restateFromEnv().adminUrl,
    `SELECT i.id AS id, sum(j.raw_length) AS bytes, count(*) AS entries,
       sum(CASE WHEN j.entry_type IN ('Command: OneWayCall', 'Command: Call') THEN 1 ELSE 0 END) AS calls
     FROM sys_journal j JOIN sys_invocation i ON j.id = i.id
     WHERE i.target_service_name = '${env.names.session}' AND i.target_handler_name = 'drive' AND i.target_service_key = '${sessionId}'
     GROUP BY i.id, i.created_at ORDER BY i.created_at DESC LIMIT 1`,
  );
  if (process.env.JOURNAL_DEBUG) {
    const rows = await queryRestate(
      restateFromEnv().adminUrl,
      `SELECT j.index, j.entry_type, j.name, j.raw_length FROM sys_journal j WHERE j.id = '${(row as unknown as { id: string }).id}' ORDER BY j.index`,
    );
    console.log(rows.map((r) => `${r.index} ${r.entry_type} ${r.name} ${r.raw_length}`).join("\n"));
  }
  const steps = (await client.steps(sessionId)).filter((s) => s.turnId === `turn-${turnCount}`).length;
  return { bytes: Number(row!.bytes), entries: Number(row!.entries), steps, calls: Number(row!.calls) };
}

describe("the journal", () => {
  it("does not grow with the history: a turn journals the same bytes on a short and on a long history", async () => {
    const { sessionId } = await client.startSession({ agent: "journal" });
    const short = await journalOfTurn(sessionId);
    const filler = "x".repeat(2_000);
    for (let i = 0; i < 30; i++) {
      await client.sendMessage(sessionId, `${i} ${filler}`);
      await client.waitUntilIdle(sessionId);
    }
    const history = (await env.store.readHistory(sessionId)).reduce(
      (sum, item) => sum + JSON.stringify(item).length,
      0,
    );
    const long = await journalOfTurn(sessionId);
    assert.ok(history > 50_000, `the history grew to ${history} bytes`);
    assert.equal(short.steps, 4, "RunModel, CallTool, ResumeTurn, RunModel");
    assert.equal(long.entries, short.entries, "the same entries");
    // No invocation per step or per wait: the drive's one message is its end, to the inbox object.
    assert.equal(short.calls, 1, "one call or send in the drive's journal");
    assert.equal(long.calls, 1, "one call or send in the drive's journal");
    assert.ok(
      long.bytes <= short.bytes * 1.05 + 100,
      `journal bytes stay flat: ${short.bytes} on a short history, ${long.bytes} on ${history} bytes of history`,
    );
    assert.ok(long.bytes < history / 10, `the journal (${long.bytes} bytes) holds no history (${history} bytes)`);
  }, 120_000);
});

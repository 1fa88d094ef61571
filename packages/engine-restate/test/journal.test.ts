/**
 * What Restate journals for a session: a drive's journal must not carry the history. The same turn
 * (a model step, a read, a model step) is measured while its read is running, once on a short
 * history and once after the history grew by tens of kilobytes: the journal of the drive stays the
 * same size, far below the history's, because model steps read the history outside the journal.
 */
import assert from "node:assert/strict";
import { defineSession, SessionClient } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterAll, beforeAll, describe, it } from "vitest";
import { queryRestate, RestateTestEnv, restateFromEnv } from "../src/testing/index.js";
import { waitUntil } from "./support/crash-rig.js";

let env: RestateTestEnv;
let client: SessionClient;
let release: (() => void) | null = null;
let started = 0;

beforeAll(async () => {
  env = await new RestateTestEnv(restateFromEnv()).start();
  const runner = new ScriptedRunner({
    tools: [
      {
        name: "gate",
        description: "Waits until the test opens it.",
        parameters: { id: "string" },
        execute: async () => {
          started += 1;
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return "opened";
        },
      },
    ],
  });
  const definition = defineSession({ name: "journal", runner, policies: { gate: { effect: "read" } } });
  env.worker({ store: env.store, definition, pollIntervalMs: 25, leaseTtlMs: 5_000, concurrency: 16 }).start();
  client = new SessionClient({ store: env.store });
}, 60_000);

afterAll(async () => {
  await env?.close();
});

/** The journal of the session's running drive, while its `gate` call runs. */
async function journalDuringTurn(sessionId: string): Promise<{ bytes: number; entries: number }> {
  // The head carries the previous turn: make it the same small one before each measurement.
  await client.sendMessage(sessionId, "ping");
  await client.waitUntilIdle(sessionId);
  const before = started;
  await client.sendMessage(sessionId, `call gate {"id":"${before}"}`);
  await waitUntil("the gate call to start", () => started > before);
  const [row] = await queryRestate<{ bytes: number; entries: number }>(
    restateFromEnv().adminUrl,
    `SELECT sum(j.raw_length) AS bytes, count(*) AS entries FROM sys_journal j JOIN sys_invocation i ON j.id = i.id
     WHERE i.target_service_name = '${env.names.engine}' AND i.target_service_key = '${sessionId}' AND i.status != 'completed'`,
  );
  if (process.env.JOURNAL_DEBUG) {
    const rows = await queryRestate(
      restateFromEnv().adminUrl,
      `SELECT j.index, j.entry_type, j.name, j.raw_length, j.entry_lite_json FROM sys_journal j JOIN sys_invocation i ON j.id = i.id
     WHERE i.target_service_name = '${env.names.engine}' AND i.target_service_key = '${sessionId}' AND i.status != 'completed' ORDER BY j.index`,
    );
    console.log(rows.map((r) => `${r.index} ${r.entry_type} ${r.name} ${r.raw_length}`).join("\n"));
  }
  release!();
  await client.waitUntilIdle(sessionId);
  return { bytes: Number(row!.bytes), entries: Number(row!.entries) };
}

describe("the journal", () => {
  it("does not grow with the history: a turn journals the same bytes on a short and on a long history", async () => {
    const { sessionId } = await client.startSession({ agent: "journal" });
    const short = await journalDuringTurn(sessionId);
    const filler = "x".repeat(1_000);
    for (let i = 0; i < 30; i++) {
      await client.sendMessage(sessionId, `${i} ${filler}`);
      await client.waitUntilIdle(sessionId);
    }
    const history = (await env.store.readHistory(sessionId)).reduce(
      (sum, item) => sum + JSON.stringify(item).length,
      0,
    );
    const long = await journalDuringTurn(sessionId);
    assert.ok(history > 50_000, `the history grew to ${history} bytes`);
    assert.equal(long.entries, short.entries, "the same turn journals the same entries");
    assert.ok(
      long.bytes <= short.bytes * 1.1 + 200,
      `journal bytes stay flat: ${short.bytes} on a short history, ${long.bytes} on ${history} bytes of history`,
    );
    assert.ok(long.bytes < history / 10, `the journal (${long.bytes} bytes) holds no history (${history} bytes)`);
  }, 120_000);
});

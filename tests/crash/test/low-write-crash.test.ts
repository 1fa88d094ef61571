/**
 * The crash suite with store-postgres's opt-in low-write settings: the stores write compressed heads
 * (`compressHeads: true`) and the workers hold a model's result for its reads (core's
 * `readToolHoldMs`). Worker processes are SIGKILLed at random moments, as in crash.test.ts, and every
 * invariant is checked from the database, with the one allowance the hold makes: a read call may
 * have one run its committed attempts do not list, in a worker that was killed (invariants.ts,
 * `readsMayRunUncounted`).
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@durable-agents/store-postgres/testing";
import { expectNoViolations, runAndReport } from "./support/run.js";

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe("worker processes killed with SIGKILL, compressed heads and reads held", () => {
  it("every session ends and every guarantee holds but the hold's one uncounted read run", async () => {
    const result = await runAndReport("low-write crash", {
      databaseUrl: database.connectionString,
      sessions: 60,
      workers: 3,
      kills: 12,
      spreadMs: 12_000,
      seed: 23,
      leaseTtlMs: 1500,
      readToolHoldMs: 60,
      compressHeads: true,
      timeoutMs: 100_000,
    });
    expectNoViolations(result);
    expect(result.counts.kills).toBeGreaterThanOrEqual(9);
    expect(result.stats.sessions).toBe(60);
    expect(result.stats.turnsCompleted + result.stats.turnsFailed + result.stats.turnsCancelled).toBe(
      result.counts.turns,
    );
    expect(result.stats.killsMidCall).toBeGreaterThan(0);
    expect(result.stats.recoveries).toBeGreaterThan(0);
    // The hold was in play: reads whose model result went in the read's own commit.
    expect(result.stats.readResultsHeld).toBeGreaterThan(0);
    // Every session's head is stored compressed (head_z), none as json.
    const pool = new pg.Pool({ connectionString: database.connectionString, max: 1 });
    try {
      const { rows } = await pool.query<{ z: string; json: string }>(
        "SELECT count(*) FILTER (WHERE head_z IS NOT NULL) AS z, count(*) FILTER (WHERE head IS NOT NULL) AS json FROM durable_agents.sessions",
      );
      expect(Number(rows[0]!.z)).toBe(60);
      expect(Number(rows[0]!.json)).toBe(0);
    } finally {
      await pool.end();
    }
  }, 150_000);
});

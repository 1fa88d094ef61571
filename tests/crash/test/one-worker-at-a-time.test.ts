/**
 * Four worker processes share 200 sessions. The tools record the worker pid and the time window of
 * every execution; for each session, no two executions by different workers overlap, every
 * execution ran an attempt whose start was committed first, and the events are in an order one
 * worker at a time could have written (commit fencing). All four workers did work.
 */
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

describe("four workers, two hundred sessions", () => {
  it("each session is advanced by one worker at a time, and all four work", async () => {
    const result = await runAndReport("one-at-a-time", {
      databaseUrl: database.connectionString,
      sessions: 200,
      workers: 4,
      kills: 0,
      spreadMs: 6000,
      seed: 37,
      // A lease outlives a stall of a loaded machine; the test is about sharing, not crashes.
      leaseTtlMs: 3000,
      timeoutMs: 100_000,
      requireFinishedExecutions: true,
    });
    expectNoViolations(result);
    expect(result.counts.workersStarted).toBe(4);
    const perWorker = result.stats.executionsPerWorker;
    expect(Object.keys(perWorker)).toHaveLength(4);
    for (const life of result.workers) expect(perWorker[life.pid] ?? 0).toBeGreaterThan(0);
    // Sessions moved between workers, so the overlap check compared different processes.
    expect(result.stats.sessionsOnSeveralWorkers).toBeGreaterThan(0);
    expect(result.stats.executionsWithoutEnd).toBe(0);
    // Nobody crashed, so no worker ever took over a call another one had left running.
    expect(result.stats.recoveries, "session_recovered events in a run without crashes").toBe(0);
  }, 150_000);
});

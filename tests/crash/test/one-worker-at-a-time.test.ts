/**
 * Four worker processes share 200 sessions. The tools record the worker pid and the time window of
 * every execution; for each session, no two executions by different workers overlap, every
 * execution ran an attempt whose start was committed first, and the events are in an order one
 * worker at a time could have written (commit fencing). All four workers did work.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@durable-agents/store-postgres/testing";
import type { ExecutionRow } from "../src/index.js";
import { expectNoViolations, runAndReport } from "./support/run.js";

/**
 * The most workers that had a tool execution running at one moment: more than one shows that the
 * workers really ran side by side (the race for the sessions was on), not one after another.
 */
function mostWorkersRunningAtOnce(executions: readonly ExecutionRow[]): number {
  const edges = executions.flatMap((e) =>
    e.finishedAt === null
      ? []
      : [
          { at: e.startedAt, pid: e.workerPid, step: 1 },
          { at: e.finishedAt, pid: e.workerPid, step: -1 },
        ],
  );
  // Ends before starts at the same millisecond: executions that only touch do not count as overlapping.
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  const running = new Map<number, number>();
  let most = 0;
  for (const edge of edges) {
    const now = (running.get(edge.pid) ?? 0) + edge.step;
    if (now === 0) running.delete(edge.pid);
    else running.set(edge.pid, now);
    most = Math.max(most, running.size);
  }
  return most;
}

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
      // A worker keeps an idle session's lease for its next message (lingerMs), so with the default
      // most sessions stay on one worker for the whole run; without it every turn's lease is up for
      // grabs again, and the sessions move between the workers the overlap check compares.
      lingerMs: 0,
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
    // The workers ran at the same time: at some moment several of them were executing tools.
    expect(mostWorkersRunningAtOnce(result.data.executions), "workers executing at one moment").toBeGreaterThan(1);
    expect(result.stats.executionsWithoutEnd).toBe(0);
    // Nobody crashed, so no worker ever took over a call another one had left running.
    expect(result.stats.recoveries, "session_recovered events in a run without crashes").toBe(0);
  }, 150_000);
});

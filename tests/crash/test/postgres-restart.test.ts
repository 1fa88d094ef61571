/**
 * PostgreSQL restarts (three times) while worker processes run sessions. Every connection of the workers,
 * the tools and the client drops; the invariants of the crash suite must hold all the same.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startPostgres, type PostgresServer } from "@durable-agents/store-postgres/testing";
import { expectNoViolations, runAndReport } from "./support/run.js";

// This file restarts PostgreSQL, so it runs a private server instead of the shared one.
let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe("PostgreSQL restarts under running sessions", () => {
  it("every invariant holds after the restarts", async () => {
    const database = await createTestDatabase(server.connectionString);
    const result = await runAndReport("restart", {
      databaseUrl: database.connectionString,
      server,
      sessions: 60,
      workers: 3,
      kills: 0,
      restarts: 3,
      spreadMs: 12_000,
      seed: 23,
      timeoutMs: 100_000,
    });
    expectNoViolations(result);
    expect(result.counts.restarts).toBe(3);
    // The restarts were felt: clients retried, or workers reported dropped connections.
    const workerErrors = Object.values(result.counts.workerErrors).reduce((a, b) => a + b, 0);
    expect(result.counts.transientClientErrors + workerErrors).toBeGreaterThan(0);
    expect(result.stats.turnsCompleted + result.stats.turnsFailed + result.stats.turnsCancelled).toBe(
      result.counts.turns,
    );
  }, 150_000);
});

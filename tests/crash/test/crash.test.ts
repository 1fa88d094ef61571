/**
 * The crash suite: 80 sessions on 3 worker processes, SIGKILLed at random moments (16 kills spread
 * over the run's progress, each replaced at once), approvals and rejections sent as interrupts
 * appear. Every invariant is then checked from the database.
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

describe("worker processes killed with SIGKILL", () => {
  it("every session ends, no call runs more often than its effect allows, nothing is lost or applied twice", async () => {
    const result = await runAndReport("crash", {
      databaseUrl: database.connectionString,
      sessions: 80,
      workers: 3,
      kills: 16,
      spreadMs: 16_000,
      seed: 11,
      leaseTtlMs: 1500,
      timeoutMs: 100_000,
    });
    expectNoViolations(result);
    expect(result.counts.kills).toBeGreaterThanOrEqual(12);
    expect(result.stats.sessions).toBe(80);
    expect(result.stats.turnsCompleted + result.stats.turnsFailed + result.stats.turnsCancelled).toBe(
      result.counts.turns,
    );
    // The scripts make some turns fail on purpose; they must fail explicitly, the rest complete.
    expect(result.stats.turnsFailed + result.stats.scriptedFailuresCancelled).toBe(
      result.plan.flatMap((s) => s.turns).filter((t) => t.failsModel).length,
    );
    // The kills hit running work: workers died inside tool calls, and later workers took over
    // calls the killed ones had started.
    expect(result.stats.killsMidCall).toBeGreaterThan(0);
    expect(result.stats.recoveries).toBeGreaterThan(0);
    // Cancellations happened while turns ran and while they waited for approval; the late decisions
    // were refused, the duplicate requests answered as duplicates (the invariants check the rest).
    expect(result.stats.turnsCancelled).toBeGreaterThan(0);
    expect(result.counts.cancelsAcceptedWhileRunning).toBeGreaterThan(0);
    expect(result.counts.cancelsAcceptedAtApproval).toBeGreaterThan(0);
    expect(result.counts.lateDecisionsRefused + result.counts.lateDecisionsRefusedNotFound).toBeGreaterThan(0);
    expect(result.counts.duplicateCancelsAnswered).toBeGreaterThan(0);
    expect(result.stats.receiptCalls.cancelled ?? 0).toBeGreaterThan(0);
    expect(result.counts.approvalsSent).toBeGreaterThan(0);
    expect(result.counts.rejectionsSent).toBeGreaterThan(0);
    expect(result.stats.executionsPerTool.non_idempotent_write).toBeGreaterThan(0);
    expect(result.stats.executionsPerTool.non_idempotent_write_auto).toBeGreaterThan(0);
    // Reconciliation: the tools with reconcile were checked, and a check that found a call not done
    // sent it round again (the invariants check that found-done calls never ran again, and that a
    // single-attempt call ran again only after its new approval).
    expect(result.stats.executionsPerTool.idempotent_write_checked).toBeGreaterThan(0);
    expect(result.stats.executionsPerTool.non_idempotent_write_checked).toBeGreaterThan(0);
    expect(result.stats.reconciled.not_done ?? 0).toBeGreaterThan(0);
    expect(result.stats.offeredAgain).toBeGreaterThan(0);
    expect(result.stats.attentionRaised).toBeGreaterThan(0);
  }, 150_000);
});

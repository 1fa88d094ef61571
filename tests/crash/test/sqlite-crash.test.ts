/**
 * The crash suite on SQLite: 60 sessions on 2 worker processes that share ONE store file, SIGKILLed
 * 18 times (each replaced at once). The kills are aimed in turn at a worker inside a tool call, at
 * a worker found inside a write transaction (its transaction record read just before the signal),
 * and at a worker asked to stop inside its next write transaction just before COMMIT; where each
 * worker really died is read from the record it left. The invariants of the PostgreSQL suite are
 * checked from the file, `PRAGMA integrity_check` runs after every kill and once more at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { sqliteIntegrityCheck } from "../src/index.js";
import { expectNoViolations, runAndReport } from "./support/run.js";

let temp: ReturnType<typeof tempStoreDir>;
beforeAll(() => {
  temp = tempStoreDir("durable-agents-crash-sqlite-");
});
afterAll(() => {
  temp?.remove();
});

describe("worker processes on one SQLite file, killed with SIGKILL", () => {
  it("every session ends, no call runs more often than its effect allows, nothing is lost or applied twice, the file stays sound", async () => {
    const path = temp.file("sessions.db");
    const kills = 18;
    const result = await runAndReport("sqlite-crash", {
      sqlitePath: path,
      sessions: 60,
      workers: 2,
      kills,
      spreadMs: 12_000,
      seed: 41,
      leaseTtlMs: 1500,
      timeoutMs: 100_000,
    });
    expectNoViolations(result);
    expect(result.store.kind).toBe("sqlite");
    // The file the workers were killed over is sound, after each kill and at the end.
    expect(sqliteIntegrityCheck(path)).toEqual(["ok"]);
    expect(result.store.figures.integrityChecksOk).toBe(result.counts.kills);

    expect(result.counts.kills).toBeGreaterThanOrEqual(12);
    expect(result.stats.sessions).toBe(60);
    expect(result.stats.turnsCompleted + result.stats.turnsFailed + result.stats.turnsCancelled).toBe(
      result.counts.turns,
    );
    expect(result.stats.turnsFailed + result.stats.scriptedFailuresCancelled).toBe(
      result.plan.flatMap((s) => s.turns).filter((t) => t.failsModel).length,
    );
    // Kills landed inside tool calls, and other workers took over what the dead ones had running.
    expect(result.stats.killsMidCall).toBeGreaterThan(0);
    expect(result.stats.recoveries).toBeGreaterThan(0);
    // Kills landed inside write transactions: the dead workers' own records say so. A worker asked
    // to pause always dies there (deterministic); the ones found mid-transaction may have moved on
    // by the time the signal arrived, so only their sum is bounded below.
    const diedIn = result.store.figures.killsDiedIn;
    expect(diedIn.paused ?? 0).toBe(result.store.figures.pausesReached);
    expect(result.store.figures.pausesReached).toBeGreaterThan(0);
    // A paused worker died holding rows its transaction had changed and not committed.
    expect(result.store.figures.pausesWithUncommittedRows).toBeGreaterThan(0);
    expect((diedIn.paused ?? 0) + (diedIn.open ?? 0) + (diedIn.committing ?? 0)).toBeGreaterThanOrEqual(3);
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
    // The tools with reconcile were checked (the invariants check what the checks led to).
    expect(Object.values(result.stats.reconciled).reduce((sum, n) => sum + n, 0)).toBeGreaterThan(0);
  }, 150_000);
});

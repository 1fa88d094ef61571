/**
 * Runs `bench --quick` as a child process (the built dist/main.js, on a private PostgreSQL) and
 * checks that it produced every figure: benchmarks are not timed tests, so no target is asserted.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { BenchResults } from "../src/report.js";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const main = join(packageDir, "dist", "main.js");

const isFigure = (value: unknown) => typeof value === "number" && Number.isFinite(value);

describe("pnpm bench --quick", () => {
  it("runs every phase in one run and writes every figure as JSON", () => {
    expect(existsSync(main), "build the package first (pnpm --filter @durable-agents/bench build)").toBe(true);
    const dir = mkdtempSync(join(tmpdir(), "durable-agents-bench-"));
    const out = join(dir, "quick.json");
    try {
      const run = spawnSync(process.execPath, [main, "--quick", "--out", out], { encoding: "utf8", timeout: 170_000 });
      expect(run.status, `bench --quick failed:\n${run.stderr}\n${run.stdout}`).toBe(0);
      const r = JSON.parse(readFileSync(out, "utf8")) as BenchResults;

      expect(r.mode).toBe("quick");
      expect(r.machine.cores).toBeGreaterThan(0);
      expect(r.machine.cpuModel.length).toBeGreaterThan(0);
      expect(r.machine.memoryGiB).toBeGreaterThan(0);
      expect(r.machine.node).toMatch(/^v\d+\./);
      expect(r.postgres.version).toMatch(/^\d+/);
      expect(r.postgres.synchronousCommit).toBe("on");

      const stepsPerPhase = r.workload.sessions * r.workload.turnsPerSession * r.workload.stepsPerTurn;
      expect(r.workload.stepsPerTurn).toBe(2 * r.workload.toolCallsPerTurn + 1);
      for (const phase of [r.overhead.rawSdk, r.overhead.memory, r.overhead.postgres]) {
        expect(phase.steps).toBe(stepsPerPhase);
        for (const value of [phase.medianMs, phase.p99Ms, phase.meanMs]) expect(value).toBeGreaterThan(0);
        expect(phase.p99Ms).toBeGreaterThanOrEqual(phase.medianMs);
      }
      for (const value of Object.values(r.overhead.ratios)) expect(isFigure(value) && value > 0).toBe(true);

      expect(r.floor.singleRowWrite.n).toBeGreaterThan(0);
      expect(r.floor.singleRowWrite.median).toBeGreaterThan(0);
      expect(r.floor.singleRowWrite.walBytesPerWrite).toBeGreaterThan(0);
      expect(isFigure(r.floor.postgresStepToWrite)).toBe(true);
      // Each step commits at least once on PostgreSQL, and writes WAL.
      expect(r.floor.writeTransactionsPerStep).toBeGreaterThanOrEqual(1);
      expect(r.floor.walBytesPerStep).toBeGreaterThan(0);

      for (const levels of [r.growth.memory, r.growth.postgres, r.growth.rawSdkReference]) {
        expect(levels.map((l) => l.historyItems)).toEqual([10, 100, 1000]);
        for (const level of levels) {
          expect(level.steps).toBe(level.sessions * r.workload.stepsPerTurn);
          expect(level.medianMs).toBeGreaterThan(0);
          expect(level.p99Ms).toBeGreaterThanOrEqual(level.medianMs);
        }
      }
      for (const level of [...r.growth.memory, ...r.growth.postgres]) {
        expect(level.bytesPerStep).toBeGreaterThan(0);
        expect(level.writesPerStep).toBeGreaterThan(0);
        expect(isFigure(level.overheadMs)).toBe(true);
        expect(level.outsideRunnerMs).toBeGreaterThan(0);
      }

      expect(r.growth.modelStep.map((p) => p.historyItems)).toEqual([10, 100, 1000]);
      for (const p of r.growth.modelStep) {
        for (const value of [p.adapterFirstStepMs, p.adapterResumedStepMs, p.rawModelCallMs, p.runStateChars]) expect(value).toBeGreaterThan(0);
      }

      expect(r.throughput.runs.map((t) => t.processes)).toEqual([1, 2, 4]);
      expect(r.throughput.allRuns).toHaveLength(3 * r.throughput.rounds);
      for (const t of r.throughput.runs) {
        expect(t.steps).toBe(t.sessions * r.throughput.turnsPerSession * r.workload.stepsPerTurn);
        expect(t.stepsPerSecond).toBeGreaterThan(0);
      }
      expect(isFigure(r.throughput.speedup2) && isFigure(r.throughput.speedup4)).toBe(true);

      expect(r.events.paced.chunks).toBeGreaterThan(1);
      for (const events of [r.events.memory, r.events.postgres, r.events.paced.memory, r.events.paced.postgres]) {
        expect(events.n).toBeGreaterThan(0);
        expect(events.p50Ms).toBeGreaterThan(0);
        expect(events.p99Ms).toBeGreaterThanOrEqual(events.p50Ms);
      }

      expect(r.targets).toHaveLength(13);
      for (const target of r.targets) {
        expect(isFigure(target.value)).toBe(true);
        expect(run.stdout).toContain(target.name);
      }
      expect(run.stdout).toMatch(/\| (met|MISSED) +\|/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

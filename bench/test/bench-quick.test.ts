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
      const run = spawnSync(process.execPath, [main, "--quick", "--out", out], { encoding: "utf8", timeout: 230_000 });
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
      expect(r.sqlite.version).toMatch(/^3\./);
      expect(r.sqlite.journalMode).toBe("wal");
      expect(r.sqlite.pageSize).toBeGreaterThan(0);
      expect(r.sqlite.watchIntervalMs).toBeGreaterThan(0);
      for (const phase of [
        r.overhead.rawSdk,
        r.overhead.memory,
        r.overhead.postgres,
        r.overhead.sqlite,
        r.overhead.sqliteNormal,
      ]) {
        expect(phase.steps).toBe(stepsPerPhase);
        for (const value of [phase.medianMs, phase.p99Ms, phase.meanMs]) expect(value).toBeGreaterThan(0);
        expect(phase.p99Ms).toBeGreaterThanOrEqual(phase.medianMs);
        // A step costs this process some CPU; no more than its whole wall time on both cores.
        expect(phase.cpuMsPerStep).toBeGreaterThan(0);
        expect(phase.cpuMsPerStep).toBeLessThan((2 * phase.wallMs) / phase.steps);
      }
      for (const value of Object.values(r.overhead.ratios)) expect(isFigure(value) && value > 0).toBe(true);

      expect(r.floor.singleRowWrite.n).toBeGreaterThan(0);
      expect(r.floor.singleRowWrite.median).toBeGreaterThan(0);
      expect(r.floor.singleRowWrite.walBytesPerWrite).toBeGreaterThan(0);
      expect(isFigure(r.floor.postgresStepToWrite)).toBe(true);
      // Each step commits at least once on PostgreSQL, and writes WAL.
      expect(r.floor.writeTransactionsPerStep).toBeGreaterThanOrEqual(1);
      expect(r.floor.walBytesPerStep).toBeGreaterThan(0);

      // store-sqlite's floor: single-row writes to the same file, FULL and NORMAL; the ratios follow.
      for (const [floor, synchronous] of [
        [r.sqliteFloor.full, "full"],
        [r.sqliteFloor.normal, "normal"],
      ] as const) {
        expect(floor.synchronous).toBe(synchronous);
        expect(floor.n).toBeGreaterThan(0);
        expect(floor.median).toBeGreaterThan(0);
        expect(floor.p99).toBeGreaterThanOrEqual(floor.median);
      }
      expect(r.sqliteFloor.fullStepToWrite).toBeCloseTo(r.overhead.sqlite.medianMs / r.sqliteFloor.full.median, 6);
      expect(r.sqliteFloor.normalStepToWrite).toBeCloseTo(
        r.overhead.sqliteNormal.medianMs / r.sqliteFloor.normal.median,
        6,
      );
      expect(r.sqliteFloor.normalStepToFullWrite).toBeCloseTo(
        r.overhead.sqliteNormal.medianMs / r.sqliteFloor.full.median,
        6,
      );

      for (const levels of [r.growth.memory, r.growth.postgres, r.growth.sqlite, r.growth.rawSdkReference]) {
        expect(levels.map((l) => l.historyItems)).toEqual([10, 100, 1000]);
        for (const level of levels) {
          expect(level.steps).toBe(level.sessions * r.workload.stepsPerTurn);
          expect(level.medianMs).toBeGreaterThan(0);
          expect(level.p99Ms).toBeGreaterThanOrEqual(level.medianMs);
        }
      }
      for (const level of [...r.growth.memory, ...r.growth.postgres, ...r.growth.sqlite]) {
        expect(level.bytesPerStep).toBeGreaterThan(0);
        expect(level.writesPerStep).toBeGreaterThan(0);
        expect(isFigure(level.overheadMs)).toBe(true);
        expect(level.outsideRunnerMs).toBeGreaterThan(0);
      }
      // store-sqlite's bytes are whole WAL frames (a page and a 24-byte header each), at least one
      // transaction per step.
      for (const level of r.growth.sqlite) {
        expect((level.bytesPerStep! * level.steps) % (r.sqlite.pageSize + 24)).toBe(0);
        expect(level.writesPerStep).toBeGreaterThanOrEqual(1);
      }

      expect(r.growth.modelStep.map((p) => p.historyItems)).toEqual([10, 100, 1000]);
      for (const p of r.growth.modelStep) {
        for (const value of [p.adapterFirstStepMs, p.adapterResumedStepMs, p.rawModelCallMs, p.runStateChars])
          expect(value).toBeGreaterThan(0);
      }

      expect(r.throughput.runs.map((t) => t.processes)).toEqual([1, 2, 4]);
      expect(r.throughput.sqlite.runs.map((t) => t.processes)).toEqual([1, 2, 4]);
      expect(r.throughput.scripted.runs.map((t) => t.processes)).toEqual([1, 2, 4]);
      expect(r.throughput.allRuns).toHaveLength(3 * 3 * r.throughput.rounds);
      expect(r.throughput.runs.every((t) => t.store === "postgres" && t.runner === "sdk")).toBe(true);
      expect(r.throughput.sqlite.runs.every((t) => t.store === "sqlite" && t.runner === "sdk")).toBe(true);
      expect(r.throughput.scripted.runs.every((t) => t.store === "postgres" && t.runner === "scripted")).toBe(true);
      for (const t of [...r.throughput.runs, ...r.throughput.sqlite.runs, ...r.throughput.scripted.runs]) {
        expect(t.steps).toBe(t.sessions * r.throughput.turnsPerSession * r.workload.stepsPerTurn);
        expect(t.stepsPerSecond).toBeGreaterThan(0);
        expect(t.workerCpuCores).toBeGreaterThan(0);
        expect(t.queriesPerStep).toBeGreaterThan(0);
      }
      for (const t of r.throughput.sqlite.runs) expect(t.postgresCpuCores).toBe(0);
      for (const tp of [r.throughput, r.throughput.sqlite, r.throughput.scripted])
        expect(isFigure(tp.speedup2) && isFigure(tp.speedup4)).toBe(true);

      expect(r.events.paced.chunks).toBeGreaterThan(1);
      const sqliteEvents = [
        r.events.sqlite,
        r.events.sqliteSameProcess,
        r.events.sqliteOtherProcess,
        r.events.paced.sqliteSameProcess,
        r.events.paced.sqliteOtherProcess,
      ];
      for (const events of [
        r.events.memory,
        r.events.postgres,
        r.events.paced.memory,
        r.events.paced.postgres,
        ...sqliteEvents,
      ]) {
        expect(events.n).toBeGreaterThan(0);
        expect(events.p50Ms).toBeGreaterThan(0);
        expect(events.p99Ms).toBeGreaterThanOrEqual(events.p50Ms);
      }

      // Every text chunk reached the follower in the other process as it reached the one in this one.
      expect(r.events.sqliteOtherProcess.n).toBe(r.events.sqliteSameProcess.n);
      expect(r.events.paced.sqliteOtherProcess.n).toBe(r.events.paced.sqliteSameProcess.n);

      // Cancellation latency on every store: one figure per cancelled turn, in order of size.
      for (const figures of [r.cancel.memory, r.cancel.sqlite, r.cancel.postgres]) {
        expect(figures.n).toBe(r.cancel.sessions * r.cancel.turnsPerSession);
        expect(figures.p50Ms).toBeGreaterThan(0);
        expect(figures.p95Ms).toBeGreaterThanOrEqual(figures.p50Ms);
        expect(figures.p99Ms).toBeGreaterThanOrEqual(figures.p95Ms);
        expect(figures.maxMs).toBeGreaterThanOrEqual(figures.p99Ms);
        expect(figures.call.p50Ms).toBeGreaterThan(0);
        expect(figures.call.p99Ms).toBeGreaterThanOrEqual(figures.call.p50Ms);
      }
      expect(run.stdout).toContain("cancellation (cancelTurn called -> turn_cancelled at followEvents");

      // The Restate row: both variants at each level, the same number of steps, bare payloads from the session's journal.
      expect(r.restate.levels.map((level) => level.historyItems)).toEqual([10, 100]);
      expect(r.restate.restateVersion).toMatch(/^\d+\./);
      for (const level of r.restate.levels) {
        expect(level.session.n).toBe(level.turns * r.restate.stepsPerTurn);
        expect(level.bare.n).toBe(level.session.n);
        expect(level.bareStepBytes).toHaveLength(r.restate.stepsPerTurn);
        for (const summary of [level.session, level.bare]) {
          expect(summary.median).toBeGreaterThan(0);
          expect(summary.p99).toBeGreaterThanOrEqual(summary.median);
        }
        expect(level.ratio).toBeCloseTo(level.session.median / level.bare.median, 6);
        expect(level.sessionTurnMs).toBeGreaterThan(level.session.median);
        expect(level.outsideRunnerMsPerStep).toBeGreaterThan(0);
        expect(level.outsideRunnerMsPerStep).toBeLessThan(level.sessionTurnMs / r.restate.stepsPerTurn + 1e-9);
        expect(level.journalBytesPerStep).toBeGreaterThan(Math.min(...level.bareStepBytes));
        expect(level.sessionCpuMsPerStep.endpoint).toBeGreaterThan(0);
      }
      expect(run.stdout).toContain("engine-restate vs bare ctx.run handler");

      // The peers row: store-postgres, DBOS and LangGraph, a fresh instance per round at each level,
      // in turns with floor batches; the Restate row's bare handler referenced beside them.
      const p = r.peers;
      expect(p.stepPayloadBytes).toEqual([519, 249, 824, 249, 2018]);
      const meanPayload = p.stepPayloadBytes.reduce((a, b) => a + b, 0) / p.stepPayloadBytes.length;
      for (const row of [p.postgres, p.postgresHeld, p.dbos, p.langgraph]) {
        expect(row.levels.map((level) => level.historyItems)).toEqual([10, 100]);
        for (const version of Object.values(row.packages)) expect(version).not.toBe("unknown");
        for (const level of row.levels) {
          expect(level.step.n).toBe(p.rounds * row.stepsPerRound);
          expect(level.step.median).toBeGreaterThan(0);
          expect(level.step.p99).toBeGreaterThanOrEqual(level.step.median);
          expect(level.historyItemsAtStart).toBeGreaterThanOrEqual(level.historyItems);
          expect(level.historyItemsAtEnd).toBeGreaterThan(level.historyItemsAtStart);
          // Every row commits each step durably: at least one write transaction, and its output in the WAL.
          expect(level.writeTransactionsPerStep).toBeGreaterThanOrEqual(1);
          expect(level.walBytesPerStep).toBeGreaterThan(meanPayload);
          // One WAL figure per round, whose mean is the level's figure (every round has as many steps).
          const rounds = level.walBytesPerStepByRound!;
          expect(rounds).toHaveLength(p.rounds);
          expect(rounds.reduce((a, b) => a + b, 0) / rounds.length).toBeCloseTo(level.walBytesPerStep, 6);
          expect(level.cpuMsPerStep.process).toBeGreaterThan(0);
          expect(level.cpuMsPerStep.postgres).toBeGreaterThanOrEqual(0);
        }
      }
      for (const row of [p.dbos, p.langgraph]) {
        expect(Object.values(row.packages).every((version) => /^\d+\.\d+\.\d+/.test(version))).toBe(true);
        for (const level of row.levels) expect(level.outsideRunnerMsPerStep).toBeUndefined();
      }
      for (const level of [...p.postgres.levels, ...p.postgresHeld.levels]) {
        expect(level.outsideRunnerMsPerStep).toBeGreaterThan(0);
        // Each step minus its own runner call: one figure per step, each shorter than the step.
        expect(level.outsideRunnerStep!.n).toBe(level.step.n);
        expect(level.outsideRunnerStep!.median).toBeGreaterThan(0);
        expect(level.outsideRunnerStep!.median).toBeLessThanOrEqual(level.step.median);
      }
      // LangGraph's checkpoint holds the whole message list: 100 messages write more per step than 10.
      expect(p.langgraph.levels[1]!.walBytesPerStep).toBeGreaterThan(p.langgraph.levels[0]!.walBytesPerStep);
      expect(p.floor.n).toBe(p.rounds * p.floorWritesPerRound * p.ratios.length);
      expect(p.ratios.map((level) => level.historyItems)).toEqual([10, 100]);
      for (const [i, level] of p.ratios.entries()) {
        expect(level.floorMedianMs).toBeGreaterThan(0);
        const ours = p.postgres.levels[i]!.step.median;
        expect(level.postgresToDbos).toBeCloseTo(ours / p.dbos.levels[i]!.step.median, 6);
        expect(level.postgresToLangGraph).toBeCloseTo(ours / p.langgraph.levels[i]!.step.median, 6);
        expect(level.postgresToFloor).toBeCloseTo(ours / level.floorMedianMs, 6);
        const outside = p.postgres.levels[i]!.outsideRunnerStep!.median;
        expect(level.postgresOutsideRunnerToDbos).toBeCloseTo(outside / p.dbos.levels[i]!.step.median, 6);
        const held = p.postgresHeld.levels[i]!.step.median;
        expect(level.postgresHeldToDbos).toBeCloseTo(held / p.dbos.levels[i]!.step.median, 6);
        expect(level.postgresHeldToFloor).toBeCloseTo(held / level.floorMedianMs, 6);
      }
      expect(p.restateBare.levels.map((level) => level.historyItems)).toEqual([10, 100]);
      for (const [i, level] of p.restateBare.levels.entries()) {
        expect(level.step).toEqual(r.restate.levels[i]!.bare);
        expect(level.postgresToBare).toBeCloseTo(p.postgres.levels[i]!.step.median / level.step.median, 6);
        expect(level.postgresHeldToBare).toBeCloseTo(p.postgresHeld.levels[i]!.step.median / level.step.median, 6);
      }
      expect(run.stdout).toContain("peers (same PostgreSQL, in turns)");
      expect(run.stdout).toContain("WAL B/step of a round, median (largest), 10 / 100 items: store-postgres ");
      // The server's own checkpoints and maintenance stay out of the rounds (BENCH_CHECKPOINTS, settleTables).
      expect(r.postgres.checkpointTimeout).toBe("1d");
      expect(r.postgres.checkpointsByBench).toBe(true);
      expect(run.stdout).toContain("Restate bare ctx.run (from the Restate row)");

      expect(r.targets).toHaveLength(39);
      // Write transactions and WAL per step, judged on both store-postgres rows of the peers.
      for (const row of [p.postgres, p.postgresHeld]) {
        const txns = r.targets.find(
          (t) => t.name === `write transactions per step, peers row ${row.name} (worst level)`,
        );
        expect(txns?.value).toBe(Math.max(...row.levels.map((level) => level.writeTransactionsPerStep)));
        const wal = r.targets.find((t) => t.name === `WAL bytes per step, peers row ${row.name} (worst level)`);
        expect(wal?.value).toBe(Math.max(...row.levels.map((level) => level.walBytesPerStep)));
      }
      expect(r.targets.filter((t) => t.name.startsWith("store-postgres / DBOS"))).toHaveLength(2);
      expect(r.targets.filter((t) => t.name.startsWith("store-postgres / Restate bare ctx.run"))).toHaveLength(2);
      expect(r.targets.filter((t) => t.name.startsWith("engine-restate"))).toHaveLength(4);
      expect(r.targets.filter((t) => t.name.startsWith("cancelTurn"))).toHaveLength(2);
      expect(r.targets.filter((t) => t.name.includes("sqlite"))).toHaveLength(9);
      // Steps per second, judged on the best process count, with the SDK and with no framework.
      const best = (runs: readonly { stepsPerSecond: number }[]) => Math.max(...runs.map((t) => t.stepsPerSecond));
      expect(r.targets.find((t) => t.name.startsWith("steps per second, throughput phase, postgres"))?.value).toBe(
        best(r.throughput.runs),
      );
      expect(r.targets.find((t) => t.name.startsWith("the same with core's ScriptedRunner"))?.value).toBe(
        best(r.throughput.scripted.runs),
      );
      expect(run.stdout).toContain("throughput (store-postgres, core's ScriptedRunner: no framework)");
      for (const target of r.targets) {
        expect(isFigure(target.value)).toBe(true);
        expect(run.stdout).toContain(target.name);
      }
      expect(run.stdout).toMatch(/\| (met|MISSED) +\|/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

/** The benchmark's figures as one JSON document, the targets judged from them, and the printed table. */
import type { MachineInfo } from "./machine-info.js";
import type { ServerInfo } from "./postgres-probe.js";
import { type Summary, summarize } from "./stats.js";
import type { GrowthLevel } from "./growth-phase.js";
import type { ThroughputResult } from "./throughput-phase.js";
import type { ModelStepProbe } from "./model-step-probe.js";
import type { SqliteFloorResult, SqliteInfo } from "./sqlite-probe.js";
import type { RestateFigures } from "./restate-phase.js";
import type { PeerLevel, PeerRow, PeersResults } from "./peers-phase.js";

export interface StepFigures {
  readonly steps: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  readonly wallMs: number;
  /** This process's CPU per step over the measured sessions, ms (PostgreSQL's own is not in it). */
  readonly cpuMsPerStep: number;
  /** The same, for the model calls alone and the tool calls alone. */
  readonly modelSteps: { readonly n: number; readonly medianMs: number; readonly p99Ms: number };
  readonly toolSteps: { readonly n: number; readonly medianMs: number; readonly p99Ms: number };
}

export interface LatencyFigures {
  readonly n: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Cancellation latency on one store: `cancelTurn` called -> `turn_cancelled` seen by a follower. */
export interface CancelFigures {
  readonly n: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** `cancelTurn`'s own answer time (its checks and the inbox write). */
  readonly call: { readonly p50Ms: number; readonly p99Ms: number };
}

export interface Target {
  readonly name: string;
  readonly value: number;
  readonly limit: string;
  readonly met: boolean;
}

export interface BenchResults {
  readonly generatedAt: string;
  readonly mode: "full" | "quick";
  readonly durationSeconds: number;
  readonly machine: MachineInfo;
  readonly postgres: ServerInfo & {
    readonly server: "private (startPostgres)" | "given URL";
    /** Whether the bench took its own checkpoints (see BENCH_CHECKPOINTS); absent in runs before it did. */
    readonly checkpointsByBench?: boolean;
  };
  /** The store-sqlite files: SQLite's version and settings, where the files were, the cross-process watch interval. */
  readonly sqlite: SqliteInfo & { readonly folder: string; readonly watchIntervalMs: number };
  readonly workload: {
    readonly stepDefinition: string;
    readonly sessions: number;
    readonly turnsPerSession: number;
    readonly toolCallsPerTurn: number;
    readonly stepsPerTurn: number;
    readonly model: string;
  };
  readonly overhead: {
    readonly rawSdk: StepFigures;
    readonly memory: StepFigures;
    readonly postgres: StepFigures;
    /** (d) store-sqlite, synchronous FULL (the default). */
    readonly sqlite: StepFigures;
    /** (e) store-sqlite, synchronous NORMAL. */
    readonly sqliteNormal: StepFigures;
    readonly ratios: {
      readonly memoryToRaw: number;
      readonly postgresToRaw: number;
      readonly memoryToRawP99: number;
      readonly postgresToRawP99: number;
      /** Median of the model steps alone (the target's "time per model step"). */
      readonly memoryToRawModelSteps: number;
      readonly postgresToRawModelSteps: number;
      readonly sqliteToRaw: number;
      readonly sqliteToRawP99: number;
      readonly sqliteToRawModelSteps: number;
      readonly sqliteNormalToRaw: number;
      readonly sqliteNormalToRawP99: number;
      readonly sqliteNormalToRawModelSteps: number;
      /** This process's CPU per step, store-postgres / store-memory (the worker's CPU on PostgreSQL). */
      readonly postgresToMemoryCpu: number;
    };
  };
  readonly floor: {
    readonly singleRowWrite: Summary & { readonly walBytesPerWrite: number };
    /** Median per-step time on store-postgres / median single-row write. */
    readonly postgresStepToWrite: number;
    /** Transactions that wrote (transaction IDs assigned) per step on store-postgres. */
    readonly writeTransactionsPerStep: number;
    readonly walBytesPerStep: number;
  };
  /** The floor of store-sqlite: one committed single-row INSERT into a tiny table of the same file. */
  readonly sqliteFloor: {
    readonly full: SqliteFloorResult;
    readonly normal: SqliteFloorResult;
    /** Median step of (d) / median FULL write: the target's ratio. */
    readonly fullStepToWrite: number;
    /** Median step of (e) / median NORMAL write. */
    readonly normalStepToWrite: number;
    /** Median step of (e) / median FULL write. */
    readonly normalStepToFullWrite: number;
  };
  readonly growth: {
    readonly memory: GrowthLevel[];
    readonly postgres: GrowthLevel[];
    readonly sqlite: GrowthLevel[];
    readonly rawSdkReference: GrowthLevel[];
    /** The adapter's model step next to a raw SDK model call on the same histories. */
    readonly modelStep: ModelStepProbe[];
    readonly bytesUnit: { readonly memory: string; readonly postgres: string; readonly sqlite: string };
  };
  readonly throughput: {
    readonly turnsPerSession: number;
    readonly rounds: number;
    /** The median run of each process count (1, 2, 4). */
    readonly runs: ThroughputResult[];
    /** Every run, in the order they ran. */
    readonly allRuns: ThroughputResult[];
    readonly speedup2: number;
    readonly speedup4: number;
    /** The same on store-sqlite: every worker process on one file (its runs are in `allRuns` too). */
    readonly sqlite: { readonly runs: ThroughputResult[]; readonly speedup2: number; readonly speedup4: number };
    /**
     * The same on store-postgres with core's ScriptedRunner driving the same turns: no framework, so
     * the durability layer's own cost under load (its runs are in `allRuns` too, `runner: "scripted"`).
     */
    readonly scripted: { readonly runs: ThroughputResult[]; readonly speedup2: number; readonly speedup4: number };
  };
  readonly events: {
    /** The workload's answers, streamed in 3 chunks at once (a fast model). */
    readonly memory: LatencyFigures;
    readonly postgres: LatencyFigures;
    /** During (d), the client in the worker's process. */
    readonly sqlite: LatencyFigures;
    /** store-sqlite, the same workload on another file, followed by a client in this process and... */
    readonly sqliteSameProcess: LatencyFigures;
    /** ...by a client in another process, with its own SqliteStore on the file (woken by its data_version watch). */
    readonly sqliteOtherProcess: LatencyFigures;
    /** Answers of about 160 characters streamed in `chunks` chunks, `paceMs` apart (a model's pace). */
    readonly paced: {
      readonly chunks: number;
      readonly paceMs: number;
      readonly memory: LatencyFigures;
      readonly postgres: LatencyFigures;
      readonly sqliteSameProcess: LatencyFigures;
      readonly sqliteOtherProcess: LatencyFigures;
    };
  };
  /**
   * Turns cancelled while their model call was in flight: from calling `client.cancelTurn` to the
   * arrival of `turn_cancelled` at a client following the session (`followEvents`, same process).
   */
  readonly cancel: {
    readonly sessions: number;
    readonly turnsPerSession: number;
    readonly model: string;
    readonly memory: CancelFigures;
    readonly sqlite: CancelFigures;
    readonly postgres: CancelFigures;
  };
  /** `@durable-agents/engine-restate` next to a bare Restate handler with the same steps (`restate-phase.ts`). */
  readonly restate: RestateFigures;
  /**
   * The peers (DBOS, LangGraph) on the same PostgreSQL, in turns with a store-postgres session and
   * the single-row floor, and the Restate row's bare handler beside them (`peers-phase.ts`).
   */
  readonly peers: PeersResults;
  readonly targets: Target[];
}

/** The most steps per second of the median runs of 1, 2 and 4 processes. */
function bestStepsPerSecond(runs: readonly ThroughputResult[]): number {
  return Math.max(...runs.map((run) => run.stepsPerSecond));
}

/** Largest relative change of a per-level figure from the first level. */
export function spread(levels: readonly GrowthLevel[], pick: (level: GrowthLevel) => number | undefined): number {
  const base = pick(levels[0]!) ?? Number.NaN;
  let worst = 0;
  for (const level of levels.slice(1)) {
    const change = (pick(level) ?? Number.NaN) / base - 1;
    if (Math.abs(change) > Math.abs(worst) || Number.isNaN(change)) worst = change;
  }
  return worst;
}

export function judgeTargets(r: Omit<BenchResults, "targets">): Target[] {
  const within = (value: number, limit: number) => Number.isFinite(value) && Math.abs(value) <= limit;
  const growthTime = (levels: GrowthLevel[]) => spread(levels, (l) => l.medianMs);
  const growthOutside = (levels: GrowthLevel[]) => spread(levels, (l) => l.outsideRunnerMs);
  const growthBytes = (levels: GrowthLevel[]) => spread(levels, (l) => l.bytesPerStep);
  return [
    {
      name: "store-memory / raw SDK, median ms per model step",
      value: r.overhead.ratios.memoryToRawModelSteps,
      limit: "<= 1.50",
      met: r.overhead.ratios.memoryToRawModelSteps <= 1.5,
    },
    {
      name: "this process's CPU per step, store-postgres / store-memory (worker CPU on PostgreSQL)",
      value: r.overhead.ratios.postgresToMemoryCpu,
      limit: "<= 2.00",
      met: r.overhead.ratios.postgresToMemoryCpu <= 2,
    },
    {
      name: "store-postgres step / single-row write (median)",
      value: r.floor.postgresStepToWrite,
      limit: "<= 2.00",
      met: r.floor.postgresStepToWrite <= 2,
    },
    {
      name: "growth 10->1000 items, ms per step, memory",
      value: growthTime(r.growth.memory),
      limit: "within +-10 %",
      met: within(growthTime(r.growth.memory), 0.1),
    },
    {
      name: "growth 10->1000 items, ms per step, postgres",
      value: growthTime(r.growth.postgres),
      limit: "within +-10 %",
      met: within(growthTime(r.growth.postgres), 0.1),
    },
    {
      name: "growth 10->1000 items, ms per step outside the runner, memory",
      value: growthOutside(r.growth.memory),
      limit: "within +-10 %",
      met: within(growthOutside(r.growth.memory), 0.1),
    },
    {
      name: "growth 10->1000 items, ms per step outside the runner, postgres",
      value: growthOutside(r.growth.postgres),
      limit: "within +-10 %",
      met: within(growthOutside(r.growth.postgres), 0.1),
    },
    {
      name: "growth 10->1000 items, bytes per step, memory",
      value: growthBytes(r.growth.memory),
      limit: "within +-10 %",
      met: within(growthBytes(r.growth.memory), 0.1),
    },
    {
      name: "growth 10->1000 items, bytes per step, postgres",
      value: growthBytes(r.growth.postgres),
      limit: "within +-10 %",
      met: within(growthBytes(r.growth.postgres), 0.1),
    },
    {
      name: "steps per second, throughput phase, postgres (best of 1, 2, 4 processes)",
      value: bestStepsPerSecond(r.throughput.runs),
      limit: ">= 2000",
      met: bestStepsPerSecond(r.throughput.runs) >= 2000,
    },
    {
      name: "the same with core's ScriptedRunner (no framework: the durability layer alone)",
      value: bestStepsPerSecond(r.throughput.scripted.runs),
      limit: ">= 2000",
      met: bestStepsPerSecond(r.throughput.scripted.runs) >= 2000,
    },
    {
      name: "2 worker processes / 1, steps per second",
      value: r.throughput.speedup2,
      limit: ">= 1.70",
      met: r.throughput.speedup2 >= 1.7,
    },
    {
      name: "event latency p99, memory (ms)",
      value: r.events.memory.p99Ms,
      limit: "< 20",
      met: r.events.memory.p99Ms < 20,
    },
    {
      name: "event latency p99, postgres (ms)",
      value: r.events.postgres.p99Ms,
      limit: "< 50",
      met: r.events.postgres.p99Ms < 50,
    },
    {
      name: "event latency p99, paced stream, memory (ms)",
      value: r.events.paced.memory.p99Ms,
      limit: "< 20",
      met: r.events.paced.memory.p99Ms < 20,
    },
    {
      name: "event latency p99, paced stream, postgres (ms)",
      value: r.events.paced.postgres.p99Ms,
      limit: "< 50",
      met: r.events.paced.postgres.p99Ms < 50,
    },
    {
      name: "cancelTurn -> turn_cancelled p99, model call in flight, memory (ms)",
      value: r.cancel.memory.p99Ms,
      limit: "< 50",
      met: r.cancel.memory.p99Ms < 50,
    },
    {
      name: "cancelTurn -> turn_cancelled p99, model call in flight, postgres (ms)",
      value: r.cancel.postgres.p99Ms,
      limit: "< 100",
      met: r.cancel.postgres.p99Ms < 100,
    },
    // store-sqlite
    {
      name: "store-sqlite step / single-row write to the same file, synchronous=FULL (median)",
      value: r.sqliteFloor.fullStepToWrite,
      limit: "<= 3.00",
      met: r.sqliteFloor.fullStepToWrite <= 3,
    },
    {
      name: "growth 10->1000 items, ms per step, sqlite",
      value: growthTime(r.growth.sqlite),
      limit: "within +-10 %",
      met: within(growthTime(r.growth.sqlite), 0.1),
    },
    {
      name: "growth 10->1000 items, ms per step outside the runner, sqlite",
      value: growthOutside(r.growth.sqlite),
      limit: "within +-10 %",
      met: within(growthOutside(r.growth.sqlite), 0.1),
    },
    {
      name: "growth 10->1000 items, bytes per step, sqlite",
      value: growthBytes(r.growth.sqlite),
      limit: "within +-10 %",
      met: within(growthBytes(r.growth.sqlite), 0.1),
    },
    {
      name: "2 worker processes / 1 on one file, steps per second, sqlite",
      value: r.throughput.sqlite.speedup2,
      limit: ">= 1.70",
      met: r.throughput.sqlite.speedup2 >= 1.7,
    },
    {
      name: "event latency p99, sqlite, same process (ms)",
      value: r.events.sqliteSameProcess.p99Ms,
      limit: "< 20",
      met: r.events.sqliteSameProcess.p99Ms < 20,
    },
    {
      name: "event latency p99, sqlite, other process (ms)",
      value: r.events.sqliteOtherProcess.p99Ms,
      limit: "< 100",
      met: r.events.sqliteOtherProcess.p99Ms < 100,
    },
    {
      name: "event latency p99, paced stream, sqlite, same process (ms)",
      value: r.events.paced.sqliteSameProcess.p99Ms,
      limit: "< 20",
      met: r.events.paced.sqliteSameProcess.p99Ms < 20,
    },
    {
      name: "event latency p99, paced stream, sqlite, other process (ms)",
      value: r.events.paced.sqliteOtherProcess.p99Ms,
      limit: "< 100",
      met: r.events.paced.sqliteOtherProcess.p99Ms < 100,
    },
    ...restateTargets(r.restate),
    ...peerTargets(r.peers),
  ];
}

/** At the first and the last level: store-postgres per step / DBOS per step, and / Restate's bare ctx.run. */
function peerTargets(peers: PeersResults): Target[] {
  const ends = [peers.ratios[0], peers.ratios.at(-1)].filter((level) => level !== undefined);
  const targets: Target[] = [];
  for (const level of ends) {
    targets.push({
      name: `store-postgres / DBOS, median ms per step, at ${level.historyItems} items`,
      value: level.postgresToDbos,
      limit: "<= 0.60",
      met: level.postgresToDbos <= 0.6,
    });
  }
  const bare = [peers.restateBare.levels[0], peers.restateBare.levels.at(-1)].filter((level) => level !== undefined);
  for (const level of bare) {
    targets.push({
      name: `store-postgres / Restate bare ctx.run, median ms per step, at ${level.historyItems} items`,
      value: level.postgresToBare,
      limit: "<= 0.90",
      met: level.postgresToBare <= 0.9,
    });
  }
  // Write transactions and WAL per step, the worst level of each store-postgres row.
  for (const row of [peers.postgres, peers.postgresHeld]) {
    const txns = Math.max(...row.levels.map((level) => level.writeTransactionsPerStep));
    const wal = Math.max(...row.levels.map((level) => level.walBytesPerStep));
    targets.push(
      {
        name: `write transactions per step, peers row ${row.name} (worst level)`,
        value: txns,
        limit: "<= 1.20",
        met: txns <= 1.2,
      },
      {
        name: `WAL bytes per step, peers row ${row.name} (worst level)`,
        value: wal,
        limit: "<= 2500",
        met: wal <= 2500,
      },
    );
  }
  return targets;
}

function restateTargets(restate: RestateFigures): Target[] {
  const levels = restate.levels;
  const first = levels[0];
  if (!first) return [];
  const spreadOf = (pick: (level: RestateFigures["levels"][number]) => number) =>
    levels.reduce((worst, level) => {
      const change = pick(level) / pick(first) - 1;
      return Math.abs(change) > Math.abs(worst) ? change : worst;
    }, 0);
  const worstRatio = Math.max(...levels.map((level) => level.ratio));
  const time = spreadOf((level) => level.session.median);
  const outside = spreadOf((level) => level.outsideRunnerMsPerStep);
  const bytes = spreadOf((level) => level.journalBytesPerStep);
  return [
    {
      name: "engine-restate / bare ctx.run handler, median ms per step (worst level)",
      value: worstRatio,
      limit: "<= 1.50",
      met: worstRatio <= 1.5,
    },
    {
      name: `engine-restate median ms per step, ${first.historyItems} -> ${levels.at(-1)!.historyItems} items`,
      value: time,
      limit: "within +-10 %",
      met: Math.abs(time) <= 0.1,
    },
    {
      name: `engine-restate ms per step outside the runner, ${first.historyItems} -> ${levels.at(-1)!.historyItems} items`,
      value: outside,
      limit: "within +-10 %",
      met: Math.abs(outside) <= 0.1,
    },
    {
      name: `engine-restate journal bytes per step, ${first.historyItems} -> ${levels.at(-1)!.historyItems} items`,
      value: bytes,
      limit: "within +-10 %",
      met: Math.abs(bytes) <= 0.1,
    },
  ];
}

const f = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : String(value));
const pct = (value: number) => `${value >= 0 ? "+" : ""}${(value * 100).toFixed(1)} %`;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  const line = (row: string[]) => `| ${row.map((cell, c) => cell.padEnd(widths[c]!)).join(" | ")} |`;
  return [line(rows[0]!), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.slice(1).map(line)].join("\n");
}

function renderRestate(restate: RestateFigures): string {
  const rows = restate.levels.map((level) => [
    String(level.historyItems),
    f(level.session.median),
    f(level.session.p99),
    f(level.bare.median),
    f(level.bare.p99),
    f(level.ratio),
    f(level.sessionTurnMs, 1),
    f(level.bareTurnMs, 1),
    f(level.turnRatio),
    f(level.outsideRunnerMsPerStep),
    f(level.journalBytesPerStep, 0),
    `${f(level.sessionCpuMsPerStep.endpoint)} + ${f(level.sessionCpuMsPerStep.server)}`,
    `${f(level.bareCpuMsPerStep.endpoint)} + ${f(level.bareCpuMsPerStep.server)}`,
  ]);
  return [
    table([
      [
        "engine-restate vs bare ctx.run handler: history items",
        "session step median ms",
        "p99 ms",
        "bare step median ms",
        "p99 ms",
        "step ratio",
        "session turn ms",
        "bare turn ms",
        "turn ratio",
        "outside the runner ms/step",
        "journal B/step",
        "session CPU ms/step (node + restate)",
        "bare CPU ms/step",
      ],
      ...rows,
    ]),
    `Restate ${restate.restateVersion}, SDK ${restate.sdkVersion}: ${restate.levels[0]?.turns ?? 0} turns of each variant per level after as many warm-up rounds, one session per level, levels and variants in turns; a turn is ${restate.stepsPerTurn} steps (model, tool, model, tool, model); the bare handler's steps return the payload sizes of the session's step results (${restate.levels[0]?.bareStepBytes.join(", ") ?? ""} B)`,
  ].join("\n");
}

function renderPeers(p: PeersResults): string {
  const rows: string[][] = [];
  const ratioAt = (items: number) => p.ratios.find((level) => level.historyItems === items);
  const add = (row: PeerRow, ratio: (items: number) => string | undefined) => {
    for (const level of row.levels) {
      const floor = ratioAt(level.historyItems)?.floorMedianMs ?? Number.NaN;
      const toThis = ratio(level.historyItems);
      rows.push(peerRow(row.name, level, toThis, level.step.median / floor));
    }
  };
  add(p.postgres, () => "1.00");
  add(p.postgresHeld, () => undefined);
  add(p.dbos, (items) => {
    const ratio = ratioAt(items);
    return ratio && `${f(ratio.postgresToDbos)} (${f(ratio.postgresOutsideRunnerToDbos)})`;
  });
  add(p.langgraph, (items) => {
    const ratio = ratioAt(items);
    return ratio && `${f(ratio.postgresToLangGraph)} (${f(ratio.postgresOutsideRunnerToLangGraph)})`;
  });
  for (const level of p.restateBare.levels) {
    rows.push([
      "Restate bare ctx.run (from the Restate row)",
      String(level.historyItems),
      String(level.step.n),
      f(level.step.median, 3),
      f(level.step.p99, 3),
      "-",
      "-",
      `${f(level.cpuMsPerStep.process)} + ${f(level.cpuMsPerStep.server)} (restate-server)`,
      "-",
      f(level.postgresToBare),
      "-",
    ]);
  }
  for (const level of p.ratios) {
    rows.push([
      "floor: single-row INSERT (in these rounds)",
      String(level.historyItems),
      "-",
      f(level.floorMedianMs, 3),
      "-",
      "-",
      f(p.floor.walBytesPerWrite, 0),
      "-",
      "-",
      "-",
      "1.00",
    ]);
  }
  const versions = [p.dbos, p.langgraph]
    .flatMap((row) => Object.entries(row.packages).map(([name, version]) => `${name} ${version}`))
    .join(", ");
  return [
    table([
      [
        "peers (same PostgreSQL, in turns): row",
        "history items",
        "steps",
        "median ms/step",
        "p99 ms",
        "write transactions/step",
        "WAL B/step",
        "CPU ms/step (node + PostgreSQL)",
        "outside the runner: median ms/step",
        "store-postgres / this (median; outside the runner)",
        "this / floor (median)",
      ],
      ...rows,
    ]),
    `store-postgres, held session (the round's message to a session whose worker kept its lease, as a running DBOS workflow's next round): / DBOS ${p.ratios.map((level) => `${f(level.postgresHeldToDbos)} at ${level.historyItems}`).join(", ")}; / Restate bare ctx.run ${p.restateBare.levels.map((level) => `${f(level.postgresHeldToBare)} at ${level.historyItems}`).join(", ")}; / floor ${p.ratios.map((level) => `${f(level.postgresHeldToFloor)} at ${level.historyItems}`).join(", ")} (median ms per step).`,
    walByRound(p),
    `Peers: ${versions}; Restate ${p.restateBare.restateVersion}, SDK ${p.restateBare.sdkVersion}. ${p.rounds} rounds of ${p.postgres.stepsPerRound} steps per row and level (after ${p.warmupRounds} warm-up rounds at the first level), store-postgres, store-postgres held, ${p.floorWritesPerRound} floor writes, DBOS, LangGraph in turns; history items: a level's start (each round adds 5 to 6). Steps: store-postgres ${p.postgres.step}; DBOS ${p.dbos.step}; LangGraph ${p.langgraph.step}. Payloads ${p.stepPayloadBytes.join(", ")} B in turn.`,
  ].join("\n");
}

/** The rounds' WAL per step, median and largest, per row and level (absent from runs that did not record it). */
function walByRound(p: PeersResults): string {
  const rows: [string, PeerRow][] = [
    ["store-postgres", p.postgres],
    ["held", p.postgresHeld],
    ["DBOS", p.dbos],
    ["LangGraph", p.langgraph],
  ];
  const parts = rows.map(
    ([name, row]) =>
      `${name} ${row.levels
        .map((level) => {
          const rounds = summarize(level.walBytesPerStepByRound ?? []);
          return rounds.n === 0 ? "-" : `${f(rounds.median, 0)} (${f(rounds.max, 0)})`;
        })
        .join(" / ")}`,
  );
  return `WAL B/step of a round, median (largest), ${p.postgres.levels.map((level) => level.historyItems).join(" / ")} items: ${parts.join("; ")}.`;
}

function peerRow(name: string, level: PeerLevel, postgresToThis: string | undefined, toFloor: number): string[] {
  return [
    name,
    String(level.historyItems),
    String(level.step.n),
    f(level.step.median, 3),
    f(level.step.p99, 3),
    f(level.writeTransactionsPerStep),
    f(level.walBytesPerStep, 0),
    `${f(level.cpuMsPerStep.process)} + ${f(level.cpuMsPerStep.postgres)}`,
    level.outsideRunnerStep === undefined ? "-" : f(level.outsideRunnerStep.median, 3),
    postgresToThis ?? "-",
    f(toFloor),
  ];
}

/** The figures as Markdown tables (printed by `pnpm bench`, pasted into the README). */
export function renderReport(r: BenchResults): string {
  const m = r.machine;
  const out: string[] = [];
  out.push(
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, PostgreSQL ${r.postgres.version} ` +
      `(${r.postgres.server}, fsync ${r.postgres.fsync}, synchronous_commit ${r.postgres.synchronousCommit}, ` +
      `checkpoint_timeout ${r.postgres.checkpointTimeout}, max_wal_size ${r.postgres.maxWalSize}, ` +
      `${r.postgres.checkpointsByBench ? "a checkpoint before each PostgreSQL phase and peers level" : "checkpoints the server's own"}), ` +
      `load ${m.loadAverageAtStart} at start; ` +
      `mode ${r.mode}, ${f(r.durationSeconds, 0)} s, commit ${m.commit}`,
  );
  out.push(
    `SQLite ${r.sqlite.version} (node:sqlite), journal ${r.sqlite.journalMode}, page ${r.sqlite.pageSize} B, ` +
      `wal_autocheckpoint ${r.sqlite.walAutocheckpoint}, files in ${r.sqlite.folder}, cross-process watch every ${r.sqlite.watchIntervalMs} ms`,
  );
  const w = r.workload;
  out.push(
    `Workload: ${w.sessions} sessions x ${w.turnsPerSession} turns x ${w.toolCallsPerTurn} tool calls = ${w.stepsPerTurn} steps per turn; ${w.stepDefinition}`,
  );
  out.push("");
  const o = r.overhead;
  out.push(
    table([
      [
        "overhead per step",
        "steps",
        "median ms",
        "p99 ms",
        "mean ms",
        "median vs raw",
        "p99 vs raw",
        "model steps: median ms",
        "vs raw",
        "tool steps: median ms",
        "CPU ms per step (this process)",
      ],
      [
        "(a) raw SDK",
        String(o.rawSdk.steps),
        f(o.rawSdk.medianMs, 3),
        f(o.rawSdk.p99Ms, 3),
        f(o.rawSdk.meanMs, 3),
        "1.00",
        "1.00",
        f(o.rawSdk.modelSteps.medianMs, 3),
        "1.00",
        f(o.rawSdk.toolSteps.medianMs, 3),
        f(o.rawSdk.cpuMsPerStep),
      ],
      [
        "(b) store-memory",
        String(o.memory.steps),
        f(o.memory.medianMs, 3),
        f(o.memory.p99Ms, 3),
        f(o.memory.meanMs, 3),
        f(o.ratios.memoryToRaw),
        f(o.ratios.memoryToRawP99),
        f(o.memory.modelSteps.medianMs, 3),
        f(o.ratios.memoryToRawModelSteps),
        f(o.memory.toolSteps.medianMs, 3),
        f(o.memory.cpuMsPerStep),
      ],
      [
        "(c) store-postgres",
        String(o.postgres.steps),
        f(o.postgres.medianMs, 3),
        f(o.postgres.p99Ms, 3),
        f(o.postgres.meanMs, 3),
        f(o.ratios.postgresToRaw),
        f(o.ratios.postgresToRawP99),
        f(o.postgres.modelSteps.medianMs, 3),
        f(o.ratios.postgresToRawModelSteps),
        f(o.postgres.toolSteps.medianMs, 3),
        f(o.postgres.cpuMsPerStep),
      ],
      [
        "(d) store-sqlite, synchronous=FULL",
        String(o.sqlite.steps),
        f(o.sqlite.medianMs, 3),
        f(o.sqlite.p99Ms, 3),
        f(o.sqlite.meanMs, 3),
        f(o.ratios.sqliteToRaw),
        f(o.ratios.sqliteToRawP99),
        f(o.sqlite.modelSteps.medianMs, 3),
        f(o.ratios.sqliteToRawModelSteps),
        f(o.sqlite.toolSteps.medianMs, 3),
        f(o.sqlite.cpuMsPerStep),
      ],
      [
        "(e) store-sqlite, synchronous=NORMAL",
        String(o.sqliteNormal.steps),
        f(o.sqliteNormal.medianMs, 3),
        f(o.sqliteNormal.p99Ms, 3),
        f(o.sqliteNormal.meanMs, 3),
        f(o.ratios.sqliteNormalToRaw),
        f(o.ratios.sqliteNormalToRawP99),
        f(o.sqliteNormal.modelSteps.medianMs, 3),
        f(o.ratios.sqliteNormalToRawModelSteps),
        f(o.sqliteNormal.toolSteps.medianMs, 3),
        f(o.sqliteNormal.cpuMsPerStep),
      ],
    ]),
  );
  out.push("");
  const fl = r.floor;
  out.push(
    table([
      ["floor (same PostgreSQL)", "value"],
      ["single-row write, median ms", f(fl.singleRowWrite.median, 3)],
      ["single-row write, p99 ms", f(fl.singleRowWrite.p99, 3)],
      ["store-postgres step / write (median)", f(fl.postgresStepToWrite)],
      ["write transactions per step", f(fl.writeTransactionsPerStep)],
      [`WAL bytes per step (single write: ${f(fl.singleRowWrite.walBytesPerWrite, 0)})`, f(fl.walBytesPerStep, 0)],
    ]),
  );
  out.push("");
  const sf = r.sqliteFloor;
  out.push(
    table([
      ["floor (same SQLite file)", "synchronous=FULL", "synchronous=NORMAL"],
      ["single-row write, median ms", f(sf.full.median, 3), f(sf.normal.median, 3)],
      ["single-row write, p99 ms", f(sf.full.p99, 3), f(sf.normal.p99, 3)],
      ["store-sqlite step, median ms", f(o.sqlite.medianMs, 3), f(o.sqliteNormal.medianMs, 3)],
      ["store-sqlite step / write with the same setting (median)", f(sf.fullStepToWrite), f(sf.normalStepToWrite)],
      ["store-sqlite step / FULL write (median)", f(sf.fullStepToWrite), f(sf.normalStepToFullWrite)],
    ]),
  );
  out.push("");
  const growthRows: string[][] = [
    [
      "growth",
      "history items",
      "steps",
      "median ms",
      "p99 ms",
      "minus raw SDK ms",
      "outside the runner ms",
      "bytes per step",
      "writes per step",
    ],
  ];
  const addGrowth = (label: string, levels: GrowthLevel[]) => {
    for (const l of levels) {
      growthRows.push([
        label,
        String(l.historyItems),
        String(l.steps),
        f(l.medianMs, 3),
        f(l.p99Ms, 3),
        l.overheadMs === undefined ? "-" : f(l.overheadMs, 3),
        l.outsideRunnerMs === undefined ? "-" : f(l.outsideRunnerMs, 3),
        l.bytesPerStep === undefined ? "-" : f(l.bytesPerStep, 0),
        l.writesPerStep === undefined ? "-" : f(l.writesPerStep),
      ]);
    }
  };
  addGrowth("store-memory (JSON bytes)", r.growth.memory);
  addGrowth("store-postgres (WAL bytes)", r.growth.postgres);
  addGrowth("store-sqlite (WAL bytes)", r.growth.sqlite);
  addGrowth("raw SDK (reference)", r.growth.rawSdkReference);
  out.push(table(growthRows));
  out.push("");
  out.push(
    table([
      [
        "adapter model step vs raw SDK model call",
        "history items",
        "first step ms",
        "resumed step ms",
        "raw SDK call ms",
        "saved run state chars",
      ],
      ...r.growth.modelStep.map((p) => [
        "median",
        String(p.historyItems),
        f(p.adapterFirstStepMs, 3),
        f(p.adapterResumedStepMs, 3),
        f(p.rawModelCallMs, 3),
        String(p.runStateChars),
      ]),
    ]),
  );
  out.push("");
  const partRows: string[][] = [
    ["store-memory bytes per step by part", ...r.growth.memory.map((l) => `${l.historyItems} items`)],
  ];
  for (const part of Object.keys(r.growth.memory[0]?.bytesPerStepByPart ?? {})) {
    partRows.push([part, ...r.growth.memory.map((l) => f(l.bytesPerStepByPart?.[part] ?? Number.NaN, 0))]);
  }
  if (partRows.length > 1) {
    out.push(table(partRows));
    out.push("");
  }
  const throughputTable = (label: string, runs: readonly ThroughputResult[], queries: string) =>
    table([
      [
        label,
        "sessions",
        "steps",
        "seconds",
        "steps/s",
        "vs 1 process",
        "workers' CPU (cores)",
        "PostgreSQL CPU (cores)",
        "CPU ms per step",
        queries,
        "machine busy",
        "other processes (cores)",
      ],
      ...runs.map((t) => [
        `${t.processes} worker process${t.processes > 1 ? "es" : ""}`,
        String(t.sessions),
        String(t.steps),
        f(t.seconds),
        f(t.stepsPerSecond, 1),
        f(t.stepsPerSecond / runs[0]!.stepsPerSecond),
        f(t.workerCpuCores),
        t.store === "sqlite" ? "-" : f(t.postgresCpuCores),
        f(t.cpuMsPerStep),
        f(t.queriesPerStep),
        `${f(t.machineBusy * 100, 0)} %`,
        f(t.otherCpuCores),
      ]),
    ]);
  out.push(throughputTable("throughput (store-postgres)", r.throughput.runs, "queries per step"));
  out.push("");
  out.push(throughputTable("throughput (store-sqlite, one file)", r.throughput.sqlite.runs, "store calls per step"));
  out.push("");
  out.push(
    throughputTable(
      "throughput (store-postgres, core's ScriptedRunner: no framework)",
      r.throughput.scripted.runs,
      "queries per step",
    ),
  );
  out.push("");
  const everyRun = (kind: string, runner = "sdk") =>
    r.throughput.allRuns
      .filter((t) => (t.store ?? "postgres") === kind && (t.runner ?? "sdk") === runner)
      .map((t) => `${t.processes}p ${f(t.stepsPerSecond, 0)}`)
      .join(", ");
  out.push(
    `Throughput: median of ${r.throughput.rounds} round(s); every run's steps/s: postgres ${everyRun("postgres")}; sqlite ${everyRun("sqlite")}; postgres, scripted runner ${everyRun("postgres", "scripted")}`,
  );
  out.push("");
  out.push(
    table([
      ["event latency (text delta -> followEvents)", "deltas", "p50 ms", "p99 ms"],
      [
        "store-memory, workload (3 chunks at once)",
        String(r.events.memory.n),
        f(r.events.memory.p50Ms, 3),
        f(r.events.memory.p99Ms, 3),
      ],
      [
        "store-postgres, workload (3 chunks at once)",
        String(r.events.postgres.n),
        f(r.events.postgres.p50Ms, 3),
        f(r.events.postgres.p99Ms, 3),
      ],
      [
        `store-memory, paced (${r.events.paced.chunks} chunks ${r.events.paced.paceMs} ms apart)`,
        String(r.events.paced.memory.n),
        f(r.events.paced.memory.p50Ms, 3),
        f(r.events.paced.memory.p99Ms, 3),
      ],
      [
        `store-postgres, paced (${r.events.paced.chunks} chunks ${r.events.paced.paceMs} ms apart)`,
        String(r.events.paced.postgres.n),
        f(r.events.paced.postgres.p50Ms, 3),
        f(r.events.paced.postgres.p99Ms, 3),
      ],
      [
        "store-sqlite FULL, workload, during (d)",
        String(r.events.sqlite.n),
        f(r.events.sqlite.p50Ms, 3),
        f(r.events.sqlite.p99Ms, 3),
      ],
      [
        "store-sqlite, workload, same process",
        String(r.events.sqliteSameProcess.n),
        f(r.events.sqliteSameProcess.p50Ms, 3),
        f(r.events.sqliteSameProcess.p99Ms, 3),
      ],
      [
        "store-sqlite, workload, other process",
        String(r.events.sqliteOtherProcess.n),
        f(r.events.sqliteOtherProcess.p50Ms, 3),
        f(r.events.sqliteOtherProcess.p99Ms, 3),
      ],
      [
        "store-sqlite, paced, same process",
        String(r.events.paced.sqliteSameProcess.n),
        f(r.events.paced.sqliteSameProcess.p50Ms, 3),
        f(r.events.paced.sqliteSameProcess.p99Ms, 3),
      ],
      [
        "store-sqlite, paced, other process",
        String(r.events.paced.sqliteOtherProcess.n),
        f(r.events.paced.sqliteOtherProcess.p50Ms, 3),
        f(r.events.paced.sqliteOtherProcess.p99Ms, 3),
      ],
    ]),
  );
  out.push("");
  const c = r.cancel;
  const cancelRow = (label: string, figures: CancelFigures) => [
    label,
    String(figures.n),
    f(figures.p50Ms, 3),
    f(figures.p95Ms, 3),
    f(figures.p99Ms, 3),
    f(figures.maxMs, 3),
    f(figures.call.p50Ms, 3),
    f(figures.call.p99Ms, 3),
  ];
  out.push(
    table([
      [
        "cancellation (cancelTurn called -> turn_cancelled at followEvents, model call in flight)",
        "cancels",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "cancelTurn answered: p50 ms",
        "p99 ms",
      ],
      cancelRow("store-memory", c.memory),
      cancelRow("store-sqlite (synchronous=FULL)", c.sqlite),
      cancelRow("store-postgres", c.postgres),
    ]),
  );
  out.push(
    `Cancellation: ${c.sessions} sessions x ${c.turnsPerSession} turns per store, the stores in turns session by session; ${c.model}`,
  );
  out.push("");
  out.push(renderRestate(r.restate));
  out.push("");
  out.push(renderPeers(r.peers));
  out.push("");
  out.push(
    table([
      ["target", "value", "limit", "status"],
      ...r.targets.map((t) => [
        t.name,
        t.limit.startsWith("within") ? pct(t.value) : f(t.value),
        t.limit,
        t.met ? "met" : "MISSED",
      ]),
    ]),
  );
  return out.join("\n");
}

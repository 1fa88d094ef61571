#!/usr/bin/env node
/**
 * `pnpm bench [--quick] [--pg-url <url>] [--out <file>]`: every phase in one run, so each figure is
 * a ratio to a baseline measured seconds before on the same machine. Prints the table and writes
 * the figures as JSON (default bench/results/latest.json, or latest-quick.json with --quick).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import pg from "pg";
import { InvalidInputError } from "@durable-agents/core";
import { parseArgs, type Args } from "./cli-args.js";
import { MemoryStore } from "@durable-agents/store-memory";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import { startPostgres, type PostgresServer } from "@durable-agents/store-postgres/testing";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { CancelPhase } from "./cancel-phase.js";
import { runRestatePhase } from "./restate-phase.js";
import { runPeersPhase, withRestateBare } from "./peers-phase.js";
import { DurablePhase, type DurablePhaseResult } from "./durable-phase.js";
import { runGrowthPhase, runRawGrowth, type BytesMeter, type GrowthLevel } from "./growth-phase.js";
import { machineInfo } from "./machine-info.js";
import { MeasuringStore } from "./measuring-store.js";
import {
  BENCH_CHECKPOINTS,
  FloorProbe,
  checkpoint,
  counterDelta,
  readCounters,
  serverInfo,
  type Counters,
} from "./postgres-probe.js";
import { RawSdkPhase } from "./raw-sdk-phase.js";
import { probeModelStep, type ModelStepProbe } from "./model-step-probe.js";
import { runPacedEvents, type PacedEventResult } from "./paced-event-phase.js";
import { RemoteFollower } from "./remote-follower.js";
import { SqliteFloorProbe, WalMeter, sqliteInfo } from "./sqlite-probe.js";
import {
  judgeTargets,
  renderReport,
  type BenchResults,
  type CancelFigures,
  type LatencyFigures,
  type StepFigures,
} from "./report.js";
import { percentile, summarize } from "./stats.js";
import {
  runThroughput,
  type ThroughputResult,
  type ThroughputStore,
  type ThroughputStoreKind,
} from "./throughput-phase.js";
import type { ThroughputRunner } from "./throughput-worker.js";
import { stepsPerTurn, type WorkloadSize } from "./workload.js";
import type { PhaseResult } from "./raw-sdk-phase.js";

interface Sizes {
  readonly overhead: WorkloadSize;
  readonly floorRounds: number;
  readonly growthSessions: number;
  readonly throughput: { sessions: number; turns: number; concurrency: number };
  readonly pacedTurns: number;
  readonly throughputRounds: number;
  readonly probeRounds: number;
  /** Cancelled turns: sessions per store (after the warm-up ones), each with `turns` cancelled turns. */
  readonly cancel: { sessions: number; turns: number; warmupSessions: number };
  /** The Restate row: history levels, and timed turns of each variant per level. */
  readonly restate: { sizes: readonly number[]; turns: number };
  /** The peers row: history levels, timed rounds of each row per level, warm-up rounds, floor writes per round. */
  readonly peers: { levels: readonly number[]; rounds: number; warmupRounds: number; floorWritesPerRound: number };
}

const FULL: Sizes = {
  overhead: { sessions: 20, turns: 5, toolCalls: 2, warmupSessions: 3 },
  floorRounds: 300,
  growthSessions: 6,
  // 12 queued turns a session (3 before): each session's claim is spread over 60 steps, and a run lasts
  // seconds, not under one (bench/README.md, "Steps per second without the framework").
  throughput: { sessions: 64, turns: 12, concurrency: 16 },
  pacedTurns: 10,
  throughputRounds: 3,
  probeRounds: 15,
  cancel: { sessions: 20, turns: 10, warmupSessions: 1 },
  restate: { sizes: [10, 100, 1000], turns: 64 },
  peers: { levels: [10, 100, 1000], rounds: 20, warmupRounds: 10, floorWritesPerRound: 10 },
};

const QUICK: Sizes = {
  overhead: { sessions: 4, turns: 3, toolCalls: 2, warmupSessions: 1 },
  floorRounds: 100,
  growthSessions: 2,
  throughput: { sessions: 12, turns: 2, concurrency: 16 },
  pacedTurns: 3,
  throughputRounds: 1,
  probeRounds: 3,
  cancel: { sessions: 3, turns: 3, warmupSessions: 1 },
  restate: { sizes: [10, 100], turns: 3 },
  peers: { levels: [10, 100], rounds: 3, warmupRounds: 2, floorWritesPerRound: 10 },
};

const GROWTH_LEVELS = [10, 100, 1000] as const;
const PROCESS_COUNTS = [1, 2, 4] as const;
const PACED = { chunks: 24, paceMs: 10 } as const;
/** store-sqlite's default: how often a store looks for other processes' writes. */
const WATCH_INTERVAL_MS = 25;

const log = (text: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${text}\n`);

/** A turn's steps alternate model call, tool call, ..., model call: even positions are model calls. */
function figures(result: PhaseResult, perTurn: number): StepFigures {
  const s = summarize(result.stepMs);
  const model = summarize(result.stepMs.filter((_, i) => (i % perTurn) % 2 === 0));
  const tool = summarize(result.stepMs.filter((_, i) => (i % perTurn) % 2 === 1));
  return {
    steps: result.steps,
    medianMs: s.median,
    p99Ms: s.p99,
    meanMs: s.mean,
    wallMs: result.wallMs,
    cpuMsPerStep: result.cpuMs / result.steps,
    modelSteps: { n: model.n, medianMs: model.median, p99Ms: model.p99 },
    toolSteps: { n: tool.n, medianMs: tool.median, p99Ms: tool.p99 },
  };
}

async function withDatabase<T>(adminUrl: string, body: (url: string) => Promise<T>): Promise<T> {
  const name = `durable_agents_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  try {
    return await body(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const sizes = args.quick ? QUICK : FULL;
  const started = performance.now();
  const machine = machineInfo();
  let server: PostgresServer | null = null;
  if (!args.pgUrl) {
    log("starting a private PostgreSQL (fsync on, synchronous_commit on)");
    // BENCH_PG_CHECKPOINTS=server leaves the server's own checkpoint settings (for an A/B of the bench's).
    const own = process.env.BENCH_PG_CHECKPOINTS === "server";
    server = await startPostgres({ fsync: true, ...(own ? {} : { settings: BENCH_CHECKPOINTS }) });
  }
  try {
    const results = await withDatabase(args.pgUrl ?? server!.connectionString, (url) =>
      runAll(url, sizes, args, machine, started),
    );
    mkdirSync(dirname(args.out), { recursive: true });
    writeFileSync(args.out, `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(`${renderReport(results)}\n\nFigures written to ${args.out}\n`);
  } finally {
    await server?.stop();
  }
}

async function runAll(
  url: string,
  sizes: Sizes,
  args: Args,
  machine: ReturnType<typeof machineInfo>,
  started: number,
): Promise<BenchResults> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on("error", () => {});
  const stores: { close(): Promise<void> | void }[] = [];
  // The store-sqlite files, in one temporary folder on the same disk as the private PostgreSQL.
  const sqliteDir = tempStoreDir("durable-agents-bench-sqlite-");
  try {
    await migrate(pool);
    await migrate(pool, { schema: "bench_growth" });
    const server = await serverInfo(pool);
    const size = sizes.overhead;
    // Each phase that measures PostgreSQL starts after a checkpoint of the bench's (see BENCH_CHECKPOINTS).
    const checkpoints = await checkpoint(pool);

    // (a), (b), the floor and (c) take turns, one session each, so that a change in the machine's
    // load during the run hits every one of them alike.
    log(
      `(a) raw SDK, (b) store-memory, floor, (c) store-postgres, floor, (d) store-sqlite FULL, floor, (e) store-sqlite NORMAL, in turns: ${size.sessions} sessions x ${size.turns} turns x ${size.toolCalls} tool calls each`,
    );
    const rawPhase = new RawSdkPhase(size);
    const memoryPhase = new DurablePhase(new MemoryStore(), size, "mem");
    const pgStore = new PostgresStore({ pool });
    stores.push(pgStore);
    const postgresPhase = new DurablePhase(pgStore, size, "pg");
    const floorProbe = new FloorProbe(pool);
    await floorProbe.prepare();
    const floorPerRound = Math.ceil(sizes.floorRounds / size.sessions);
    // (d) and (e): store-sqlite with synchronous FULL and NORMAL, each on its own file, each with
    // its floor: one committed single-row write to the same file with the same setting.
    const sqliteFull = new SqliteStore({ path: sqliteDir.file("overhead-full.db"), synchronous: "full" });
    const sqliteNormal = new SqliteStore({ path: sqliteDir.file("overhead-normal.db"), synchronous: "normal" });
    stores.push(sqliteFull, sqliteNormal);
    const sqliteFullPhase = new DurablePhase(sqliteFull, size, "sqf");
    const sqliteNormalPhase = new DurablePhase(sqliteNormal, size, "sqn");
    const sqliteFullFloor = new SqliteFloorProbe(sqliteFull.path, "full");
    const sqliteNormalFloor = new SqliteFloorProbe(sqliteNormal.path, "normal");
    stores.push(sqliteFullFloor, sqliteNormalFloor);
    let pgWal = 0;
    let pgWrites = 0;
    try {
      for (let s = 0; s < size.warmupSessions + size.sessions; s++) {
        const measured = s >= size.warmupSessions;
        await rawPhase.session(s, measured);
        await memoryPhase.session(s, measured);
        if (measured) await floorProbe.batch(floorPerRound);
        const before = await readCounters(pool);
        await postgresPhase.session(s, measured);
        const delta = counterDelta(before, await readCounters(pool));
        if (measured) {
          pgWal += delta.walBytes;
          pgWrites += delta.writeTransactions;
        }
        if (measured) sqliteFullFloor.batch(floorPerRound);
        await sqliteFullPhase.session(s, measured);
        if (measured) sqliteNormalFloor.batch(floorPerRound);
        await sqliteNormalPhase.session(s, measured);
      }
    } finally {
      await memoryPhase.stop();
      await postgresPhase.stop();
      await sqliteFullPhase.stop();
      await sqliteNormalPhase.stop();
    }
    const raw = rawPhase.result();
    const memory = memoryPhase.result();
    const postgres = postgresPhase.result();
    const floor = floorProbe.result();
    const sqliteFullResult = sqliteFullPhase.result();
    const sqliteNormalResult = sqliteNormalPhase.result();
    const sqliteFloorFull = sqliteFullFloor.result();
    const sqliteFloorNormal = sqliteNormalFloor.result();

    log(`growth on store-memory: history of ${GROWTH_LEVELS.join(", ")} items`);
    const measuring = new MeasuringStore(new MemoryStore());
    const memoryMeter: BytesMeter = {
      unit: "bytes of JSON stored by the commits (head + appended history + events)",
      start: async (sessionId) => measuring.reset(sessionId),
      stop: async (sessionId) => {
        const written = measuring.written(sessionId);
        return {
          bytes: written.bytes,
          writes: written.commits,
          parts: { head: written.headBytes, history: written.historyBytes, events: written.eventBytes },
        };
      },
    };
    const growthMemory = await runGrowthPhase({
      store: measuring,
      meter: memoryMeter,
      prefix: "gm",
      levels: GROWTH_LEVELS,
      sessionsPerLevel: sizes.growthSessions,
      toolCalls: size.toolCalls,
    });

    log("the adapter's model step next to a raw SDK model call, on the same stored histories");
    const modelStep: ModelStepProbe[] = [];
    for (const items of GROWTH_LEVELS) {
      // The first `items` items are the seed turns of a growth session (whole turns).
      const stored = (await measuring.readHistory(`gm-h${items}-s0`)).slice(0, items);
      modelStep.push(await probeModelStep(stored, sizes.probeRounds));
    }

    log("growth on store-postgres");
    const growthStore = new PostgresStore({ pool, schema: "bench_growth" });
    stores.push(growthStore);
    let growthStart: Counters | null = null;
    const pgMeter: BytesMeter = {
      unit: "WAL bytes (pg_current_wal_insert_lsn delta), the whole server",
      start: async () => {
        growthStart = await readCounters(pool);
      },
      stop: async () => {
        const delta = counterDelta(growthStart!, await readCounters(pool));
        return { bytes: delta.walBytes, writes: delta.writeTransactions };
      },
    };
    await checkpoint(pool);
    const growthPostgres = await runGrowthPhase({
      store: growthStore,
      meter: pgMeter,
      prefix: "gp",
      levels: GROWTH_LEVELS,
      sessionsPerLevel: sizes.growthSessions,
      toolCalls: size.toolCalls,
    });

    log("growth on store-sqlite (synchronous FULL)");
    const growthSqliteStore = new SqliteStore({ path: sqliteDir.file("growth.db") });
    stores.push(growthSqliteStore);
    const walMeter = new WalMeter(growthSqliteStore.path);
    stores.push(walMeter);
    const growthSqlite = await runGrowthPhase({
      store: growthSqliteStore,
      meter: walMeter,
      prefix: "gs",
      levels: GROWTH_LEVELS,
      sessionsPerLevel: sizes.growthSessions,
      toolCalls: size.toolCalls,
    });

    log("growth reference on the raw SDK");
    const growthRaw = await runRawGrowth(GROWTH_LEVELS, sizes.growthSessions, size.toolCalls);

    log(`event latency with a paced stream (${PACED.chunks} chunks, ${PACED.paceMs} ms apart) on both stores`);
    const pacedMemory = (
      await runPacedEvents({ store: new MemoryStore(), prefix: "em", turns: sizes.pacedTurns, ...PACED })
    ).local;
    const pacedPostgres = (await runPacedEvents({ store: pgStore, prefix: "ep", turns: sizes.pacedTurns, ...PACED }))
      .local;

    // store-sqlite: a client in this process and one in another process, following the same
    // sessions on the same file; the other process is woken by its store's data_version watch.
    log(
      `event latency on store-sqlite, a follower in this process and one in another (watch every ${WATCH_INTERVAL_MS} ms): workload and paced stream`,
    );
    const eventsStore = new SqliteStore({ path: sqliteDir.file("events.db"), watchIntervalMs: WATCH_INTERVAL_MS });
    stores.push(eventsStore);
    const remote = await RemoteFollower.start(eventsStore.path, WATCH_INTERVAL_MS);
    let sqliteEvents: DurablePhaseResult;
    let pacedSqlite: PacedEventResult;
    try {
      const eventsPhase = new DurablePhase(eventsStore, size, "sqe", remote);
      try {
        for (let s = 0; s < size.warmupSessions + size.sessions; s++)
          await eventsPhase.session(s, s >= size.warmupSessions);
      } finally {
        await eventsPhase.stop();
      }
      sqliteEvents = eventsPhase.result();
      pacedSqlite = await runPacedEvents({
        store: eventsStore,
        prefix: "es",
        turns: sizes.pacedTurns,
        ...PACED,
        remote,
      });
    } finally {
      await remote.stop();
    }

    // Cancellation latency: the three stores take turns session by session, each session a row of
    // turns cancelled while their model call is in flight.
    const cancelSize = sizes.cancel;
    log(
      `cancellation latency (cancelTurn -> turn_cancelled at a follower, model call in flight): memory, store-sqlite, store-postgres in turns, ${cancelSize.sessions} sessions x ${cancelSize.turns} cancelled turns each`,
    );
    const cancelSqliteStore = new SqliteStore({ path: sqliteDir.file("cancel.db") });
    stores.push(cancelSqliteStore);
    const cancelPhases = {
      memory: new CancelPhase(new MemoryStore(), cancelSize.turns, "cm"),
      sqlite: new CancelPhase(cancelSqliteStore, cancelSize.turns, "cs"),
      postgres: new CancelPhase(pgStore, cancelSize.turns, "cp"),
    };
    try {
      for (let s = 0; s < cancelSize.warmupSessions + cancelSize.sessions; s++) {
        const measured = s >= cancelSize.warmupSessions;
        await cancelPhases.memory.session(s, measured);
        await cancelPhases.sqlite.session(s, measured);
        await cancelPhases.postgres.session(s, measured);
      }
    } finally {
      for (const phase of Object.values(cancelPhases)) await phase.stop();
    }

    // The Restate engine next to a bare Restate handler, on a private restate-server.
    const restateFigures = await runRestatePhase({ sizes: sizes.restate.sizes, turns: sizes.restate.turns, log });

    // The peers (DBOS, LangGraph) on this PostgreSQL, in turns with a store-postgres session and the floor.
    const peers = withRestateBare(
      await runPeersPhase({ url, pool, ...sizes.peers, log, checkpoint: () => checkpoint(pool) }),
      restateFigures,
    );

    // Rounds of 1, 2 and 4 processes on each store, in turns, and on store-postgres with core's
    // ScriptedRunner (the same turns, no framework); each count is represented by its median run.
    const allRuns: ThroughputResult[] = [];
    const targets: { readonly store: ThroughputStore; readonly runner: ThroughputRunner }[] = [
      { store: { kind: "postgres", connectionString: url }, runner: "sdk" },
      { store: { kind: "sqlite", dir: sqliteDir.dir }, runner: "sdk" },
      { store: { kind: "postgres", connectionString: url }, runner: "scripted" },
    ];
    await checkpoint(pool);
    for (let round = 1; round <= sizes.throughputRounds; round++) {
      for (const { store: target, runner } of targets) {
        for (const processes of PROCESS_COUNTS) {
          log(
            `throughput round ${round}, store-${target.kind}${runner === "sdk" ? "" : ` (${runner} runner)`}: ${processes} worker process(es), ${sizes.throughput.sessions} sessions`,
          );
          allRuns.push(
            await runThroughput({ target, processes, round, toolCalls: size.toolCalls, runner, ...sizes.throughput }),
          );
        }
      }
    }
    const medianRuns = (kind: ThroughputStoreKind, runner: ThroughputRunner = "sdk") =>
      PROCESS_COUNTS.map((processes) => {
        const ofCount = allRuns
          .filter((run) => run.store === kind && run.runner === runner && run.processes === processes)
          .sort((a, b) => a.stepsPerSecond - b.stepsPerSecond);
        return ofCount[(ofCount.length - 1) >> 1]!;
      });
    // The median runs of 1, 2 and 4 processes, and how 2 and 4 compare with 1.
    const scaling = (ofCounts: ThroughputResult[]) => ({
      runs: ofCounts,
      speedup2: ofCounts[1]!.stepsPerSecond / ofCounts[0]!.stepsPerSecond,
      speedup4: ofCounts[2]!.stepsPerSecond / ofCounts[0]!.stepsPerSecond,
    });
    const runs = medianRuns("postgres");
    const sqliteRuns = medianRuns("sqlite");
    const scriptedRuns = medianRuns("postgres", "scripted");

    const perTurn = stepsPerTurn(size.toolCalls);
    const rawFigures = figures(raw, perTurn);
    const memoryFigures = figures(memory, perTurn);
    const postgresFigures = figures(postgres, perTurn);
    const sqliteFullFigures = figures(sqliteFullResult, perTurn);
    const sqliteNormalFigures = figures(sqliteNormalResult, perTurn);
    const partial: Omit<BenchResults, "targets"> = {
      generatedAt: new Date().toISOString(),
      mode: args.quick ? "quick" : "full",
      durationSeconds: (performance.now() - started) / 1000,
      machine,
      postgres: {
        ...server,
        server: args.pgUrl ? "given URL" : "private (startPostgres)",
        checkpointsByBench: checkpoints,
      },
      sqlite: { ...sqliteInfo(sqliteFull.path), folder: sqliteDir.dir, watchIntervalMs: WATCH_INTERVAL_MS },
      workload: {
        stepDefinition:
          "a step is one model call or one tool call (ResumeTurn and approvals are bookkeeping, not counted)",
        sessions: size.sessions,
        turnsPerSession: size.turns,
        toolCallsPerTurn: size.toolCalls,
        stepsPerTurn: stepsPerTurn(size.toolCalls),
        model: "ScriptedModel from @durable-agents/openai-agents/testing (3 streamed chunks per answer), no network",
      },
      overhead: {
        rawSdk: rawFigures,
        memory: memoryFigures,
        postgres: postgresFigures,
        sqlite: sqliteFullFigures,
        sqliteNormal: sqliteNormalFigures,
        ratios: {
          memoryToRaw: memoryFigures.medianMs / rawFigures.medianMs,
          postgresToRaw: postgresFigures.medianMs / rawFigures.medianMs,
          memoryToRawP99: memoryFigures.p99Ms / rawFigures.p99Ms,
          memoryToRawModelSteps: memoryFigures.modelSteps.medianMs / rawFigures.modelSteps.medianMs,
          postgresToRawModelSteps: postgresFigures.modelSteps.medianMs / rawFigures.modelSteps.medianMs,
          postgresToRawP99: postgresFigures.p99Ms / rawFigures.p99Ms,
          sqliteToRaw: sqliteFullFigures.medianMs / rawFigures.medianMs,
          sqliteToRawP99: sqliteFullFigures.p99Ms / rawFigures.p99Ms,
          sqliteToRawModelSteps: sqliteFullFigures.modelSteps.medianMs / rawFigures.modelSteps.medianMs,
          sqliteNormalToRaw: sqliteNormalFigures.medianMs / rawFigures.medianMs,
          sqliteNormalToRawP99: sqliteNormalFigures.p99Ms / rawFigures.p99Ms,
          sqliteNormalToRawModelSteps: sqliteNormalFigures.modelSteps.medianMs / rawFigures.modelSteps.medianMs,
          postgresToMemoryCpu: postgresFigures.cpuMsPerStep / memoryFigures.cpuMsPerStep,
        },
      },
      floor: {
        singleRowWrite: floor,
        postgresStepToWrite: postgresFigures.medianMs / floor.median,
        writeTransactionsPerStep: pgWrites / postgres.steps,
        walBytesPerStep: pgWal / postgres.steps,
      },
      sqliteFloor: {
        full: sqliteFloorFull,
        normal: sqliteFloorNormal,
        fullStepToWrite: sqliteFullFigures.medianMs / sqliteFloorFull.median,
        normalStepToWrite: sqliteNormalFigures.medianMs / sqliteFloorNormal.median,
        normalStepToFullWrite: sqliteNormalFigures.medianMs / sqliteFloorFull.median,
      },
      growth: {
        memory: minusRaw(growthMemory, growthRaw),
        postgres: minusRaw(growthPostgres, growthRaw),
        sqlite: minusRaw(growthSqlite, growthRaw),
        rawSdkReference: growthRaw,
        modelStep,
        bytesUnit: { memory: memoryMeter.unit, postgres: pgMeter.unit, sqlite: walMeter.unit },
      },
      throughput: {
        turnsPerSession: sizes.throughput.turns,
        rounds: sizes.throughputRounds,
        ...scaling(runs),
        allRuns,
        sqlite: scaling(sqliteRuns),
        scripted: scaling(scriptedRuns),
      },
      events: {
        memory: latency(memory.eventLatencyMs),
        postgres: latency(postgres.eventLatencyMs),
        sqlite: latency(sqliteFullResult.eventLatencyMs),
        sqliteSameProcess: latency(sqliteEvents.eventLatencyMs),
        sqliteOtherProcess: latency(sqliteEvents.remoteEventLatencyMs),
        paced: {
          ...PACED,
          memory: latency(pacedMemory),
          postgres: latency(pacedPostgres),
          sqliteSameProcess: latency(pacedSqlite.local),
          sqliteOtherProcess: latency(pacedSqlite.remote),
        },
      },
      cancel: {
        sessions: cancelSize.sessions,
        turnsPerSession: cancelSize.turns,
        model:
          "ScriptedRunner from @durable-agents/core/testing, a `hang model` script (the call waits for its abort signal)",
        memory: cancelFigures(cancelPhases.memory.result()),
        sqlite: cancelFigures(cancelPhases.sqlite.result()),
        postgres: cancelFigures(cancelPhases.postgres.result()),
      },
      restate: restateFigures,
      peers,
    };
    return { ...partial, targets: judgeTargets(partial) };
  } finally {
    for (const store of stores.reverse()) await store.close();
    await pool.end();
    sqliteDir.remove();
  }
}

function latency(samples: readonly number[]): LatencyFigures {
  return { n: samples.length, p50Ms: percentile(samples, 0.5), p99Ms: percentile(samples, 0.99) };
}

function cancelFigures(result: { latencyMs: readonly number[]; callMs: readonly number[] }): CancelFigures {
  const s = summarize(result.latencyMs);
  return {
    n: s.n,
    p50Ms: percentile(result.latencyMs, 0.5),
    p95Ms: percentile(result.latencyMs, 0.95),
    p99Ms: s.p99,
    maxMs: s.max,
    call: { p50Ms: percentile(result.callMs, 0.5), p99Ms: percentile(result.callMs, 0.99) },
  };
}

function minusRaw(levels: GrowthLevel[], raw: GrowthLevel[]): GrowthLevel[] {
  return levels.map((level) => {
    const reference = raw.find((r) => r.historyItems === level.historyItems);
    return { ...level, overheadMs: reference ? level.medianMs - reference.medianMs : Number.NaN };
  });
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    if (InvalidInputError.isInstance(error)) {
      console.error((error as Error).message);
      process.exit(2);
    }
    console.error(error);
    process.exit(1);
  },
);

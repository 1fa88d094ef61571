/**
 * The peers row: the cheapest durable step of each framework, on the bench's own PostgreSQL, taking
 * turns round by round with a store-postgres session and with batches of the single-row INSERT
 * floor, at 10, 100 and 1,000 history items.
 *
 * - store-postgres: a session of core's `Worker` on `PostgresStore` (schema `bench_peers`), runner
 *   core's `ScriptedRunner`, the Restate row's turn (model, tool, model, tool, model: 5 steps).
 *   History items: the session's stored history. Its worker keeps an idle session's lease for the
 *   default `lingerMs` (1 s), so the round's session, filled earlier, is taken anew for its round
 *   (`findWork`, the lease claimed in the turn's first commit).
 * - store-postgres, held session: the same, on a second worker whose idle sessions keep their lease
 *   until their round (`lingerMs` and `leaseTtlMs` of HELD_LEASE_MS): the round's message comes to a
 *   session its worker holds, as a conversation's next message does within `lingerMs`, and as each
 *   DBOS round comes to a running workflow. Its turn's start rides with the first model call's commit
 *   (`turnStartHoldMs`, default).
 * - DBOS: one workflow (`DBOS.registerWorkflow`) whose steps are `DBOS.runStep` closures returning
 *   the payload sizes of the session's step results (step-payloads.ts), system database in schema
 *   `bench_dbos`. History items: the steps the workflow has already done; a round is its next 5.
 * - LangGraph: a `StateGraph` over `MessagesAnnotation` with one node that appends one message per
 *   super-step (contents of the same sizes), checkpointed by `PostgresSaver` (schema
 *   `bench_langgraph`) with durability "sync". History items: messages in the thread's state; a
 *   round is one `invoke` that runs 5 super-steps.
 *
 * Every history level drifts up by the rounds (6 items per session turn, 5 per DBOS or LangGraph
 * round), alike for the three. A step is timed as in the other rows: from the end of the previous
 * step (or the start of the round) to the return of its own body (the model call, the tool body,
 * the `runStep` closure, the node function), the last step until the round's end is seen (the
 * session's `turn_completed` at a follower; the workflow handing the round back; `invoke`
 * returning), so each write is charged to a step. Around each round, outside its time: the
 * transaction IDs and WAL bytes the whole server used (postgres-probe.ts), this process's CPU
 * (`process.cpuUsage`) and the PostgreSQL server's (its processes in /proc).
 */
import { readFileSync } from "node:fs";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { AIMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type pg from "pg";
import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import { waitForIdleWorker } from "./durable-phase.js";
import { FloorProbe, type FloorResult, counterDelta, readCounters } from "./postgres-probe.js";
import { markedScriptedRunner, StepMarks } from "./marked-runner.js";
import { ownCpuMs, type Summary, summarize } from "./stats.js";
import { STEP_PAYLOAD_BYTES, payloadText, stepPayloadBytes } from "./step-payloads.js";
import type { RestateFigures } from "./restate-phase.js";
import { postgresCpuTicks } from "./throughput-phase.js";

export type PeerName = "postgres" | "postgresHeld" | "dbos" | "langgraph";

export interface PeerLevel {
  /** The level: at least this many history items before the level's first round. */
  readonly historyItems: number;
  /** History items before the first timed round (the session's fill ends on a whole turn) and after the last. */
  readonly historyItemsAtStart: number;
  readonly historyItemsAtEnd: number;
  /** Every timed step of the level's rounds. */
  readonly step: Summary;
  /** Transactions that got a transaction ID (wrote), the whole server, per step. */
  readonly writeTransactionsPerStep: number;
  readonly walBytesPerStep: number;
  /**
   * WAL bytes per step of each round, in the order they ran (absent in older runs):
   * the whole server's WAL during the round, so a round that met the server's own maintenance (an
   * autovacuum, an autoanalyze writing statistics) of any row's tables carries it.
   */
  readonly walBytesPerStepByRound?: readonly number[];
  /** CPU ms per step: this process, and the PostgreSQL server's processes. */
  readonly cpuMsPerStep: { readonly process: number; readonly postgres: number };
  /**
   * store-postgres only: per step, each round's time minus the time inside the runner (the scripted
   * model's calls and the tool calls), median over the rounds: what the engine and the store cost.
   */
  readonly outsideRunnerMsPerStep?: number;
  /**
   * store-postgres only: every step's time minus the runner call that ended in it (the step's model
   * call or tool call): the step as the engine and the store make it, comparable step by step with
   * the peers' steps, whose bodies do nothing but make their payload.
   */
  readonly outsideRunnerStep?: Summary;
}

export interface PeerRow {
  readonly name: string;
  /** The packages measured, with their installed versions. */
  readonly packages: Record<string, string>;
  /** What one step is for this row. */
  readonly step: string;
  readonly stepsPerRound: number;
  readonly levels: readonly PeerLevel[];
}

export interface PeerRatioLevel {
  readonly historyItems: number;
  /** store-postgres median ms per step / the peer's. */
  readonly postgresToDbos: number;
  readonly postgresToLangGraph: number;
  /** The same with store-postgres's steps outside the runner (median): the engine and the store alone. */
  readonly postgresOutsideRunnerToDbos: number;
  readonly postgresOutsideRunnerToLangGraph: number;
  /** Median ms per step / the floor's median single-row write (the floor batches of this level). */
  readonly postgresToFloor: number;
  readonly dbosToFloor: number;
  readonly langGraphToFloor: number;
  readonly floorMedianMs: number;
  /** The held session's median ms per step / DBOS's, and / the floor's median write. */
  readonly postgresHeldToDbos: number;
  readonly postgresHeldToFloor: number;
}

export interface PeersFigures {
  readonly rounds: number;
  readonly warmupRounds: number;
  readonly floorWritesPerRound: number;
  /** The sizes the DBOS steps return and the LangGraph messages hold, in turn. */
  readonly stepPayloadBytes: readonly number[];
  readonly postgres: PeerRow;
  /** store-postgres with the round's session held by its worker (the lease kept since its fill). */
  readonly postgresHeld: PeerRow;
  readonly dbos: PeerRow;
  readonly langgraph: PeerRow;
  /** The single-row INSERT floor, every batch taken between the rounds. */
  readonly floor: FloorResult;
  readonly ratios: readonly PeerRatioLevel[];
}

const STEPS = 5;
/** History items one timed session turn adds: the message, two calls, their two results, the answer. */
const SESSION_TURN_ITEMS = 6;
const SESSION_AGENT = "peers";
const HELD_AGENT = "peers-held";
/** The held row's worker keeps idle sessions' leases this long (`lingerMs` and `leaseTtlMs`): past every level's rounds. */
const HELD_LEASE_MS = 300_000;

/** CPU ms of the server's processes between two readings (NaN when /proc does not show them). */
function serverCpuMs(before: Map<number, number> | null, after: Map<number, number> | null): number {
  if (!before || !after) return Number.NaN;
  let ticks = 0;
  for (const [pid, value] of after) ticks += value - (before.get(pid) ?? 0);
  return ticks * 10; // USER_HZ 100
}

/** What one row collects at one level. */
class LevelTally {
  readonly steps: number[] = [];
  xacts = 0;
  wal = 0;
  readonly walRounds: number[] = [];
  cpuProcess = 0;
  cpuPostgres = 0;
  readonly outside: number[] = [];
  readonly outsideSteps: number[] = [];

  level(historyItems: number, historyItemsAtStart: number, historyItemsAtEnd: number): PeerLevel {
    const n = this.steps.length;
    return {
      historyItems,
      historyItemsAtStart,
      historyItemsAtEnd,
      step: summarize(this.steps),
      writeTransactionsPerStep: this.xacts / n,
      walBytesPerStep: this.wal / n,
      walBytesPerStepByRound: this.walRounds,
      cpuMsPerStep: { process: this.cpuProcess / n, postgres: this.cpuPostgres / n },
      ...(this.outside.length > 0
        ? { outsideRunnerMsPerStep: summarize(this.outside).median, outsideRunnerStep: summarize(this.outsideSteps) }
        : {}),
    };
  }
}

function installedVersion(name: string): string {
  try {
    const url = new URL(`../node_modules/${name}/package.json`, import.meta.url);
    return (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

/** Step times of one round: from `started` through each mark; the last step ends at `ended`. */
function stepTimes(started: number, marks: readonly number[], ended: number): number[] {
  if (marks.length !== STEPS) throw new Error(`a round made ${marks.length} steps, not ${STEPS}`);
  const bounds = [started, ...marks.slice(0, -1), ended];
  return bounds.slice(1).map((end, i) => end - bounds[i]!);
}

/**
 * After a level's fills, before its rounds: every table of the bench's database (the rows', the
 * floor's and what the earlier phases left) vacuumed and analyzed now, with autovacuum off for them
 * from then on. The server's own maintenance ran where it fell: at the 1,000-item level, autovacuum
 * worked through the tables the fills had grown (LangGraph's megabyte checkpoints) and those of the
 * earlier phases while the rounds went on, and its WAL and its disk writes went to whichever row's
 * round was running (every row's WAL per step rose together from one round on, by
 * `ROUNDS_WAL=1 node probe/peers-ab.mjs`). Each row's maintenance of what its fills wrote is done
 * here, unmeasured; what its rounds write (a few hundred rows per level) waits for the next level's.
 * A row's own pruning of the pages it updates (PostgreSQL's, in the statement) stays in its rounds.
 *
 * The system catalogs keep their autovacuum (a catalog's options cannot be changed), so what this
 * writes to them is cleaned up here too: a table's options are set once (each `ALTER TABLE` writes its
 * `pg_class` row), and after the tables' statistics (which `ANALYZE` writes to `pg_statistic`) the
 * catalogs are analyzed, then vacuumed. `ROUNDS_WAL=1 node probe/peers-ab.mjs` names each autovacuum
 * and autoanalyze with the phase it fell in: the catalogs' fell in the 1,000-item fills, before this
 * and after it, and none in a round.
 */
async function settleTables(pool: pg.Pool): Promise<void> {
  const tables = await pool.query<{ t: string; settled: boolean }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS t,
            coalesce('autovacuum_enabled=false' = ANY (c.reloptions), false) AS settled
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1`,
  );
  for (const { t, settled } of tables.rows) {
    if (!settled)
      await pool.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)`);
  }
  if (tables.rows.length > 0) await pool.query(`VACUUM (ANALYZE) ${tables.rows.map((row) => row.t).join(", ")}`);
  const catalogs = await pool.query<{ t: string }>(
    `SELECT format('pg_catalog.%I', relname) AS t FROM pg_class
      WHERE relnamespace = 'pg_catalog'::regnamespace AND relkind = 'r' AND NOT relisshared ORDER BY relname = 'pg_statistic', 1`,
  );
  const list = catalogs.rows.map((row) => row.t).join(", ");
  await pool.query(`ANALYZE ${list}`);
  await pool.query(`VACUUM ${list}`);
}

/** One measured round's place in the WAL (`runPeersPhase`'s `onRound`). */
export interface PeersRoundWal {
  readonly row: string;
  readonly items: number;
  /** The round's index in its level (warm-up rounds first). */
  readonly round: number;
  readonly steps: number;
  readonly walFrom: bigint;
  readonly walTo: bigint;
}

/** A queue of rounds handed to the DBOS workflow from the bench, each answered when it is done. */
type WorkflowCommand = { readonly sizes: readonly number[] } | "stop";

class Mailbox {
  private readonly commands: { command: WorkflowCommand; done: () => void }[] = [];
  private waiting: (() => void) | null = null;

  send(command: WorkflowCommand): Promise<void> {
    return new Promise<void>((done) => {
      this.commands.push({ command, done });
      this.waiting?.();
      this.waiting = null;
    });
  }

  async next(): Promise<{ command: WorkflowCommand; done: () => void }> {
    while (this.commands.length === 0)
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
    return this.commands.shift()!;
  }
}

export async function runPeersPhase(options: {
  readonly url: string;
  readonly pool: pg.Pool;
  readonly levels: readonly number[];
  readonly rounds: number;
  readonly warmupRounds: number;
  readonly floorWritesPerRound: number;
  readonly log: (line: string) => void;
  /**
   * Takes a checkpoint of the server (the bench's `checkpoint`), before each level's fills, so that the
   * page images the first write of each page after it logs fall in the fills and not in the rounds.
   */
  readonly checkpoint?: () => Promise<boolean>;
  /**
   * Told each measured round's WAL range (bytes from 0, as `pg_current_wal_insert_lsn()`), for a
   * probe that reads a round's records with pg_waldump (`bench/probe/peers-ab.mjs`).
   */
  readonly onRound?: (round: PeersRoundWal) => void;
}): Promise<PeersFigures> {
  const { pool, log } = options;
  const steps = new StepMarks();
  const mark = () => steps.mark();

  // store-postgres, with the Restate row's runner and turn.
  const runner = markedScriptedRunner(steps);
  await migrate(pool, { schema: "bench_peers" });
  // Probes only (bench/probe/peers-ab.mjs): BENCH_COMPRESS_HEADS=1 makes the store write compressed
  // heads (compressHeads; the store's default is false), for an A/B of the opt-in low-WAL settings.
  const store = new PostgresStore({
    pool,
    schema: "bench_peers",
    ...(process.env.BENCH_COMPRESS_HEADS === "1" ? { compressHeads: true } : {}),
  });
  const definition = defineSession({ name: SESSION_AGENT, runner, policies: { look_up: { effect: "read" } } });
  // Probes only (bench/probe/peers-ab.mjs): BENCH_READ_TOOL_HOLD_MS sets both store-postgres rows'
  // readToolHoldMs (core's default is 0), for an A/B of the model result held for its reads.
  const readHold = process.env.BENCH_READ_TOOL_HOLD_MS;
  const readHoldOption = readHold === undefined ? {} : { readToolHoldMs: Number(readHold) };
  const worker = new Worker({ store, sessions: [definition], ...readHoldOption }).start();
  const heldDefinition = defineSession({ name: HELD_AGENT, runner, policies: { look_up: { effect: "read" } } });
  // Probes only (bench/probe/peers-ab.mjs): BENCH_TURN_START_HOLD_MS sets the held row's
  // turnStartHoldMs (0: every turn's start committed before its first model call), for an A/B of the hold.
  const hold = process.env.BENCH_TURN_START_HOLD_MS;
  const heldWorker = new Worker({
    store,
    sessions: [heldDefinition],
    leaseTtlMs: HELD_LEASE_MS,
    lingerMs: HELD_LEASE_MS,
    ...(hold === undefined ? {} : { turnStartHoldMs: Number(hold) }),
    ...readHoldOption,
  }).start();
  const client = new SessionClient({ store, agents: [SESSION_AGENT, HELD_AGENT] });

  // DBOS: one workflow per round, fed its steps from here: first the fill, then the timed round.
  const mailboxes = new Map<string, Mailbox>();
  const mailbox = (key: string) => {
    let box = mailboxes.get(key);
    if (!box) {
      box = new Mailbox();
      mailboxes.set(key, box);
    }
    return box;
  };
  const dbosWorkflow = DBOS.registerWorkflow(
    async (key: string): Promise<number> => {
      let done = 0;
      for (;;) {
        const { command, done: answer } = await mailbox(key).next();
        if (command === "stop") {
          answer();
          return done;
        }
        for (const size of command.sizes) {
          const index = done;
          await DBOS.runStep(
            async () => {
              const output = payloadText(size, `${key}-${index}`);
              mark();
              return output;
            },
            { name: "step" },
          );
          done++;
        }
        answer();
      }
    },
    { name: "benchPeerSteps" },
  );
  const quiet = { info() {}, debug() {}, warn() {}, error() {} };
  DBOS.setConfig({
    name: "durable-agents-bench",
    systemDatabaseUrl: options.url,
    systemDatabaseSchemaName: "bench_dbos",
    logger: quiet,
  });
  await DBOS.launch();

  // LangGraph: one node that appends one message per super-step, until `stopAt` messages.
  const State = Annotation.Root({ ...MessagesAnnotation.spec, stopAt: Annotation<number>() });
  const checkpointer = new PostgresSaver(pool, undefined, { schema: "bench_langgraph" });
  await checkpointer.setup();
  const message = (index: number) =>
    new AIMessage({ id: `m${index}`, content: payloadText(stepPayloadBytes(index), `langgraph-${index}`) });
  const graph = new StateGraph(State)
    .addNode("append", (state: typeof State.State) => {
      const update = { messages: [message(state.messages.length)] };
      mark();
      return update;
    })
    .addEdge(START, "append")
    .addConditionalEdges("append", (state: typeof State.State) =>
      state.messages.length < state.stopAt ? "append" : END,
    )
    .compile({ checkpointer });
  const thread = (threadId: string) => ({
    configurable: { thread_id: threadId },
    durability: "sync" as const,
    recursionLimit: 10_000,
  });

  const floor = new FloorProbe(pool);
  await floor.prepare();

  const tallies = {
    postgres: [] as PeerLevel[],
    postgresHeld: [] as PeerLevel[],
    dbos: [] as PeerLevel[],
    langgraph: [] as PeerLevel[],
  };
  const ratios: PeerRatioLevel[] = [];
  const running = new Map<string, { getResult(): Promise<number> }>();
  try {
    const history = async (sessionId: string) => (await store.loadSession(sessionId))!.head.historyLength;

    /** A session with at least `items` history items: turns of up to 49 tool calls, then plain messages. */
    async function fillSession(sessionId: string, items: number, agent = SESSION_AGENT): Promise<number> {
      await client.startSession({ agent, sessionId });
      let h = 0;
      while (h < items) {
        // k calls in one response: the message, the calls, their results and the answer (about 2k + 2 items).
        const calls = Math.min(49, Math.floor((items - h - 2) / 2));
        const script =
          calls >= 1
            ? Array.from({ length: calls }, (_, c) => `call look_up {"key":"${sessionId}-fill-${h}-${c}"}`).join("\n")
            : `fill ${h}`;
        await client.sendMessage(sessionId, script);
        await client.waitUntilIdle(sessionId, { timeoutMs: 300_000 });
        h = await history(sessionId);
      }
      return h;
    }

    /** A DBOS workflow that has done `items` steps and waits for its timed round. */
    async function fillWorkflow(key: string, items: number): Promise<void> {
      running.set(key, await DBOS.startWorkflow(dbosWorkflow, { workflowID: key })(key));
      await mailbox(key).send({ sizes: Array.from({ length: items }, (_, i) => stepPayloadBytes(i)) });
    }

    /** A LangGraph thread holding `items` messages: all but one as the input, the node appends the last. */
    async function fillThread(threadId: string, items: number): Promise<void> {
      const seed = Array.from({ length: items - 1 }, (_, i) => message(i));
      const state = await graph.invoke({ messages: seed, stopAt: items }, thread(threadId));
      if (state.messages.length !== items)
        throw new Error(`thread ${threadId} holds ${state.messages.length} messages`);
    }

    async function sessionRound(
      sessionId: string,
      tag: string,
      tally: LevelTally | null,
      driver: Worker = worker,
    ): Promise<number[]> {
      const after = (await store.loadSession(sessionId))!.lastEventSeq;
      const abort = new AbortController();
      steps.reset();
      const started = performance.now();
      await client.sendMessage(sessionId, `call look_up {"key":"a${tag}"}\nthen\ncall look_up {"key":"b${tag}"}`);
      for await (const event of client.followEvents(sessionId, { after, signal: abort.signal })) {
        if (event.type === "turn_failed")
          throw new Error(`a store-postgres turn failed: ${JSON.stringify(event.data)}`);
        if (event.type === "turn_completed") break;
      }
      const ended = performance.now();
      abort.abort();
      const times = stepTimes(started, steps.ends, ended);
      if (steps.runnerCalls.length !== STEPS)
        throw new Error(`a session round made ${steps.runnerCalls.length} runner calls`);
      tally?.outside.push((ended - started - steps.inRunner) / STEPS);
      tally?.outsideSteps.push(...times.map((ms, i) => ms - steps.runnerCalls[i]!));
      await waitForIdleWorker(driver);
      return times;
    }

    async function dbosRound(key: string, items: number): Promise<number[]> {
      const sizes = Array.from({ length: STEPS }, (_, i) => stepPayloadBytes(items + i));
      steps.reset();
      const started = performance.now();
      await mailbox(key).send({ sizes });
      return stepTimes(started, steps.ends, performance.now());
    }

    async function langGraphRound(threadId: string, items: number): Promise<number[]> {
      steps.reset();
      const started = performance.now();
      const state = await graph.invoke({ stopAt: items + STEPS }, thread(threadId));
      const times = stepTimes(started, steps.ends, performance.now());
      if (state.messages.length !== items + STEPS) throw new Error(`thread ${threadId}: ${state.messages.length}`);
      return times;
    }

    /** Runs one round of a row with the counters read around it. */
    async function measure(
      tally: LevelTally | null,
      round: () => Promise<number[]>,
      where: Omit<PeersRoundWal, "walFrom" | "walTo" | "steps">,
    ): Promise<void> {
      const counters = await readCounters(pool);
      const ticks = await postgresCpuTicks(pool);
      const cpu = ownCpuMs();
      const times = await round();
      const cpuAfter = ownCpuMs();
      const ticksAfter = await postgresCpuTicks(pool);
      const delta = counterDelta(counters, await readCounters(pool));
      if (!tally) return;
      tally.steps.push(...times);
      tally.cpuProcess += cpuAfter - cpu;
      tally.cpuPostgres += serverCpuMs(ticks, ticksAfter);
      tally.xacts += delta.writeTransactions;
      tally.wal += delta.walBytes;
      tally.walRounds.push(delta.walBytes / times.length);
      options.onRound?.({
        ...where,
        steps: times.length,
        walFrom: counters.walBytes,
        walTo: counters.walBytes + BigInt(delta.walBytes),
      });
    }

    for (const items of options.levels) {
      // One fresh instance of each row per round (and per warm-up round at the first level), all
      // filled first, together: each timed round starts at the level, none drifts from it.
      const warmup = items === options.levels[0] ? options.warmupRounds : 0;
      const keys = Array.from({ length: warmup + options.rounds }, (_, i) => `peers-${items}-${i}`);
      await options.checkpoint?.();
      log(
        `peers: filling ${keys.length} store-postgres sessions, DBOS workflows and LangGraph threads to ${items} history items`,
      );
      const [sessionStarts, heldStarts] = await Promise.all([
        Promise.all(keys.map((key) => fillSession(key, items))),
        Promise.all(keys.map((key) => fillSession(`held-${key}`, items, HELD_AGENT))),
        Promise.all(keys.map((key) => fillWorkflow(key, items))),
        Promise.all(keys.map((key) => fillThread(key, items))),
      ]);
      await waitForIdleWorker(worker);
      await waitForIdleWorker(heldWorker);
      await settleTables(pool);
      log(
        `peers: ${options.rounds} rounds at ${items} history items (store-postgres, store-postgres held, floor, DBOS, LangGraph in turns${warmup ? `, after ${warmup} warm-up rounds` : ""})`,
      );
      const level = {
        postgres: new LevelTally(),
        postgresHeld: new LevelTally(),
        dbos: new LevelTally(),
        langgraph: new LevelTally(),
      };
      const levelFloor = new FloorProbe(pool);
      for (const [round, key] of keys.entries()) {
        const measured = round >= warmup;
        await measure(
          measured ? level.postgres : null,
          () => sessionRound(key, `${items}-${round}`, measured ? level.postgres : null),
          { row: "store-postgres", items, round },
        );
        await measure(
          measured ? level.postgresHeld : null,
          () => sessionRound(`held-${key}`, `${items}-${round}`, measured ? level.postgresHeld : null, heldWorker),
          { row: "store-postgres held", items, round },
        );
        if (measured) {
          await floor.batch(options.floorWritesPerRound);
          await levelFloor.batch(options.floorWritesPerRound);
        }
        await measure(measured ? level.dbos : null, () => dbosRound(key, items), { row: "DBOS", items, round });
        await measure(measured ? level.langgraph : null, () => langGraphRound(key, items), {
          row: "LangGraph",
          items,
          round,
        });
        await mailbox(key).send("stop");
        await running.get(key)!.getResult();
        running.delete(key);
      }
      const measuredStarts = sessionStarts.slice(warmup);
      const heldMeasuredStarts = heldStarts.slice(warmup);
      const figures = {
        postgres: level.postgres.level(
          items,
          Math.min(...measuredStarts),
          Math.max(...measuredStarts) + SESSION_TURN_ITEMS,
        ),
        postgresHeld: level.postgresHeld.level(
          items,
          Math.min(...heldMeasuredStarts),
          Math.max(...heldMeasuredStarts) + SESSION_TURN_ITEMS,
        ),
        dbos: level.dbos.level(items, items, items + STEPS),
        langgraph: level.langgraph.level(items, items, items + STEPS),
      };
      tallies.postgres.push(figures.postgres);
      tallies.postgresHeld.push(figures.postgresHeld);
      tallies.dbos.push(figures.dbos);
      tallies.langgraph.push(figures.langgraph);
      const floorMedianMs = levelFloor.result().median;
      ratios.push({
        historyItems: items,
        postgresToDbos: figures.postgres.step.median / figures.dbos.step.median,
        postgresToLangGraph: figures.postgres.step.median / figures.langgraph.step.median,
        postgresOutsideRunnerToDbos: figures.postgres.outsideRunnerStep!.median / figures.dbos.step.median,
        postgresOutsideRunnerToLangGraph: figures.postgres.outsideRunnerStep!.median / figures.langgraph.step.median,
        postgresToFloor: figures.postgres.step.median / floorMedianMs,
        dbosToFloor: figures.dbos.step.median / floorMedianMs,
        langGraphToFloor: figures.langgraph.step.median / floorMedianMs,
        floorMedianMs,
        postgresHeldToDbos: figures.postgresHeld.step.median / figures.dbos.step.median,
        postgresHeldToFloor: figures.postgresHeld.step.median / floorMedianMs,
      });
    }
  } finally {
    for (const key of running.keys()) void mailbox(key).send("stop");
    await worker.stop();
    await heldWorker.stop();
    await store.close();
    await DBOS.shutdown();
  }

  const corePackages = { "@durable-agents/store-postgres": "workspace", pg: installedVersion("pg") };
  return {
    rounds: options.rounds,
    warmupRounds: options.warmupRounds,
    floorWritesPerRound: options.floorWritesPerRound,
    stepPayloadBytes: STEP_PAYLOAD_BYTES,
    postgres: {
      name: "store-postgres",
      packages: corePackages,
      step: "one model call or one tool call of a session turn (ScriptedRunner; model, tool, model, tool, model)",
      stepsPerRound: STEPS,
      levels: tallies.postgres,
    },
    postgresHeld: {
      name: "store-postgres, held session",
      packages: corePackages,
      step: "as store-postgres's, the round's message coming to a session whose worker kept its lease since its fill",
      stepsPerRound: STEPS,
      levels: tallies.postgresHeld,
    },
    dbos: {
      name: "DBOS",
      packages: { "@dbos-inc/dbos-sdk": installedVersion("@dbos-inc/dbos-sdk") },
      step: "one DBOS.runStep in a running workflow, its closure returning a payload of the session's step sizes",
      stepsPerRound: STEPS,
      levels: tallies.dbos,
    },
    langgraph: {
      name: "LangGraph",
      packages: {
        "@langchain/langgraph": installedVersion("@langchain/langgraph"),
        "@langchain/langgraph-checkpoint-postgres": installedVersion("@langchain/langgraph-checkpoint-postgres"),
        "@langchain/core": installedVersion("@langchain/core"),
      },
      step: 'one super-step (one node run appending one AIMessage), checkpointed by PostgresSaver with durability "sync"',
      stepsPerRound: STEPS,
      levels: tallies.langgraph,
    },
    floor: floor.result(),
    ratios,
  };
}

/** The Restate row's bare `ctx.run` handler at one level, as the restate phase measured it (restate-phase.ts). */
export interface RestateBareLevel {
  readonly historyItems: number;
  readonly step: Summary;
  /** CPU ms per step: this process (the endpoint) and restate-server (not PostgreSQL). */
  readonly cpuMsPerStep: { readonly process: number; readonly server: number };
  /** store-postgres median ms per step (peers row, same level) / the bare handler's; NaN without that level. */
  readonly postgresToBare: number;
  /** The same with the held session's median. */
  readonly postgresHeldToBare: number;
}

export interface PeersResults extends PeersFigures {
  /** Referenced from the Restate row, not measured again: its own server, its own turns. */
  readonly restateBare: {
    readonly restateVersion: string;
    readonly sdkVersion: string;
    readonly levels: readonly RestateBareLevel[];
  };
}

/** The peers' figures with the Restate row's bare handler beside them, level by level. */
export function withRestateBare(peers: PeersFigures, restate: RestateFigures): PeersResults {
  return {
    ...peers,
    restateBare: {
      restateVersion: restate.restateVersion,
      sdkVersion: restate.sdkVersion,
      levels: restate.levels.map((level) => {
        const ours = peers.postgres.levels.find((l) => l.historyItems === level.historyItems);
        const held = peers.postgresHeld.levels.find((l) => l.historyItems === level.historyItems);
        return {
          historyItems: level.historyItems,
          step: level.bare,
          cpuMsPerStep: { process: level.bareCpuMsPerStep.endpoint, server: level.bareCpuMsPerStep.server },
          postgresToBare: ours ? ours.step.median / level.bare.median : Number.NaN,
          postgresHeldToBare: held ? held.step.median / level.bare.median : Number.NaN,
        };
      }),
    },
  };
}

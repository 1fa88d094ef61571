/**
 * Growth: the workload's turn run on sessions whose history already holds 10, 100 or 1,000 items,
 * one session at a time, the levels in turns, with the time of each step and the bytes written per
 * step.
 */
import { SessionClient, Worker, type Runner, type SessionDefinition, type SessionStore } from "@durable-agents/core";
import { waitForIdleWorker } from "./durable-phase.js";
import { rawHistory, rawTurnAtHistory } from "./raw-sdk-phase.js";
import { StepClock } from "./step-clock.js";
import { TurnFollower } from "./turn-follower.js";
import { AGENT_NAME, makeDefinition, seedScript, stepsPerTurn, turnScript } from "./workload.js";
import { summarize } from "./stats.js";

export interface BytesMeter {
  /** What bytes mean for this store. */
  readonly unit: string;
  start(sessionId: string): Promise<void>;
  /** Bytes written, and commits (memory) or write transactions (PostgreSQL), since `start`. */
  stop(sessionId: string): Promise<{ bytes: number; writes: number; parts?: Record<string, number> }>;
}

export interface GrowthLevel {
  readonly historyItems: number;
  readonly sessions: number;
  readonly steps: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  /** Bytes written per step (absent for the raw SDK reference). */
  readonly bytesPerStep?: number;
  /** Commits (memory) or write transactions (PostgreSQL) per step. */
  readonly writesPerStep?: number;
  /** Bytes per step by what was written (memory: head, history, events). */
  readonly bytesPerStepByPart?: Record<string, number>;
  /** Median ms per step minus the raw SDK's at the same history length: what durability adds. */
  readonly overheadMs?: number;
  /**
   * Mean ms per step spent outside the runner (engine, store, client): each measured turn's time
   * minus the time inside `runModel` and `callTool`, divided by its steps. This is what durability
   * costs, without the framework's own work, which grows with the history it sends to the model.
   */
  readonly outsideRunnerMs?: number;
}

/** The definition with a runner that adds the time spent inside `runModel` and `callTool` to `spent.ms`. */
export function timedDefinition(definition: SessionDefinition, spent: { ms: number }): SessionDefinition {
  const inner = definition.runner;
  const timed = async <T>(work: () => Promise<T>): Promise<T> => {
    const start = performance.now();
    try {
      return await work();
    } finally {
      spent.ms += performance.now() - start;
    }
  };
  const runner: Runner = {
    tools: () => inner.tools(),
    userItem: (kind, text) => inner.userItem(kind, text),
    runModel: (input) => timed(() => inner.runModel(input)),
    callTool: (input) => timed(() => inner.callTool(input)),
  };
  return { ...definition, runner };
}

export interface GrowthOptions {
  readonly store: SessionStore;
  readonly meter: BytesMeter;
  readonly prefix: string;
  readonly levels: readonly number[];
  readonly sessionsPerLevel: number;
  readonly toolCalls: number;
}

export async function runGrowthPhase(options: GrowthOptions): Promise<GrowthLevel[]> {
  const { store, meter, prefix, toolCalls } = options;
  const clock = new StepClock();
  const inRunner = { ms: 0 };
  const definition = timedDefinition(makeDefinition(clock).definition, inRunner);
  const worker = new Worker({ store, sessions: [definition] }).start();
  const client = new SessionClient({ store, agents: [AGENT_NAME] });
  const steps = stepsPerTurn(toolCalls);
  const levels: GrowthLevel[] = [];
  try {
    // Every level's sessions are seeded first (not measured), each level with one session more for
    // a warm-up round; then the levels are measured in turns, one session of each level per round, so
    // no level runs on a colder process, a smaller heap or a quieter machine than another.
    clock.enabled = false;
    interface Level {
      readonly items: number;
      readonly ids: string[];
      /** The measured turn's number, and its ID. */
      readonly turnNumber: number;
      readonly measuredTurn: string;
      readonly stepMs: number[];
      bytes: number;
      writes: number;
      outsideMs: number;
      readonly parts: Record<string, number>;
    }
    const followers = new Map<string, TurnFollower>();
    const seeded: Level[] = [];
    for (const items of options.levels) {
      const ids = Array.from({ length: options.sessionsPerLevel + 1 }, (_, s) => `${prefix}-h${items}-s${s}`);
      const seedTurns = seedTurnSizes(items);
      for (const sessionId of ids) {
        await client.startSession({
          agent: AGENT_NAME,
          sessionId,
          message: seedScript(`${sessionId}-p1`, seedTurns[0]!),
        });
        for (let p = 1; p < seedTurns.length; p++)
          await client.sendMessage(sessionId, seedScript(`${sessionId}-p${p + 1}`, seedTurns[p]!));
        followers.set(sessionId, new TurnFollower(client, sessionId));
      }
      await Promise.all(ids.map((id) => followers.get(id)!.turnEnd(`turn-${seedTurns.length}`, 300_000)));
      seeded.push({
        items,
        ids,
        turnNumber: seedTurns.length + 1,
        measuredTurn: `turn-${seedTurns.length + 1}`,
        stepMs: [],
        bytes: 0,
        writes: 0,
        outsideMs: 0,
        parts: {},
      });
    }
    await waitForIdleWorker(worker);
    clock.enabled = true;
    for (let round = 0; round <= options.sessionsPerLevel; round++) {
      // Round 0 warms up: its turns are not measured.
      const measured = round > 0;
      for (const level of seeded) {
        const sessionId = level.ids[round]!;
        const stored = await store.loadSession(sessionId);
        if (stored?.head.historyLength !== level.items) {
          throw new Error(`session ${sessionId} has ${stored?.head.historyLength} history items, not ${level.items}`);
        }
        clock.reset();
        await meter.start(sessionId);
        inRunner.ms = 0;
        const start = performance.now();
        await client.sendMessage(sessionId, turnScript(sessionId, level.turnNumber, toolCalls));
        const end = await followers.get(sessionId)!.turnEnd(level.measuredTurn);
        const runnerMs = inRunner.ms;
        await waitForIdleWorker(worker);
        const written = await meter.stop(sessionId);
        const times = clock.stepTimes(start, end, steps);
        if (measured) {
          level.stepMs.push(...times);
          level.outsideMs += end - start - runnerMs;
          level.bytes += written.bytes;
          level.writes += written.writes;
          for (const [part, value] of Object.entries(written.parts ?? {}))
            level.parts[part] = (level.parts[part] ?? 0) + value;
        }
      }
    }
    await Promise.all([...followers.values()].map((f) => f.stop()));
    for (const level of seeded) {
      const { stepMs, parts } = level;
      const summary = summarize(stepMs);
      levels.push({
        historyItems: level.items,
        sessions: options.sessionsPerLevel,
        steps: stepMs.length,
        medianMs: summary.median,
        p99Ms: summary.p99,
        meanMs: summary.mean,
        bytesPerStep: level.bytes / stepMs.length,
        outsideRunnerMs: level.outsideMs / stepMs.length,
        writesPerStep: level.writes / stepMs.length,
        ...(Object.keys(parts).length > 0
          ? {
              bytesPerStepByPart: Object.fromEntries(
                Object.entries(parts).map(([part, value]) => [part, value / stepMs.length]),
              ),
            }
          : {}),
      });
    }
    return levels;
  } finally {
    await worker.stop();
  }
}

/** Items of the last seed turn: the measured turn's own size (its message, two calls, their results, the answer). */
export const LAST_SEED_TURN_ITEMS = 6;

/**
 * Seed turns adding up to `items` (at least 10, even): turns of at most 100 items each (one response
 * with up to 49 calls), then a last turn of `LAST_SEED_TURN_ITEMS` (two calls). The measured turn
 * starts from the head that last turn left, so its first commit loads, parses and rewrites a head of
 * the same size at every level: a head still holding a 49-call turn is ten times larger (36 KB
 * against 3.7 KB) and made the per-turn work look like growth with the history.
 */
export function seedTurnSizes(items: number): number[] {
  if (!Number.isInteger(items) || items < LAST_SEED_TURN_ITEMS + 4 || items % 2 !== 0)
    throw new Error(
      `a growth level is an even number of history items, at least ${LAST_SEED_TURN_ITEMS + 4} (asked ${items})`,
    );
  const sizes: number[] = [];
  let left = items - LAST_SEED_TURN_ITEMS;
  while (left > 0) {
    // Never leave a remainder too short for a seed turn (4 items at least).
    const size = left > 100 && left - 100 < 4 ? left - 4 : Math.min(100, left);
    sizes.push(size);
    left -= size;
  }
  sizes.push(LAST_SEED_TURN_ITEMS);
  return sizes;
}

/** The same turns on the raw SDK, for reference: how much of the growth is the SDK's own. */
export async function runRawGrowth(
  levels: readonly number[],
  sessionsPerLevel: number,
  toolCalls: number,
): Promise<GrowthLevel[]> {
  const out: GrowthLevel[] = [];
  for (const items of levels) {
    const stepMs: number[] = [];
    const extra = items === levels[0] ? 1 : 0;
    for (let s = 0; s < sessionsPerLevel + extra; s++) {
      const key = `raw-h${items}-s${s}`;
      const history = await rawHistory(seedTurnSizes(items).map((n, p) => seedScript(`${key}-p${p + 1}`, n)));
      if (history.length !== items) throw new Error(`the raw seed made ${history.length} items, not ${items}`);
      const times = await rawTurnAtHistory(history, key, toolCalls);
      if (s >= extra) stepMs.push(...times);
    }
    const summary = summarize(stepMs);
    out.push({
      historyItems: items,
      sessions: sessionsPerLevel,
      steps: stepMs.length,
      medianMs: summary.median,
      p99Ms: summary.p99,
      meanMs: summary.mean,
    });
  }
  return out;
}

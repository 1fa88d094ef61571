// The growth phase as it was before branch `flat` (generated from dist/growth-phase.js, seeding restored).
/**
 * Growth: the workload's turn run on sessions whose history already holds 10, 100 or 1,000 items,
 * one session at a time, with the time of each step and the bytes written per step.
 */
import { SessionClient, Worker } from "@durable-agents/core";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { rawHistory, rawTurnAtHistory } from "../dist/raw-sdk-phase.js";
import { StepClock } from "../dist/step-clock.js";
import { TurnFollower } from "../dist/turn-follower.js";
import { AGENT_NAME, makeDefinition, seedScript, stepsPerTurn, turnScript } from "../dist/workload.js";
import { summarize } from "../dist/stats.js";
/** The definition with a runner that adds the time spent inside `runModel` and `callTool` to `spent.ms`. */
export function timedDefinition(definition, spent) {
  const inner = definition.runner;
  const timed = async (work) => {
    const start = performance.now();
    try {
      return await work();
    } finally {
      spent.ms += performance.now() - start;
    }
  };
  const runner = {
    tools: () => inner.tools(),
    userItem: (kind, text) => inner.userItem(kind, text),
    runModel: (input) => timed(() => inner.runModel(input)),
    callTool: (input) => timed(() => inner.callTool(input)),
  };
  return { ...definition, runner };
}
export async function runGrowthPhase(options) {
  const { store, meter, prefix, toolCalls } = options;
  const clock = new StepClock();
  const inRunner = { ms: 0 };
  const definition = timedDefinition(makeDefinition(clock).definition, inRunner);
  const worker = new Worker({ store, sessions: [definition] }).start();
  const client = new SessionClient({ store, agents: [AGENT_NAME] });
  const steps = stepsPerTurn(toolCalls);
  const levels = [];
  try {
    for (const items of options.levels) {
      // Seed every session of the level at once (not measured), then measure them one by one. The
      // first level has one more session, run first to warm up; it is not measured.
      clock.enabled = false;
      const extra = items === options.levels[0] ? 1 : 0;
      const ids = Array.from({ length: options.sessionsPerLevel + extra }, (_, s) => `${prefix}-h${items}-s${s}`);
      const seedTurns = seedTurnSizes(items);
      const followers = new Map();
      for (const sessionId of ids) {
        await client.startSession({
          agent: AGENT_NAME,
          sessionId,
          message: seedScript(`${sessionId}-p1`, seedTurns[0]),
        });
        for (let p = 1; p < seedTurns.length; p++)
          await client.sendMessage(sessionId, seedScript(`${sessionId}-p${p + 1}`, seedTurns[p]));
        followers.set(sessionId, new TurnFollower(client, sessionId));
      }
      await Promise.all(ids.map((id) => followers.get(id).turnEnd(`turn-${seedTurns.length}`, 300_000)));
      await waitForIdleWorker(worker);
      const measuredTurn = `turn-${seedTurns.length + 1}`;
      clock.enabled = true;
      const stepMs = [];
      let bytes = 0;
      let writes = 0;
      let outsideMs = 0;
      const parts = {};
      for (const [index, sessionId] of ids.entries()) {
        const stored = await store.loadSession(sessionId);
        if (stored?.head.historyLength !== items) {
          throw new Error(`session ${sessionId} has ${stored?.head.historyLength} history items, not ${items}`);
        }
        const measured = index >= extra;
        clock.reset();
        await meter.start(sessionId);
        inRunner.ms = 0;
        const start = performance.now();
        await client.sendMessage(sessionId, turnScript(sessionId, seedTurns.length + 1, toolCalls));
        const end = await followers.get(sessionId).turnEnd(measuredTurn);
        const runnerMs = inRunner.ms;
        await waitForIdleWorker(worker);
        const written = await meter.stop(sessionId);
        const times = clock.stepTimes(start, end, steps);
        if (measured) {
          stepMs.push(...times);
          outsideMs += end - start - runnerMs;
          bytes += written.bytes;
          writes += written.writes;
          for (const [part, value] of Object.entries(written.parts ?? {})) parts[part] = (parts[part] ?? 0) + value;
        }
      }
      await Promise.all([...followers.values()].map((f) => f.stop()));
      const summary = summarize(stepMs);
      levels.push({
        historyItems: items,
        sessions: options.sessionsPerLevel,
        steps: stepMs.length,
        medianMs: summary.median,
        p99Ms: summary.p99,
        meanMs: summary.mean,
        bytesPerStep: bytes / stepMs.length,
        outsideRunnerMs: outsideMs / stepMs.length,
        writesPerStep: writes / stepMs.length,
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

/**
 * Seed turns adding up to `items` (at least 10, even): turns of at most 100 items each (one response
 * with up to 49 calls), then a last turn of `LAST_SEED_TURN_ITEMS` (two calls). The measured turn
 * starts from the head that last turn left, so its first commit loads, parses and rewrites a head of
 * the same size at every level: a head still holding a 49-call turn is ten times larger (36 KB
 * against 3.7 KB) and made the per-turn work look like growth with the history.
 */
export function seedTurnSizes(items) {
  // the seeding before this branch: turns of at most 100 items, the last one whatever is left
  const sizes = [];
  for (let left = items; left > 0; left -= Math.min(100, left)) sizes.push(Math.min(100, left));
  return sizes;
}
/** The same turns on the raw SDK, for reference: how much of the growth is the SDK's own. */
export async function runRawGrowth(levels, sessionsPerLevel, toolCalls) {
  const out = [];
  for (const items of levels) {
    const stepMs = [];
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
//# sourceMappingURL=growth-phase.js.map

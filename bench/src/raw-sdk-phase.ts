/**
 * Phase (a): the workload run directly with `@openai/agents`, without durability: a plain SDK
 * `Runner` with the same model and the real tool, the history kept in this process's memory.
 */
import { Runner, user, type AgentInputItem } from "@openai/agents";
import { StepClock } from "./step-clock.js";
import { makeAgent, stepsPerTurn, turnScript, type WorkloadSize } from "./workload.js";
import { TimedModel } from "./timed-model.js";

export interface PhaseResult {
  /** One sample per step. */
  readonly stepMs: number[];
  readonly steps: number;
  readonly wallMs: number;
}

export async function runRawSdkPhase(size: WorkloadSize): Promise<PhaseResult> {
  const clock = new StepClock();
  const agent = makeAgent(clock, false);
  const runner = new Runner({ model: new TimedModel(clock), tracingDisabled: true });
  const steps = stepsPerTurn(size.toolCalls);
  const stepMs: number[] = [];
  let measuredWall = 0;
  for (let s = 0; s < size.warmupSessions + size.sessions; s++) {
    const measured = s >= size.warmupSessions;
    if (s === size.warmupSessions) measuredWall = performance.now();
    let history: AgentInputItem[] = [];
    for (let t = 1; t <= size.turns; t++) {
      clock.reset();
      const start = performance.now();
      const result = await runner.run(agent, [...history, user(turnScript(`raw${s}`, t, size.toolCalls))], { stream: true });
      for await (const _event of result) {
        // drained like the durable runner drains its stream
      }
      await result.completed;
      const end = performance.now();
      history = result.history;
      const times = clock.stepTimes(start, end, steps);
      if (measured) stepMs.push(...times);
    }
  }
  return { stepMs, steps: stepMs.length, wallMs: performance.now() - measuredWall };
}

/** A raw SDK history made by running the seed messages as turns (the growth phase's seed). */
export async function rawHistory(seeds: readonly string[]): Promise<AgentInputItem[]> {
  const clock = new StepClock();
  clock.enabled = false;
  const runner = new Runner({ model: new TimedModel(clock), tracingDisabled: true });
  const agent = makeAgent(clock, false);
  let history: AgentInputItem[] = [];
  for (const seed of seeds) history = (await runner.run(agent, [...history, user(seed)])).history;
  return history;
}

/** Step times of one raw SDK turn of the workload on top of a history of `history.length` items. */
export async function rawTurnAtHistory(history: AgentInputItem[], key: string, toolCalls: number): Promise<number[]> {
  const clock = new StepClock();
  const runner = new Runner({ model: new TimedModel(clock), tracingDisabled: true });
  const agent = makeAgent(clock, false);
  const start = performance.now();
  const result = await runner.run(agent, [...history, user(turnScript(key, 2, toolCalls))], { stream: true });
  for await (const _event of result) {
    // drained
  }
  await result.completed;
  return clock.stepTimes(start, performance.now(), stepsPerTurn(toolCalls));
}

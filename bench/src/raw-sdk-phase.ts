/**
 * Phase (a): the workload run directly with `@openai/agents`, without durability: a plain SDK
 * `Runner` with the same model and the real tool, the history kept in this process's memory.
 */
import { Runner, user, type Agent, type AgentInputItem } from "@openai/agents";
import { StepClock } from "./step-clock.js";
import { makeAgent, stepsPerTurn, turnScript, type WorkloadSize } from "./workload.js";
import { TimedModel } from "./timed-model.js";
import { ownCpuMs } from "./stats.js";

export interface PhaseResult {
  /** One sample per step. */
  readonly stepMs: number[];
  readonly steps: number;
  /** Wall time of the measured sessions. */
  readonly wallMs: number;
  /**
   * This process's CPU time (user + system) over the measured sessions, ms: the runner, and for a
   * durable phase the worker, the client and (store-memory, store-sqlite) the store; PostgreSQL's
   * own CPU is not in it.
   */
  readonly cpuMs: number;
}

/** Runs the workload's sessions one at a time (`session(n)`), so phases can take turns. */
export class RawSdkPhase {
  private readonly clock = new StepClock();
  private readonly agent: Agent;
  private readonly runner: Runner;
  readonly stepMs: number[] = [];
  wallMs = 0;
  cpuMs = 0;

  constructor(private readonly size: WorkloadSize) {
    this.agent = makeAgent(this.clock, false);
    this.runner = new Runner({ model: new TimedModel(this.clock), tracingDisabled: true });
  }

  async session(index: number, measured: boolean): Promise<void> {
    const steps = stepsPerTurn(this.size.toolCalls);
    const started = performance.now();
    const cpuAtStart = ownCpuMs();
    let history: AgentInputItem[] = [];
    for (let t = 1; t <= this.size.turns; t++) {
      this.clock.reset();
      const start = performance.now();
      const result = await this.runner.run(
        this.agent,
        [...history, user(turnScript(`raw${index}`, t, this.size.toolCalls))],
        { stream: true },
      );
      for await (const _event of result) {
        // drained, as the durable runner drains its stream
      }
      await result.completed;
      const end = performance.now();
      history = result.history;
      const times = this.clock.stepTimes(start, end, steps);
      if (measured) this.stepMs.push(...times);
    }
    if (measured) {
      this.wallMs += performance.now() - started;
      this.cpuMs += ownCpuMs() - cpuAtStart;
    }
  }

  result(): PhaseResult {
    return { stepMs: this.stepMs, steps: this.stepMs.length, wallMs: this.wallMs, cpuMs: this.cpuMs };
  }
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

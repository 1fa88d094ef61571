/**
 * One model step through the adapter (`OpenAIAgentsRunner.runModel`, as the engine calls it) next to
 * one model call of the raw SDK, on the same stored history: the first step of a turn (the history
 * as input, the run state saved) and a resumed step (the saved run state restored), and the size of
 * the saved run state. No store, worker or client is involved: this isolates the adapter's cost.
 */
import { Runner, user } from "@openai/agents";
import { OpenAIAgentsRunner } from "@durable-agents/openai-agents";
import type { HistoryItem } from "@durable-agents/core";
import { StepClock } from "./step-clock.js";
import { TimedModel } from "./timed-model.js";
import { makeAgent, turnScript } from "./workload.js";
import { percentile } from "./stats.js";

export interface ModelStepProbe {
  readonly historyItems: number;
  /** Median ms of the adapter's first model step of a turn (history in, run state out). */
  readonly adapterFirstStepMs: number;
  /** Median ms of a resumed model step (run state in). */
  readonly adapterResumedStepMs: number;
  /** Median ms of one raw SDK model call (a run that answers with text) on the same history. */
  readonly rawModelCallMs: number;
  /** Length of the saved run state the first step returned. */
  readonly runStateChars: number;
}

export async function probeModelStep(stored: readonly HistoryItem[], rounds: number): Promise<ModelStepProbe> {
  const clock = new StepClock();
  clock.enabled = false;
  const runner = new OpenAIAgentsRunner(makeAgent(clock, true), { model: new TimedModel(clock) });
  const sdk = new Runner({ model: new TimedModel(clock), tracingDisabled: true });
  const agent = makeAgent(clock, false);
  const history = [...stored, runner.userItem("message", turnScript("probe", 1, 2))];
  const base = { sessionId: "probe", turnId: "turn-probe", history, turnStart: stored.length, emit: () => {} };
  const first: number[] = [];
  const resumed: number[] = [];
  const raw: number[] = [];
  let runStateChars = 0;
  for (let round = 0; round <= rounds; round++) {
    let start = performance.now();
    const step1 = await runner.runModel({
      ...base,
      modelStep: 1,
      runState: null,
      outcomes: [],
      joined: [],
      signal: new AbortController().signal,
    });
    const firstMs = performance.now() - start;
    if (step1.kind !== "tool_calls") throw new Error("the probe's first model step did not ask for a tool call");
    runStateChars = step1.runState.length;
    const call = step1.calls[0]!;
    const outcomes = [
      { toolCallId: call.toolCallId, name: call.name, status: "succeeded" as const, text: "ok", output: "ok" },
    ];
    start = performance.now();
    await runner.runModel({
      ...base,
      modelStep: 2,
      runState: step1.runState,
      outcomes,
      joined: [],
      signal: new AbortController().signal,
    });
    const resumedMs = performance.now() - start;
    start = performance.now();
    const result = await sdk.run(agent, [...stored.map((entry) => entry.item as never), user(`hello ${round}`)], {
      stream: true,
    });
    for await (const _event of result) {
      // drained
    }
    await result.completed;
    const rawMs = performance.now() - start;
    if (round > 0) {
      // round 0 warms up
      first.push(firstMs);
      resumed.push(resumedMs);
      raw.push(rawMs);
    }
  }
  return {
    historyItems: stored.length,
    adapterFirstStepMs: percentile(first, 0.5),
    adapterResumedStepMs: percentile(resumed, 0.5),
    rawModelCallMs: percentile(raw, 0.5),
    runStateChars,
  };
}

import { afterEach, describe, expect, it, vi } from "vitest";
import { RunState, Runner as SdkRunner, type ModelRequest, type StreamEvent } from "@openai/agents";
import { ConfigurationError, type HistoryItem, type Runner } from "@durable-agents/core";
import type { RecordedOutcome, RunModelInput, RunModelResult } from "@durable-agents/core/engine";
import { ScriptedModel } from "../src/testing/index.js";
import { orderAgent } from "./fixtures.js";
import { callOnce, runTurn } from "./harness.js";

/** The scripted model, recording the input of every call, and failing the next `failures` calls. */
class RecordingModel extends ScriptedModel {
  readonly inputs: string[] = [];
  failures = 0;

  override async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error("the model is unavailable");
    }
    this.inputs.push(JSON.stringify(request.input));
    yield* super.getStreamedResponse(request);
  }
}

/** `live`: the runner keeps live states (the default); otherwise every resumed step decodes its state. */
function setup(liveRunStates?: number) {
  const model = new RecordingModel();
  const { runner, runs } = orderAgent({}, { model, ...(liveRunStates !== undefined ? { liveRunStates } : {}) });
  return { runner, model, runs };
}

function step(
  history: HistoryItem[],
  turnStart: number,
  runState: string | null,
  outcomes: RecordedOutcome[],
): RunModelInput {
  return {
    sessionId: "s",
    turnId: "t",
    modelStep: 1,
    history,
    turnStart,
    runState,
    outcomes,
    joined: [],
    signal: new AbortController().signal,
    emit: () => {},
  };
}

async function outcomesOf(runner: Runner, result: RunModelResult): Promise<RecordedOutcome[]> {
  if (result.kind !== "tool_calls") throw new Error("expected tool calls");
  const outcomes: RecordedOutcome[] = [];
  for (const call of result.calls) outcomes.push(await callOnce(runner, "s", "t", call));
  return outcomes;
}

const EARLIER = `earlier ${"q".repeat(400)}`;
const SCRIPT = 'call look_up {"id":"1"}\ncall look_up {"id":"2"}\nthen\ncall look_up {"id":"3"}';

/** A history with an earlier turn, and the turn's user item. */
async function history(runner: Runner): Promise<{ history: HistoryItem[]; turnStart: number }> {
  const items: HistoryItem[] = [];
  await runTurn(runner, items, EARLIER);
  const turnStart = items.length;
  items.push(runner.userItem("message", SCRIPT));
  return { history: items, turnStart };
}

describe("live run states between the steps of a turn", () => {
  afterEach(() => vi.restoreAllMocks());

  it("a resumed step on the same runner skips RunState.fromString, with the same results and model input as decoding", async () => {
    const fromString = vi.spyOn(RunState, "fromString");
    const live = setup();
    const decoding = setup(0);
    const results: RunModelResult[][] = [];
    for (const { runner } of [live, decoding]) {
      const { history: items, turnStart } = await history(runner);
      const before = fromString.mock.calls.length;
      const steps: RunModelResult[] = [];
      let result = await runner.runModel(step(items, turnStart, null, []));
      steps.push(result);
      while (result.kind === "tool_calls") {
        result = await runner.runModel(step(items, turnStart, result.runState, await outcomesOf(runner, result)));
        steps.push(result);
      }
      results.push(steps);
      // two resumed steps: the live runner restores neither from its string, the other both
      expect(fromString.mock.calls.length - before).toBe(runner === live.runner ? 0 : 2);
    }
    const [withLive, decoded] = results as [RunModelResult[], RunModelResult[]];
    expect(withLive.map((r) => r.kind)).toEqual(["tool_calls", "tool_calls", "final"]);
    expect(withLive).toEqual(decoded); // calls, run state strings, usage, final items and text
    expect(live.model.inputs).toEqual(decoding.model.inputs);
    expect(live.model.inputs).toHaveLength(4); // 1 of the earlier turn, 3 of this one
    expect(live.model.inputs[3]).toContain(EARLIER); // the model sees the whole history
    for (const r of withLive) if (r.kind === "tool_calls") expect(r.runState).not.toContain("q".repeat(400));
    expect(live.runs).toEqual(decoding.runs);
    const last = withLive[2]!;
    expect(last.kind === "final" && last.text).toBe(
      "Results: look_up -> order 1 is shipped | look_up -> order 2 is shipped | look_up -> order 3 is shipped",
    );
  });

  it("a live state resumes without the SDK's snapshot of the session input, as a decoded state does", async () => {
    // What each SDK run got: for a resumed one, the snapshot its state held when the run started.
    const original = SdkRunner.prototype.run;
    const seen: { resumed: boolean; snapshot: unknown; result: unknown }[] = [];
    vi.spyOn(SdkRunner.prototype, "run").mockImplementation(async function (this: SdkRunner, ...args: unknown[]) {
      const input = args[1];
      const entry = {
        resumed: input instanceof RunState,
        snapshot: input instanceof RunState ? input._currentTurnSessionHistoryTransactionInputItems : undefined,
        result: undefined as unknown,
      };
      seen.push(entry);
      entry.result = await (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
      return entry.result as never;
    });
    const snapshots: unknown[][] = [];
    for (const liveRunStates of [undefined, 0]) {
      const { runner } = setup(liveRunStates);
      const { history: items, turnStart } = await history(runner);
      seen.length = 0;
      let result = await runner.runModel(step(items, turnStart, null, []));
      if (liveRunStates === 0) {
        // The SDK takes a snapshot of the whole input in a run (the saved string leaves it out).
        const first = (seen[0]!.result as { state: RunState<never, never> }).state;
        expect(first._currentTurnSessionHistoryTransactionInputItems?.length).toBe(turnStart + 1);
      }
      while (result.kind === "tool_calls") {
        result = await runner.runModel(step(items, turnStart, result.runState, await outcomesOf(runner, result)));
      }
      expect(result.kind).toBe("final");
      expect(seen.map((s) => s.resumed)).toEqual([false, true, true]);
      snapshots.push(seen.filter((s) => s.resumed).map((s) => s.snapshot));
    }
    expect(snapshots).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
  });

  it("a step retried after a model failure decodes its state again and gets the answer of a fresh runner", async () => {
    const fromString = vi.spyOn(RunState, "fromString");
    const { runner, model } = setup();
    const { history: items, turnStart } = await history(runner);
    const first = await runner.runModel(step(items, turnStart, null, []));
    if (first.kind !== "tool_calls") throw new Error("expected tool calls");
    const outcomes = await outcomesOf(runner, first);
    model.failures = 1;
    await expect(runner.runModel(step(items, turnStart, first.runState, outcomes))).rejects.toThrow(/unavailable/);
    const before = fromString.mock.calls.length;
    const retried = await runner.runModel(step(items, turnStart, first.runState, outcomes));
    expect(fromString.mock.calls.length - before).toBe(1); // the live state was used once and dropped

    // A runner that never saw the state (another process) gives the same answer.
    const other = setup();
    const otherItems = structuredClone(items);
    const fresh = await other.runner.runModel(step(otherItems, turnStart, first.runState, outcomes));
    expect(retried).toEqual(fresh);
    expect(model.inputs.at(-1)).toBe(other.model.inputs.at(-1));
    expect(retried.kind === "tool_calls" && retried.calls.map((c) => c.arguments)).toEqual(['{"id":"3"}']);
  });

  it("an evicted state, or a history read again as other objects, takes the decoding path with the same result", async () => {
    const fromString = vi.spyOn(RunState, "fromString");
    const { runner, model } = setup(1);
    const x = await history(runner);
    const y = {
      history: [...x.history.slice(0, x.turnStart), runner.userItem("message", 'call look_up {"id":"9"}')],
      turnStart: x.turnStart,
    };
    const xFirst = await runner.runModel(step(x.history, x.turnStart, null, []));
    const yFirst = await runner.runModel(step(y.history, y.turnStart, null, [])); // evicts x's live state (room for 1)
    if (xFirst.kind !== "tool_calls" || yFirst.kind !== "tool_calls") throw new Error("expected tool calls");
    const xOutcomes = await outcomesOf(runner, xFirst);
    const yOutcomes = await outcomesOf(runner, yFirst);

    let before = fromString.mock.calls.length;
    const xSecond = await runner.runModel(step(x.history, x.turnStart, xFirst.runState, xOutcomes));
    expect(fromString.mock.calls.length - before).toBe(1); // evicted: decoded
    const xInput = model.inputs.at(-1);

    // y's state is live, but the history comes as copies (as read again from a store): decoded
    before = fromString.mock.calls.length;
    const ySecond = await runner.runModel(step(structuredClone(y.history), y.turnStart, yFirst.runState, yOutcomes));
    expect(fromString.mock.calls.length - before).toBe(1);
    const yInput = model.inputs.at(-1);

    const reference = setup(0);
    expect(await reference.runner.runModel(step(x.history, x.turnStart, xFirst.runState, xOutcomes))).toEqual(xSecond);
    expect(reference.model.inputs.at(-1)).toBe(xInput);
    expect(await reference.runner.runModel(step(y.history, y.turnStart, yFirst.runState, yOutcomes))).toEqual(ySecond);
    expect(reference.model.inputs.at(-1)).toBe(yInput);
    expect(ySecond.kind === "final" && ySecond.text).toBe("Results: look_up -> order 9 is shipped");
  });

  it("keeps the saved state free of the history on every step, and its size flat as the history grows", async () => {
    const { runner } = setup();
    const items: HistoryItem[] = [];
    const sizes: number[] = [];
    for (let turn = 0; turn < 6; turn++) {
      // distinct ids per turn: the scripted model derives call IDs from the script
      const script = `call look_up {"id":"${turn}a"}\ncall look_up {"id":"${turn}b"}\nthen\ncall look_up {"id":"${turn}c"}`;
      const turnResult = await runTurn(runner, items, `${script}\n${"w".repeat(300)}`);
      for (const s of turnResult.steps) if (s.result.kind === "tool_calls") sizes.push(s.runStateBytes);
    }
    expect(sizes).toHaveLength(12);
    // each turn's two saved states are the same size as the first turn's, within a few bytes
    for (let i = 2; i < sizes.length; i++) expect(Math.abs(sizes[i]! - sizes[i % 2]!)).toBeLessThan(16);
  });

  it("serializes the SDK state without stack traces for the errors its validation catches, and restores the limit", async () => {
    const limits: number[] = [];
    const serialize = RunState.prototype.toString;
    vi.spyOn(RunState.prototype, "toString").mockImplementation(function (this: RunState<never, never>) {
      limits.push(Error.stackTraceLimit);
      return serialize.call(this);
    });
    const before = Error.stackTraceLimit;
    const { runner } = setup();
    const { history: items, turnStart } = await history(runner);
    const first = await runner.runModel(step(items, turnStart, null, []));
    expect(first.kind).toBe("tool_calls");
    expect(limits).toEqual([0]);
    expect(Error.stackTraceLimit).toBe(before);
  });

  it("an error that escapes the SDK's serialization keeps its stack trace", async () => {
    const before = Error.stackTraceLimit;
    vi.spyOn(RunState.prototype, "toString").mockImplementation(() => {
      throw new Error("the state cannot be serialized");
    });
    const { runner } = setup();
    const { history: items, turnStart } = await history(runner);
    let error: unknown;
    try {
      await runner.runModel(step(items, turnStart, null, []));
    } catch (e) {
      error = e;
    }
    expect((error as Error).message).toBe("the state cannot be serialized");
    expect((error as Error).stack?.split("\n").length).toBeGreaterThan(1);
    expect(Error.stackTraceLimit).toBe(before);
  });

  it("refuses a liveRunStates that is not a non-negative integer", () => {
    for (const liveRunStates of [-1, 1.5, Number.NaN]) {
      let error: unknown;
      try {
        orderAgent({}, { model: new ScriptedModel(), liveRunStates });
      } catch (e) {
        error = e;
      }
      expect(ConfigurationError.isInstance(error), String(error)).toBe(true);
    }
  });
});

/**
 * The run-state envelope this runner stores in a session head. The fixture was written by this
 * release and is never edited: a turn that waits for its tool calls across an upgrade must resume.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { StoredStateError, type HistoryItem } from "@durable-agents/core";
import type { RecordedOutcome, RequestedToolCall } from "@durable-agents/core/engine";
import { RunStateMismatchError } from "../src/index.js";
import { orderAgent } from "./fixtures.js";

interface Saved {
  readonly runState: string;
  readonly calls: RequestedToolCall[];
}
const fixture = JSON.parse(readFileSync(new URL("./fixtures/run-state-v1.json", import.meta.url), "utf8")) as {
  history: HistoryItem[];
  compact: Saved;
  plain: Saved;
};

const outcomesOf = (calls: readonly RequestedToolCall[]): RecordedOutcome[] =>
  calls.map((call) => ({
    toolCallId: call.toolCallId,
    name: call.name,
    status: "succeeded",
    text: "order 1 is shipped",
    output: "order 1 is shipped",
  }));

const resume = (runState: string, calls: readonly RequestedToolCall[], history = fixture.history) => {
  // A fresh runner holds no live state: it must read the stored envelope.
  const { runner, runs } = orderAgent();
  const input = {
    sessionId: "s",
    turnId: "t",
    modelStep: 2,
    history,
    turnStart: 0,
    runState,
    outcomes: outcomesOf(calls),
    joined: [],
    signal: new AbortController().signal,
    emit: () => {},
  };
  return { result: runner.runModel(input), runs };
};

describe("the stored run state of version 1", () => {
  for (const kind of ["compact", "plain"] as const) {
    it(`resumes a ${kind} envelope written by 0.1.0`, async () => {
      const saved = fixture[kind];
      expect(JSON.parse(saved.runState)).toMatchObject({ format: "durable-agents.openai-agents.run-state", v: 1 });
      const { result, runs } = resume(saved.runState, saved.calls);
      const final = await result;
      expect(final.kind).toBe("final");
      expect(final.kind === "final" && final.text).toBe("Results: look_up -> order 1 is shipped");
      expect(runs).toEqual([]); // the recorded outcome is handed back; the tool does not run again
    });
  }

  for (const kind of ["compact", "plain"] as const) {
    it(`resumes a ${kind} envelope written by 0.1.0 in a step a steered message joined`, async () => {
      const saved = fixture[kind];
      const { runner } = orderAgent();
      const aside = runner.userItem("message", "and be quick");
      const history = [...fixture.history, aside];
      const lastCall = saved.calls.at(-1)!.toolCallId;
      const final = await runner.runModel({
        sessionId: "s",
        turnId: "t",
        modelStep: 2,
        history,
        turnStart: 0,
        runState: saved.runState,
        outcomes: outcomesOf(saved.calls),
        joined: [{ item: aside, historyIndex: history.length - 1, modelStep: 2, afterToolCallId: lastCall }],
        signal: new AbortController().signal,
        emit: () => {},
      });
      if (final.kind !== "final") throw new Error("expected a final answer");
      expect(final.text).toBe("Results: look_up -> order 1 is shipped (also: and be quick)");
      expect(final.items.map((item) => item.display.role)).toEqual(["assistant", "tool", "assistant"]);
    });
  }

  it("refuses an envelope of a newer version with a typed error, not a crash", async () => {
    for (const kind of ["compact", "plain"] as const) {
      const newer = JSON.stringify({ ...JSON.parse(fixture[kind].runState), v: 2 });
      const error = await resume(newer, fixture[kind].calls).result.catch((e: unknown) => e);
      expect(RunStateMismatchError.isInstance(error)).toBe(true);
      expect(StoredStateError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({
        code: "stored_state",
        format: "openai_agents_run_state",
        reason: "unknown_version",
        version: 2,
      });
    }
  });

  it("refuses a damaged envelope and one saved with another history as stored state", async () => {
    const damaged = JSON.stringify({ ...JSON.parse(fixture.compact.runState), z: "not gzip" });
    const other = [{ ...fixture.history[0]!, item: { role: "user", content: "something else" } }];
    for (const [runState, history] of [
      [damaged, fixture.history],
      [fixture.compact.runState, other],
      ["not json", fixture.history],
    ] as const) {
      const error = await resume(runState, fixture.compact.calls, history).result.catch((e: unknown) => e);
      expect(RunStateMismatchError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: "stored_state", reason: "malformed" });
    }
  });
});

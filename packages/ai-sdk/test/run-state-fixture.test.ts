/**
 * The run state this runner stores in a session head. The fixture was written by this release and
 * is never edited: a turn that waits for its tool calls across an upgrade must resume.
 */
import { readFileSync } from "node:fs";
import { StoredStateError, type HistoryItem } from "@durable-agents/core";
import type { RequestedToolCall } from "@durable-agents/core/engine";
import { tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AiSdkRunner } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/run-state-v1.json", import.meta.url), "utf8")) as {
  history: HistoryItem[];
  runState: string;
  calls: RequestedToolCall[];
};

function resume(runState: string, aside?: string) {
  const runs: unknown[] = [];
  const tools = {
    add: tool({
      description: "Adds two numbers",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: async (args) => {
        runs.push(args);
        return { sum: args.a + args.b };
      },
    }),
  };
  const runner = new AiSdkRunner({ model: new ScriptedLanguageModel(), tools });
  const outcomes = fixture.calls.map((call) => ({
    toolCallId: call.toolCallId,
    name: call.name,
    status: "succeeded" as const,
    text: '{"sum":3}',
    output: '{"sum":3}',
  }));
  // A steered message that joined before this step, after the outcome of the last call.
  const item = aside === undefined ? undefined : runner.userItem("message", aside);
  const history = item ? [...fixture.history, item] : fixture.history;
  const lastCall = fixture.calls.at(-1)!.toolCallId;
  const result = runner.runModel({
    sessionId: "s",
    turnId: "t",
    modelStep: 2,
    history,
    turnStart: 0,
    runState,
    outcomes,
    joined: item ? [{ item, historyIndex: history.length - 1, modelStep: 2, afterToolCallId: lastCall }] : [],
    signal: new AbortController().signal,
    emit: () => {},
  });
  return { result, runs };
}

describe("the stored AI SDK run state of version 1", () => {
  it("resumes a run state written by 0.1.0", async () => {
    expect(JSON.parse(fixture.runState)).toMatchObject({ version: 1 });
    const { result, runs } = resume(fixture.runState);
    const final = await result;
    expect(final.kind).toBe("final");
    expect(final.kind === "final" && final.text).toContain('add -> {"sum":3}');
    expect(runs).toEqual([]);
  });

  it("resumes a run state written by 0.1.0 in a step a steered message joined", async () => {
    const final = await resume(fixture.runState, "and be quick").result;
    if (final.kind !== "final") throw new Error("expected a final answer");
    expect(final.text).toMatch(/add -> \{"sum":3\}.* \(also: and be quick\)$/);
    expect(final.items.some((item) => item.display.text === "and be quick")).toBe(false);
  });

  it("refuses a run state of a newer version with a typed error, not a crash", async () => {
    const newer = JSON.stringify({ ...JSON.parse(fixture.runState), version: 2 });
    const error = await resume(newer).result.catch((e: unknown) => e);
    expect(StoredStateError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: "stored_state",
      format: "ai_sdk_run_state",
      reason: "unknown_version",
      version: 2,
    });
  });
});

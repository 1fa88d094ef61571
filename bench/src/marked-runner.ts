/**
 * The scripted agent of the Restate and peers rows, with every step's end marked: core's
 * `ScriptedRunner` with one tool, `look_up` (a sha256 of its key). A model step ends when the model
 * call returns, a tool step when the tool body returns; the time spent inside the runner (each
 * `runModel` and `callTool`) is kept too, so a row can tell the engine's cost from the runner's.
 */
import { createHash } from "node:crypto";
import type { Runner } from "@durable-agents/core";
import { ScriptedRunner } from "@durable-agents/core/testing";

/** The marks of the current round: each step's end, and the runner's own calls. */
export class StepMarks {
  /** `performance.now()` at the end of each step, in order. */
  ends: number[] = [];
  /** The duration of each runner call (one per step), in order. */
  runnerCalls: number[] = [];
  /** Time spent inside the runner since the last reset, ms. */
  inRunner = 0;

  mark(): void {
    this.ends.push(performance.now());
  }

  reset(): void {
    this.ends = [];
    this.runnerCalls = [];
    this.inRunner = 0;
  }

  /** Times one runner call. */
  async timed<T>(call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await call();
    } finally {
      const ms = performance.now() - started;
      this.runnerCalls.push(ms);
      this.inRunner += ms;
    }
  }
}

/** The scripted runner whose steps mark `marks`. */
export function markedScriptedRunner(marks: StepMarks): Runner {
  const scripted = new ScriptedRunner({
    tools: [
      {
        name: "look_up",
        description: "Looks a key up.",
        parameters: { key: "string" },
        execute: ({ key }) => {
          const digest = createHash("sha256").update(String(key)).digest("hex");
          marks.mark();
          return digest;
        },
      },
    ],
  });
  return {
    tools: () => scripted.tools(),
    userItem: (kind, text) => scripted.userItem(kind, text),
    callTool: (input) => marks.timed(() => scripted.callTool(input)),
    runModel: (input) =>
      marks.timed(async () => {
        const result = await scripted.runModel(input);
        marks.mark();
        return result;
      }),
  };
}

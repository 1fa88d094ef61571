import { execFileSync, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import type { HistoryItem } from "@durable-agents/core";
import type { RecordedOutcome, RunModelResult } from "@durable-agents/core/engine";
import { toHistoryItem } from "../src/display.js";
import { callOnce } from "./harness.js";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const stepScript = fileURLToPath(new URL("./child/step.mjs", import.meta.url));

interface ChildStep {
  result: RunModelResult;
  modelCalls: number;
  toolRuns: number;
  deltas: { kind: string; text: string }[];
  pid: number;
}

function stepInChild(input: {
  history: HistoryItem[];
  turnStart: number;
  modelStep: number;
  runState: string | null;
  outcomes: RecordedOutcome[];
}): ChildStep {
  const child = spawnSync(process.execPath, [stepScript], {
    cwd: packageDir,
    input: JSON.stringify(input),
    encoding: "utf8",
    timeout: 60_000,
  });
  if (child.status !== 0) throw new Error(`child step failed (${child.status}): ${child.stderr}`);
  return JSON.parse(child.stdout) as ChildStep;
}

describe("a run state saved in one process", () => {
  beforeAll(() => {
    // The children import the built package, as an application would.
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: packageDir, stdio: "pipe" });
  }, 120_000);

  it("resumes in another process, with the tool run in a third (this one)", async () => {
    const { buildRunner } = (await import("./child/agent.mjs")) as typeof import("./child/agent.mjs");
    const { runner, runs } = buildRunner();
    // An earlier turn (a message and its answer), then this turn's message.
    const history: HistoryItem[] = [
      runner.userItem("message", "hello"),
      toHistoryItem({
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "You said: hello" }],
      }),
      runner.userItem("message", 'call look_up {"id":"42"}'),
    ];
    const first = stepInChild({ history, turnStart: 2, modelStep: 1, runState: null, outcomes: [] });
    expect(first.result.kind).toBe("tool_calls");
    expect(first.modelCalls).toBe(1);
    expect(first.toolRuns).toBe(0);
    if (first.result.kind !== "tool_calls") return;

    const outcome = await callOnce(runner, "cross", "t1", first.result.calls[0]!);
    expect(runs).toEqual(["42"]);
    expect(outcome.output).toBe(`order 42 is shipped (pid ${process.pid})`);

    const second = stepInChild({
      history,
      turnStart: 2,
      modelStep: 2,
      runState: first.result.runState,
      outcomes: [outcome],
    });
    expect(second.pid).not.toBe(first.pid);
    expect(second.modelCalls).toBe(1);
    expect(second.toolRuns).toBe(0);
    expect(second.result.kind).toBe("final");
    if (second.result.kind !== "final") return;
    expect(second.result.text).toBe(`Results: look_up -> order 42 is shipped (pid ${process.pid})`);
    expect(second.deltas.map((d) => d.text).join("")).toBe(second.result.text);
    expect(second.result.items.map((i) => i.display.role)).toEqual(["assistant", "tool", "assistant"]);
  }, 120_000);
});

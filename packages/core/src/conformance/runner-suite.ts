/**
 * The runner suite: what every adapter's runner must do, driven directly (no engine, no store),
 * with the adapter's deterministic model following `decideScriptedResponse`.
 */
import assert from "node:assert/strict";
import { ToolExecutionError } from "../errors.js";
import type { ModelDelta, RecordedOutcome, RunModelInput, RunModelResult, Runner } from "../runner.js";
import type { HistoryItem } from "../schemas.js";
import { currentToolCall, runInToolCall } from "../tool-context.js";
import type { ConformanceTool } from "../testing/scripted-rules.js";
import type { RunnerConformanceOptions, TestApi } from "./types.js";

interface Fixture {
  runner: Runner;
  executed: string[];
  keys: (string | undefined)[];
}

async function fixture(options: RunnerConformanceOptions): Promise<Fixture> {
  const executed: string[] = [];
  const keys: (string | undefined)[] = [];
  const tools: ConformanceTool[] = [
    {
      name: "look_up_order",
      description: "Look up one order by its ID.",
      parameters: { order_id: "string" },
      execute: (args) => {
        executed.push("look_up_order");
        keys.push(currentToolCall()?.idempotencyKey);
        return `order ${String(args.order_id)} is shipped`;
      },
    },
    {
      name: "cancel_order",
      description: "Cancel one order.",
      parameters: { order_id: "string" },
      needsApproval: true,
      execute: (args) => {
        executed.push("cancel_order");
        return `order ${String(args.order_id)} is cancelled`;
      },
    },
    {
      name: "broken_tool",
      description: "Always fails.",
      parameters: { n: "number" },
      execute: () => {
        executed.push("broken_tool");
        throw new Error("broken_tool exploded");
      },
    },
    {
      name: "picky_tool",
      description: "Fails in a way the model should see.",
      parameters: { n: "number" },
      execute: () => {
        executed.push("picky_tool");
        throw new ToolExecutionError("picky_tool wants a prime number");
      },
    },
  ];
  return { runner: await options.makeRunner(tools), executed, keys };
}

interface TurnDriver {
  history: HistoryItem[];
  turnStart: number;
  deltas: ModelDelta[];
  step(runState: string | null, outcomes: RecordedOutcome[]): Promise<RunModelResult>;
}

function startTurn(runner: Runner, text: string, earlier: HistoryItem[] = []): TurnDriver {
  const history = [...earlier, runner.userItem("message", text)];
  const driver: TurnDriver = {
    history,
    turnStart: earlier.length,
    deltas: [],
    async step(runState, outcomes) {
      const input: RunModelInput = {
        sessionId: "runner-suite",
        turnId: "turn-1",
        modelStep: 1,
        history,
        turnStart: earlier.length,
        runState,
        joined: [],
        outcomes,
        signal: new AbortController().signal,
        emit: (delta) => driver.deltas.push(delta),
      };
      return runner.runModel(input);
    },
  };
  return driver;
}

const outcome = (
  call: { toolCallId: string; name: string },
  status: RecordedOutcome["status"],
  text: string,
): RecordedOutcome => ({
  toolCallId: call.toolCallId,
  name: call.name,
  status,
  text,
  output: status === "succeeded" ? text : null,
});

/** A tool call step's input for call `toolCallId` of session "s", turn "t", first attempt. */
const callInput = (toolCallId: string, name: string, args: string) => ({
  sessionId: "s",
  turnId: "t",
  toolCallId,
  name,
  arguments: args,
  attempt: 1,
  idempotencyKey: `s/t/${toolCallId}`,
  signal: new AbortController().signal,
});

export function runnerConformance(t: TestApi, options: RunnerConformanceOptions): void {
  const calls = () => options.modelCalls?.() ?? null;
  const test = (name: string, body: () => Promise<void>) => t.it(name, body, 30_000);

  t.describe("runner conformance", () => {
    test("lists its tools with their approval needs", async () => {
      const { runner } = await fixture(options);
      const tools = new Map(runner.tools().map((tool) => [tool.name, tool]));
      assert.deepEqual([...tools.keys()].sort(), ["broken_tool", "cancel_order", "look_up_order", "picky_tool"]);
      assert.equal(tools.get("cancel_order")?.approval, "always");
      assert.equal(tools.get("look_up_order")?.approval, "never");
    });

    test("a lookup: tool calls from one model call, the tool run only by callTool, the outcome back to the model", async () => {
      const { runner, executed, keys } = await fixture(options);
      const before = calls();
      const turn = startTurn(runner, 'call look_up_order {"order_id":"1001"}');
      const first = await turn.step(null, []);
      assert.equal(first.kind, "tool_calls");
      if (first.kind !== "tool_calls") return;
      if (before !== null) assert.equal(calls(), before + 1, "one model call per step");
      assert.deepEqual(executed, [], "runModel never runs a tool");
      assert.equal(first.calls.length, 1);
      const call = first.calls[0]!;
      assert.equal(call.name, "look_up_order");
      assert.deepEqual(JSON.parse(call.arguments), { order_id: "1001" });
      assert.equal(call.needsApproval, false);
      assert.equal(first.usage.modelCalls, 1);
      const context = {
        sessionId: "runner-suite",
        turnId: "turn-1",
        toolCallId: call.toolCallId,
        toolName: call.name,
        idempotencyKey: `runner-suite/turn-1/${call.toolCallId}`,
        attempt: 1,
      };
      const result = await runInToolCall(context, () =>
        runner.callTool({
          ...context,
          name: call.name,
          arguments: call.arguments,
          signal: new AbortController().signal,
        }),
      );
      assert.deepEqual(result, { status: "succeeded", output: "order 1001 is shipped" });
      assert.deepEqual(keys, [context.idempotencyKey], "the tool sees the call's idempotency key");
      const second = await turn.step(first.runState, [outcome(call, "succeeded", "order 1001 is shipped")]);
      assert.equal(second.kind, "final");
      if (second.kind !== "final") return;
      if (before !== null) assert.equal(calls(), before + 2);
      assert.equal(second.text, "Results: look_up_order -> order 1001 is shipped");
      assert.ok(second.items.length >= 1);
      assert.equal(second.items.at(-1)?.display.role, "assistant");
      assert.equal(second.items.at(-1)?.display.text, second.text);
      assert.deepEqual(executed, ["look_up_order"]);
    });

    test("two calls of one response come in model order, with the framework's approval flag", async () => {
      const { runner, executed } = await fixture(options);
      const turn = startTurn(runner, 'call look_up_order {"order_id":"1"}\ncall cancel_order {"order_id":"2"}');
      const result = await turn.step(null, []);
      assert.equal(result.kind, "tool_calls");
      if (result.kind !== "tool_calls") return;
      assert.deepEqual(
        result.calls.map((c) => [c.name, c.needsApproval]),
        [
          ["look_up_order", false],
          ["cancel_order", true],
        ],
      );
      assert.notEqual(result.calls[0]!.toolCallId, result.calls[1]!.toolCallId);
      assert.deepEqual(executed, []);
    });

    test("rejected and unknown outcomes reach the model as their text", async () => {
      const { runner } = await fixture(options);
      const turn = startTurn(runner, 'call look_up_order {"order_id":"1"}\ncall cancel_order {"order_id":"2"}');
      const first = await turn.step(null, []);
      if (first.kind !== "tool_calls") return assert.fail("expected tool calls");
      const [lookup, cancel] = first.calls;
      const final = await turn.step(first.runState, [
        outcome(lookup!, "outcome_unknown", "The outcome is unknown."),
        outcome(cancel!, "rejected", "No, keep that order."),
      ]);
      assert.equal(final.kind, "final");
      if (final.kind !== "final") return;
      assert.equal(
        final.text,
        "Results: look_up_order -> The outcome is unknown. | cancel_order -> No, keep that order.",
      );
    });

    test("invalid arguments are failed and the tool does not run", async () => {
      const { runner, executed } = await fixture(options);
      const result = await runner.callTool(callInput("c1", "look_up_order", '{"order":1001}'));
      assert.equal(result.status, "failed");
      const broken = await runner.callTool(callInput("c2", "look_up_order", "{not json"));
      assert.equal(broken.status, "failed");
      assert.deepEqual(executed, []);
    });

    test("a tool's error reaches the engine; a ToolExecutionError stays recognisable", async () => {
      const { runner, executed } = await fixture(options);
      await assert.rejects(runner.callTool(callInput("c1", "broken_tool", '{"n":1}')), /broken_tool exploded/);
      await assert.rejects(
        runner.callTool(callInput("c2", "picky_tool", '{"n":4}')),
        (error: unknown) => ToolExecutionError.isInstance(error) && /prime/.test((error as Error).message),
      );
      assert.deepEqual(executed, ["broken_tool", "picky_tool"]);
    });

    test("streamed text deltas join to the final text; usage counts this step only", async () => {
      const { runner } = await fixture(options);
      const text = Array.from({ length: 12 }, (_, i) => `part${i}`).join(" ");
      const turn = startTurn(runner, text);
      const result = await turn.step(null, []);
      assert.equal(result.kind, "final");
      if (result.kind !== "final") return;
      assert.equal(result.text, `You said: ${text}`);
      const streamed = turn.deltas
        .filter((d) => d.kind === "text")
        .map((d) => d.text)
        .join("");
      assert.equal(streamed, result.text);
      assert.ok(turn.deltas.length >= 2, "the text streams in several deltas");
      assert.equal(result.usage.modelCalls, 1);
      assert.ok(result.usage.totalTokens >= result.usage.inputTokens);
    });

    test("a second turn replays the stored history; a failure note is a note", async () => {
      const { runner } = await fixture(options);
      const first = startTurn(runner, "hello");
      const one = await first.step(null, []);
      if (one.kind !== "final") return assert.fail("expected a final answer");
      const note = runner.userItem("turn_failure_note", "[previous turn failed] the model was down");
      assert.equal(note.display.role, "note");
      assert.equal(note.display.text, "[previous turn failed] the model was down");
      const stored = JSON.parse(JSON.stringify([...first.history, ...one.items, note])) as HistoryItem[];
      const second = startTurn(runner, "again", stored);
      const two = await second.step(null, []);
      if (two.kind !== "final") return assert.fail("expected a final answer");
      assert.equal(two.text, "(noted 1 failed turn(s)) You said: again");
    });
  });
}

import {
  ContractViolationError,
  DurableAgentsError,
  StoredStateError,
  ToolExecutionError,
  currentToolCall,
} from "@durable-agents/core";
import type { RunModelInput, RunModelResult } from "@durable-agents/core/engine";
import { tool, type ModelMessage } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AiSdkRunner } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";
import { driveTurn } from "./support/turn-driver.js";

function makeAgent(options: { reasoning?: boolean } = {}) {
  const runs: { name: string; args: unknown; key: string | undefined; attempt: number | undefined }[] = [];
  const model = new ScriptedLanguageModel({ reasoning: options.reasoning ?? false });
  const record = (name: string, args: unknown) => {
    const context = currentToolCall();
    runs.push({ name, args, key: context?.idempotencyKey, attempt: context?.attempt });
  };
  const tools = {
    add: tool({
      description: "Adds two numbers",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => {
        record("add", { a, b });
        return { sum: a + b };
      },
    }),
    echo: tool({
      description: "Echoes a text",
      inputSchema: z.object({ text: z.string() }),
      execute: async ({ text }) => {
        record("echo", { text });
        return text;
      },
    }),
    refund: tool({
      description: "Refunds an order (always asks a person)",
      inputSchema: z.object({ order: z.string() }),
      needsApproval: true,
      execute: async ({ order }) => {
        record("refund", { order });
        return `refunded ${order}`;
      },
    }),
    transfer: tool({
      description: "Moves money; large amounts need a person",
      inputSchema: z.object({ amount: z.number() }),
      needsApproval: async ({ amount }) => amount > 100,
      execute: async ({ amount }) => {
        record("transfer", { amount });
        return `moved ${amount}`;
      },
    }),
    explode: tool({
      description: "Always fails",
      inputSchema: z.object({ kind: z.string() }),
      execute: async ({ kind }): Promise<string> => {
        record("explode", { kind });
        if (kind === "model") throw new ToolExecutionError("the model should see this");
        throw new Error(`boom: ${kind}`);
      },
    }),
  };
  const runner = new AiSdkRunner({ model, instructions: "You are a test agent.", tools });
  return { runner, model, runs };
}

function firstStep(runner: AiSdkRunner, text: string, emit: RunModelInput["emit"] = () => {}) {
  return runner.runModel({
    sessionId: "s-1",
    turnId: "t-1",
    modelStep: 1,
    history: [runner.userItem("message", text)],
    turnStart: 0,
    runState: null,
    outcomes: [],
    joined: [],
    signal: new AbortController().signal,
    emit,
  });
}

const callInput = (name: string, args: string, toolCallId = "call-1") => ({
  sessionId: "s-1",
  turnId: "t-1",
  toolCallId,
  name,
  arguments: args,
  attempt: 2,
  idempotencyKey: `s-1/t-1/${toolCallId}`,
  signal: new AbortController().signal,
});

const toolCalls = (result: RunModelResult) => {
  if (result.kind !== "tool_calls") throw new Error(`expected tool calls, got ${result.kind}`);
  return result;
};

describe("AiSdkRunner.runModel", () => {
  it("makes exactly one model call per step and never runs a tool itself", async () => {
    const { runner, model, runs } = makeAgent();
    const script = 'call add {"a":1,"b":2}\ncall echo {"text":"hi"}\nthen\ncall echo {"text":"again"}';
    const step1 = toolCalls(await firstStep(runner, script));
    expect(model.calls).toBe(1);
    expect(runs).toEqual([]);
    expect(step1.calls.map((call) => [call.name, call.arguments])).toEqual([
      ["add", '{"a":1,"b":2}'],
      ["echo", '{"text":"hi"}'],
    ]);

    const turn = await driveTurn(runner, [], script);
    // Three RunModel steps (two tool responses, one final), one model call each.
    expect(turn.results.map((result) => result.kind)).toEqual(["tool_calls", "tool_calls", "final"]);
    expect(model.calls).toBe(1 + 3);
    expect(runs.map((run) => run.name)).toEqual(["add", "echo", "echo"]);
    expect(turn.final.text).toBe('Results: add -> {"sum":3} | echo -> hi | echo -> again');
  });

  it("answers a retried step with the same calls and IDs", async () => {
    const { runner } = makeAgent();
    const a = toolCalls(await firstStep(runner, 'call add {"a":2,"b":2}'));
    const b = toolCalls(await firstStep(runner, 'call add {"a":2,"b":2}'));
    expect(a.calls).toEqual(b.calls);
    expect(a.runState).toBe(b.runState);
    expect(a.calls[0]!.toolCallId).toMatch(/^call_[0-9a-f]{12}_1_1$/);
  });

  it("hands arguments that do not fit the schema over verbatim, for callTool to refuse", async () => {
    const { runner, runs } = makeAgent();
    const step = toolCalls(await firstStep(runner, 'call add {"a":"one"}\ncall echo not-json'));
    expect(step.calls.map((call) => call.arguments)).toEqual(['{"a":"one"}', "not-json"]);
    const turn = await driveTurn(runner, [], 'call add {"a":"one"}\ncall echo not-json');
    expect(runs).toEqual([]);
    expect(turn.final.text).toContain('add -> failed: invalid arguments for "add"');
    expect(turn.final.text).toContain('echo -> failed: the arguments of "echo" are not valid JSON');
  });

  it("honours the SDK's needsApproval flag: boolean, per call, and absent", async () => {
    const { runner } = makeAgent();
    expect(runner.tools()).toEqual([
      { name: "add", approval: "never" },
      { name: "echo", approval: "never" },
      { name: "refund", approval: "always" },
      { name: "transfer", approval: "per_call" },
      { name: "explode", approval: "never" },
    ]);
    const step = toolCalls(
      await firstStep(
        runner,
        'call refund {"order":"A-1"}\ncall transfer {"amount":500}\ncall transfer {"amount":5}\ncall add {"a":1,"b":1}\ncall transfer {"amount":"lots"}',
      ),
    );
    expect(step.calls.map((call) => [call.name, call.needsApproval])).toEqual([
      ["refund", true],
      ["transfer", true],
      ["transfer", false],
      ["add", false],
      // Invalid arguments never run, so the per-call function is not asked.
      ["transfer", false],
    ]);
  });

  it("hands every outcome back to the model as a tool result it can read", async () => {
    const { runner, model, runs } = makeAgent();
    const script =
      'call echo {"text":"one"}\ncall refund {"order":"A-1"}\ncall transfer {"amount":500}\ncall explode {"kind":"model"}';
    const turn = await driveTurn(runner, [], script, (call) =>
      call.name === "refund"
        ? { status: "rejected", text: "A person rejected this tool call: not today" }
        : call.name === "transfer"
          ? { status: "outcome_unknown", text: "The outcome of this tool call is unknown" }
          : { status: "run" },
    );
    expect(runs.map((run) => run.name)).toEqual(["echo", "explode"]);
    expect(turn.final.text).toBe(
      "Results: echo -> one | refund -> A person rejected this tool call: not today | " +
        "transfer -> The outcome of this tool call is unknown | explode -> failed: the model should see this",
    );
    // What the provider saw: one tool message per call, in model order, with the SDK's own output kinds.
    const prompt = model.doStreamCalls.at(-1)!.prompt;
    const results = prompt.filter((message) => message.role === "tool").flatMap((message) => message.content);
    expect(
      results.map((part) => (part.type === "tool-result" ? [part.toolName, part.output.type] : part.type)),
    ).toEqual([
      ["echo", "text"],
      ["refund", "execution-denied"],
      ["transfer", "error-text"],
      ["explode", "error-text"],
    ]);
  });

  it("streams text and reasoning deltas that join to the final text", async () => {
    const { runner } = makeAgent({ reasoning: true });
    const deltas: { kind: string; text: string }[] = [];
    const result = await firstStep(runner, "Hello there, durable world", (delta) => deltas.push(delta));
    expect(result.kind).toBe("final");
    const text = deltas.filter((delta) => delta.kind === "text");
    expect(text.length).toBeGreaterThan(1);
    expect(text.map((delta) => delta.text).join("")).toBe(result.kind === "final" ? result.text : "");
    expect(result.kind === "final" && result.text).toBe("You said: Hello there, durable world");
    expect(
      deltas
        .filter((delta) => delta.kind === "reasoning")
        .map((delta) => delta.text)
        .join(""),
    ).toMatch(/^Turn message of 26 characters/);
  });

  it("reports the usage of its own step only", async () => {
    const { runner, model } = makeAgent();
    const turn = await driveTurn(runner, [], 'call echo {"text":"a long enough text to change the prompt size"}');
    const usages = turn.results.map((result) => result.usage);
    const expectedInput = model.doStreamCalls.map((call) => Math.ceil(JSON.stringify(call.prompt).length / 4));
    expect(usages.map((usage) => usage.inputTokens)).toEqual(expectedInput);
    expect(usages.every((usage) => usage.modelCalls === 1)).toBe(true);
    expect(usages.every((usage) => usage.totalTokens === usage.inputTokens + usage.outputTokens)).toBe(true);
    // The second prompt carries the first response and its result, so it is larger.
    expect(usages[1]!.inputTokens).toBeGreaterThan(usages[0]!.inputTokens);
  });

  it("stores the turn as SDK model messages with display projections, replayed on the next turn", async () => {
    const { runner, model } = makeAgent();
    const first = await driveTurn(runner, [], 'call add {"a":20,"b":22}');
    const stored = JSON.parse(JSON.stringify(first.history)) as typeof first.history;
    expect(stored).toEqual(first.history);
    expect(stored.map((entry) => entry.display)).toEqual([
      { role: "user", text: 'call add {"a":20,"b":22}' },
      {
        role: "assistant",
        text: "",
        toolCalls: [{ toolCallId: expect.stringMatching(/^call_/), name: "add", arguments: '{"a":20,"b":22}' }],
      },
      { role: "tool", text: '{"sum":42}', toolCallId: expect.stringMatching(/^call_/) },
      { role: "assistant", text: 'Results: add -> {"sum":42}' },
    ]);
    expect((stored[1]!.item as ModelMessage).role).toBe("assistant");

    const second = await driveTurn(
      runner,
      [...stored, runner.userItem("turn_failure_note", "[previous turn failed] it broke")],
      "what now?",
    );
    expect(second.final.text).toBe("(noted 1 failed turn(s)) You said: what now?");
    const prompt = model.doStreamCalls.at(-1)!.prompt;
    expect(prompt.map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "user",
    ]);
    expect(second.history.at(-3)!.display).toEqual({ role: "note", text: "[previous turn failed] it broke" });
    expect(second.history.at(-1)!.display).toEqual({
      role: "assistant",
      text: "(noted 1 failed turn(s)) You said: what now?",
    });
  });

  it("refuses a damaged or newer run state (stored state) and outcomes that do not match the calls (the engine's contract)", async () => {
    const { runner, model } = makeAgent();
    const step = toolCalls(await firstStep(runner, 'call echo {"text":"x"}'));
    const base = {
      sessionId: "s-1",
      turnId: "t-1",
      modelStep: 2,
      history: [runner.userItem("message", 'call echo {"text":"x"}')],
      turnStart: 0,
      joined: [],
      signal: new AbortController().signal,
      emit: () => {},
    };
    const calls = model.calls;
    const stored = (reason: string, version: unknown) => (error: unknown) =>
      StoredStateError.isInstance(error) &&
      error.format === "ai_sdk_run_state" &&
      error.reason === reason &&
      error.version === version;
    await expect(runner.runModel({ ...base, runState: "{not json", outcomes: [] })).rejects.toSatisfy(
      stored("malformed", undefined),
    );
    await expect(runner.runModel({ ...base, runState: '{"version":9}', outcomes: [] })).rejects.toSatisfy(
      stored("unknown_version", 9),
    );
    await expect(runner.runModel({ ...base, runState: '{"version":1}', outcomes: [] })).rejects.toSatisfy(
      stored("malformed", 1),
    );
    await expect(runner.runModel({ ...base, runState: step.runState, outcomes: [] })).rejects.toSatisfy(
      ContractViolationError.isInstance,
    );
    await expect(
      runner.runModel({
        ...base,
        runState: null,
        outcomes: [{ toolCallId: "x", name: "echo", status: "succeeded", text: "x", output: "x" }],
      }),
    ).rejects.toSatisfy((error: unknown) => ContractViolationError.isInstance(error) && error.party === "engine");
    expect(model.calls).toBe(calls);
  });

  it("lets a model error reach the engine, after a single attempt", async () => {
    const model = new MockLanguageModelV4({
      doStream: async () => {
        throw new Error("provider is down");
      },
    });
    const runner = new AiSdkRunner({ model, tools: {} });
    await expect(firstStep(runner, "hi")).rejects.toThrow("provider is down");
    expect(model.doStreamCalls.length).toBe(1);
  });

  it("stops when the step is aborted", async () => {
    const { runner } = makeAgent();
    const controller = new AbortController();
    controller.abort(new Error("lease lost"));
    await expect(
      runner.runModel({
        sessionId: "s-1",
        turnId: "t-1",
        modelStep: 1,
        history: [runner.userItem("message", "hi")],
        turnStart: 0,
        runState: null,
        outcomes: [],
        joined: [],
        signal: controller.signal,
        emit: () => {},
      }),
    ).rejects.toThrow();
  });
});

describe("AiSdkRunner.callTool", () => {
  it("runs the tool once and returns text, or JSON of an object output", async () => {
    const { runner, runs } = makeAgent();
    expect(await runner.callTool(callInput("echo", '{"text":"hello"}'))).toEqual({
      status: "succeeded",
      output: "hello",
    });
    expect(await runner.callTool(callInput("add", '{"a":1,"b":2}'))).toEqual({
      status: "succeeded",
      output: '{"sum":3}',
    });
    expect(runs.map((run) => run.name)).toEqual(["echo", "add"]);
  });

  it("refuses invalid arguments without running the tool", async () => {
    const { runner, runs } = makeAgent();
    const wrongType = await runner.callTool(callInput("add", '{"a":"1","b":2}'));
    expect(wrongType.status).toBe("failed");
    expect(wrongType.status === "failed" && wrongType.message).toMatch(/^invalid arguments for "add": a: /);
    const missing = await runner.callTool(callInput("add", '{"a":1}'));
    expect(missing.status === "failed" && missing.message).toMatch(/b: /);
    const notJson = await runner.callTool(callInput("echo", "{text:"));
    expect(notJson.status === "failed" && notJson.message).toMatch(/not valid JSON/);
    const unknown = await runner.callTool(callInput("nope", "{}"));
    expect(unknown.status === "failed" && unknown.message).toMatch(/no tool named "nope"/);
    expect(runs).toEqual([]);
  });

  it("lets a tool's error reach the engine, ToolExecutionError included", async () => {
    const { runner, runs } = makeAgent();
    await expect(runner.callTool(callInput("explode", '{"kind":"network"}'))).rejects.toThrow("boom: network");
    const error = await runner.callTool(callInput("explode", '{"kind":"model"}')).catch((caught: unknown) => caught);
    expect(ToolExecutionError.isInstance(error)).toBe(true);
    expect(DurableAgentsError.isInstance(error) && error.message).toBe("the model should see this");
    expect(runs.length).toBe(2);
  });

  it("gives the tool the call's idempotency key and attempt", async () => {
    const { runner, runs } = makeAgent();
    await runner.callTool(callInput("echo", '{"text":"k"}', "call-77"));
    expect(runs).toEqual([{ name: "echo", args: { text: "k" }, key: "s-1/t-1/call-77", attempt: 2 }]);
  });
});

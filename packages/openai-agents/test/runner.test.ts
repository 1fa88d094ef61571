import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { MaxTurnsExceededError, type ModelRequest } from "@openai/agents";
import { ContractViolationError, ToolExecutionError, type HistoryItem, type Runner } from "@durable-agents/core";
import type { ModelDelta, RecordedOutcome, RunModelInput } from "@durable-agents/core/engine";
import { TURN_CANCELLED_NOTE_PREFIX, scriptedHangs, scriptedToolCallId } from "@durable-agents/core/testing";
import { RunStateMismatchError } from "../src/index.js";
import { ScriptedModel, scriptedInputFromItems } from "../src/testing/index.js";
import { orderAgent } from "./fixtures.js";
import { callOnce, runTurn } from "./harness.js";

function input(
  _runner: Runner,
  history: HistoryItem[],
  turnStart: number,
  runState: string | null,
  outcomes: RecordedOutcome[],
  emit: (d: ModelDelta) => void = () => {},
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
    emit,
  };
}

describe("OpenAIAgentsRunner", () => {
  it("makes one model call per step, asks for calls in model order, and never runs a real tool inside runModel", async () => {
    const { runner, model, runs } = orderAgent();
    const text = 'call look_up {"id":"1"}\ncall look_up {"id":"2"}\nthen\ncall look_up {"id":"3"}';
    const history = [runner.userItem("message", text)];
    const first = await runner.runModel(input(runner, history, 0, null, []));
    expect(model.calls).toBe(1);
    expect(runs).toEqual([]);
    expect(first.kind).toBe("tool_calls");
    if (first.kind !== "tool_calls") return;
    expect(first.usage.modelCalls).toBe(1);
    const scripted = { userText: text, toolResponses: 0, toolResults: [], failureNotesSeen: 0 };
    expect(first.calls.map((c) => [c.toolCallId, c.name, c.arguments, c.needsApproval])).toEqual([
      [scriptedToolCallId(scripted, 0), "look_up", '{"id":"1"}', false],
      [scriptedToolCallId(scripted, 1), "look_up", '{"id":"2"}', false],
    ]);

    const outcomes1 = [];
    for (const call of first.calls) outcomes1.push(await callOnce(runner, "s", "t", call));
    expect(runs.map((r) => r.args)).toEqual([{ id: "1" }, { id: "2" }]);
    const second = await runner.runModel(input(runner, history, 0, first.runState, outcomes1));
    expect(model.calls).toBe(2);
    expect(runs).toHaveLength(2); // resuming hands back the recorded results; the copies run nothing
    expect(second.kind).toBe("tool_calls");
    if (second.kind !== "tool_calls") return;
    expect(second.usage.modelCalls).toBe(1);
    expect(second.calls.map((c) => c.arguments)).toEqual(['{"id":"3"}']);

    const outcomes2 = [await callOnce(runner, "s", "t", second.calls[0]!)];
    const third = await runner.runModel(input(runner, history, 0, second.runState, outcomes2));
    expect(model.calls).toBe(3);
    expect(runs).toHaveLength(3);
    expect(third.kind).toBe("final");
    if (third.kind !== "final") return;
    expect(third.usage.modelCalls).toBe(1);
    expect(third.text).toBe(
      "Results: look_up -> order 1 is shipped | look_up -> order 2 is shipped | look_up -> order 3 is shipped",
    );
    // one history item per SDK item after the user item, with display projections
    expect(third.items.map((i) => i.display.role)).toEqual([
      "assistant",
      "assistant",
      "tool",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(third.items[0]!.display.toolCalls?.[0]).toEqual({
      toolCallId: first.calls[0]!.toolCallId,
      name: "look_up",
      arguments: '{"id":"1"}',
    });
    expect(third.items[2]!.display).toEqual({
      role: "tool",
      text: "order 1 is shipped",
      toolCallId: first.calls[0]!.toolCallId,
    });
    expect(third.items.at(-1)!.display).toEqual({ role: "assistant", text: third.text });
    expect((third.items.at(-1)!.item as { type: string }).type).toBe("message");
  });

  it("hands every kind of recorded outcome back to the model as its text", async () => {
    const { runner, runs } = orderAgent();
    const history: HistoryItem[] = [];
    const turn = await runTurn(
      runner,
      history,
      'call look_up {"id":"1"}\ncall cancel {"id":"2"}\ncall refund {"id":"3","amount":5}\ncall look_up {"id":"4"}',
      {
        decide: (call) => {
          if (call.name === "cancel") return { status: "rejected", text: "Not today, said Dana.", output: null };
          if (call.name === "refund")
            return { status: "outcome_unknown", text: "The outcome is unknown: the worker died.", output: null };
          if (call.arguments.includes('"4"'))
            return { status: "failed", text: "The tool call failed: timeout", output: null };
          return undefined;
        },
      },
    );
    expect(turn.text).toBe(
      "Results: look_up -> order 1 is shipped | cancel -> Not today, said Dana. | refund -> The outcome is unknown: the worker died. | look_up -> The tool call failed: timeout",
    );
    expect(runs.map((r) => r.name)).toEqual(["look_up"]);
  });

  it("reports the tool's own needsApproval, evaluated per call on the parsed arguments", async () => {
    const { runner } = orderAgent();
    const history = [
      runner.userItem(
        "message",
        'call refund {"id":"1","amount":50}\ncall refund {"id":"2","amount":500}\ncall cancel {"id":"3"}',
      ),
    ];
    const result = await runner.runModel(input(runner, history, 0, null, []));
    if (result.kind !== "tool_calls") throw new Error("expected tool calls");
    expect(result.calls.map((c) => c.needsApproval)).toEqual([false, true, true]);
    const tools = new Map(runner.tools().map((t) => [t.name, t]));
    expect(tools.get("refund")).toEqual({ name: "refund", approval: "per_call" });
    expect(tools.get("cancel")).toEqual({ name: "cancel", approval: "always" });
    expect(tools.get("look_up")).toEqual({ name: "look_up", approval: "never", defaultEffect: "read" });
  });

  it("validates arguments in callTool: invalid ones fail with a clear message and the tool does not run", async () => {
    const { runner, runs } = orderAgent();
    const call = (args: string) =>
      callOnce(runner, "s", "t", { toolCallId: "c1", name: "refund", arguments: args, needsApproval: false });
    const mistyped = await call('{"id":"1","amount":"lots"}');
    expect(mistyped.status).toBe("failed");
    expect(mistyped.text).toMatch(/Invalid arguments for tool "refund": amount: .*number/);
    const notJson = await call("{oops");
    expect(notJson.status).toBe("failed");
    expect(notJson.text).toMatch(/Invalid arguments for tool "refund": not valid JSON/);
    const unknown = await callOnce(runner, "s", "t", {
      toolCallId: "c2",
      name: "nope",
      arguments: "{}",
      needsApproval: false,
    });
    expect(unknown.text).toMatch(/no tool named "nope"/);
    expect(runs).toEqual([]);
    const ok = await call('{"id":"1","amount":7}');
    expect(ok).toMatchObject({ status: "succeeded", output: '{"refunded":"1","amount":7}' });
  });

  it("lets a tool's errors reach the engine: a plain error throws, a ToolExecutionError throws as itself", async () => {
    const { runner } = orderAgent();
    const base = {
      sessionId: "s",
      turnId: "t",
      toolCallId: "c",
      arguments: "{}",
      attempt: 1,
      idempotencyKey: "s/t/c",
      signal: new AbortController().signal,
    };
    await expect(runner.callTool({ ...base, name: "explode" })).rejects.toThrow("the warehouse is on fire");
    const error = await runner.callTool({ ...base, name: "picky" }).catch((e: unknown) => e);
    expect(ToolExecutionError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe("picky wants a prime number");
  });

  it("gives the tool the call's idempotency key through the tool call context", async () => {
    const { runner, runs } = orderAgent();
    await runTurn(runner, [], 'call look_up {"id":"9"}');
    expect(runs[0]!.key).toMatch(/^s1\/t0\/call_/);
  });

  it("a call whose arguments are not JSON is still a step's call; it fails without running and the model is told", async () => {
    const { runner, runs, model } = orderAgent();
    const turn = await runTurn(runner, [], "call refund {not json");
    expect(turn.steps[0]!.result.kind).toBe("tool_calls");
    expect(turn.outcomes[0]!.status).toBe("failed");
    expect(turn.outcomes[0]!.text).toMatch(/not valid JSON/);
    // The SDK answers a call it cannot parse with its own text (it redacts the arguments).
    expect(turn.text).toBe(
      "Results: refund -> An error occurred while parsing tool arguments. Please try again with valid JSON.",
    );
    expect(runs).toEqual([]);
    expect(model.calls).toBe(2);
  });

  it("streams text and reasoning deltas that join to the final text", async () => {
    const { runner, model } = orderAgent({ streamChunks: 4, reasoningDeltas: 2 });
    const deltas: ModelDelta[] = [];
    const turn = await runTurn(runner, [], 'call look_up {"id":"5"}', { onDelta: (d) => deltas.push(d) });
    const text = deltas.filter((d) => d.kind === "text");
    expect(text.length).toBeGreaterThanOrEqual(3);
    expect(text.map((d) => d.text).join("")).toBe(turn.text);
    expect(deltas.filter((d) => d.kind === "reasoning").length).toBe(4); // two per model call
    expect(model.streamedCalls).toBe(model.calls);
  });

  it("reports the usage of each step alone", async () => {
    const { runner, model } = orderAgent({ reportUsage: true });
    const turn = await runTurn(runner, [], 'call look_up {"id":"1"}\nthen\ncall look_up {"id":"2"}');
    expect(turn.usage).toHaveLength(3);
    turn.usage.forEach((usage, i) => {
      const reported = model.usages[i]!;
      expect(usage).toEqual({ modelCalls: 1, ...reported });
      expect(usage.inputTokens).toBeGreaterThan(0);
    });
    expect(turn.usage[2]!.inputTokens).toBeGreaterThan(turn.usage[0]!.inputTokens);
  });

  it("passes maxTurns again on every resume: it counts the model calls of the whole turn", async () => {
    const { runner, model } = orderAgent({}, { maxTurns: 2 });
    const script = 'call look_up {"id":"1"}\nthen\ncall look_up {"id":"2"}\nthen\ncall look_up {"id":"3"}';
    const error = await runTurn(runner, [], script).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MaxTurnsExceededError);
    expect(model.calls).toBe(2);
    const { runner: roomy } = orderAgent({}, { maxTurns: 3 });
    await expect(runTurn(roomy, [], 'call look_up {"id":"1"}\nthen\ncall look_up {"id":"2"}')).resolves.toMatchObject({
      text: expect.stringContaining("order 2"),
    });
  });

  it("keeps the session history out of the saved run state and restores it on resume", async () => {
    const script = 'call look_up {"id":"1"}';
    const sizes: number[] = [];
    for (const earlier of [1, 40]) {
      const { runner } = orderAgent();
      const history: HistoryItem[] = [];
      for (let i = 0; i < earlier; i++) await runTurn(runner, history, `message ${i} ${"x".repeat(500)}`);
      const turn = await runTurn(runner, history, script);
      const step = turn.steps[0]!.result;
      if (step.kind !== "tool_calls") throw new Error("expected tool calls");
      const envelope = JSON.parse(step.runState) as { p: number; z: string };
      expect(envelope.p).toBe(history.length - turn.items.length); // every item up to and with the user item
      const stored = gunzipSync(Buffer.from(envelope.z, "base64")).toString("utf8");
      expect(stored).not.toContain("x".repeat(500));
      expect(JSON.parse(stored).originalInput).toEqual([]);
      sizes.push(Buffer.byteLength(step.runState));
      expect(turn.text).toBe("Results: look_up -> order 1 is shipped");
    }
    expect(Math.abs(sizes[1]! - sizes[0]!)).toBeLessThan(16);

    const { runner: full } = orderAgent({}, { compactRunState: false });
    const history: HistoryItem[] = [];
    await runTurn(full, history, `earlier ${"y".repeat(500)}`);
    const turn = await runTurn(full, history, script);
    const step = turn.steps[0]!.result;
    expect(step.kind === "tool_calls" && step.runState.includes("y".repeat(500))).toBe(true);
    expect(turn.text).toBe("Results: look_up -> order 1 is shipped");
    expect(step.kind === "tool_calls" && Buffer.byteLength(step.runState)).toBeGreaterThan(3 * sizes[0]!);
  });

  it("refuses to resume on a history that is not the one the run state was saved with", async () => {
    const { runner } = orderAgent();
    const history: HistoryItem[] = [];
    await runTurn(runner, history, "hello");
    const turnStart = history.length;
    history.push(runner.userItem("message", 'call look_up {"id":"1"}'));
    const first = await runner.runModel(input(runner, history, turnStart, null, []));
    if (first.kind !== "tool_calls") throw new Error("expected tool calls");
    const outcomes = [await callOnce(runner, "s", "t", first.calls[0]!)];
    const altered = [runner.userItem("message", "something else"), ...history.slice(1)];
    await expect(runner.runModel(input(runner, altered, turnStart, first.runState, outcomes))).rejects.toSatisfy(
      RunStateMismatchError.isInstance,
    );
    const missing = await runner
      .runModel(input(runner, history, turnStart, first.runState, []))
      .catch((e: unknown) => e);
    expect(ContractViolationError.isInstance(missing) && missing.party === "engine").toBe(true);
    expect((missing as Error).message).toMatch(/no outcome was recorded/);
    await expect(runner.runModel(input(runner, history, turnStart, "{}", outcomes))).rejects.toSatisfy(
      RunStateMismatchError.isInstance,
    );
  });

  it("builds user items and turn-failure notes the scripted model reads back", () => {
    const { runner } = orderAgent();
    const message = runner.userItem("message", "hi");
    const note = runner.userItem("turn_failure_note", "[previous turn failed] boom");
    expect(message.display).toEqual({ role: "user", text: "hi" });
    expect(note.display).toEqual({ role: "note", text: "[previous turn failed] boom" });
    expect(scriptedInputFromItems([note.item, message.item] as never)).toEqual({
      userText: "hi",
      toolResponses: 0,
      toolResults: [],
      failureNotesSeen: 1,
      cancelNotesSeen: 0,
      steered: [],
    });
  });

  it("the scripted model reads steered messages (after the turn's message or a tool result) and cancel notes", () => {
    const { runner } = orderAgent();
    const items = [
      runner.userItem("message", "earlier").item,
      runner.userItem("turn_failure_note", `${TURN_CANCELLED_NOTE_PREFIX} it was cancelled`).item,
      runner.userItem("message", 'call look_up {"id":"1"}').item,
      runner.userItem("message", "first aside").item,
      { type: "function_call", callId: "c1", name: "look_up", arguments: '{"id":"1"}', status: "completed" },
      { type: "function_call_result", callId: "c1", name: "look_up", status: "completed", output: "shipped" },
      runner.userItem("message", "second aside").item,
    ];
    expect(scriptedInputFromItems(items as never)).toEqual({
      userText: 'call look_up {"id":"1"}',
      toolResponses: 1,
      toolResults: [{ name: "look_up", text: "shipped" }],
      failureNotesSeen: 0,
      cancelNotesSeen: 1,
      steered: ["first aside", "second aside"],
    });
  });

  it("the scripted model hangs at 'hang model' until the request's signal aborts", async () => {
    const model = new ScriptedModel();
    const userText = "openai-agents testing: hang here\nhang model";
    const controller = new AbortController();
    const request = { input: userText, signal: controller.signal } as unknown as ModelRequest;
    const answered = model.getResponse(request).then(
      () => "answered",
      (error: unknown) => (error as Error).message,
    );
    expect(scriptedHangs(userText)).toEqual({ started: 1, aborted: 0 });
    controller.abort(new Error("stop now"));
    expect(await answered).toBe("stop now");
    expect(scriptedHangs(userText)).toEqual({ started: 1, aborted: 1 });
  });

  it("a retried step (same run state, same outcomes) gets the same answer", async () => {
    const { runner, runs } = orderAgent();
    const history = [runner.userItem("message", 'call look_up {"id":"1"}\nthen\ncall look_up {"id":"2"}')];
    const first = await runner.runModel(input(runner, history, 0, null, []));
    const again = await runner.runModel(input(runner, history, 0, null, []));
    if (first.kind !== "tool_calls" || again.kind !== "tool_calls") throw new Error("expected tool calls");
    expect(again.calls).toEqual(first.calls);
    const outcomes = [await callOnce(runner, "s", "t", first.calls[0]!)];
    const second = await runner.runModel(input(runner, history, 0, first.runState, outcomes));
    const retried = await runner.runModel(input(runner, history, 0, first.runState, outcomes));
    expect(retried).toEqual(second);
    expect(runs).toHaveLength(1);
  });

  it("hands the application's context to instructions and tools, on the first step and on resume", async () => {
    const { z } = await import("zod");
    const { Agent } = await import("@openai/agents");
    const { durableTool, OpenAIAgentsRunner } = await import("../src/index.js");
    const { ScriptedModel } = await import("../src/testing/index.js");
    const seen: string[] = [];
    const whoAmI = durableTool({
      name: "who_am_i",
      description: "The tenant.",
      parameters: z.object({}),
      execute: (_args, context) => `tenant ${(context!.context as { tenant: string }).tenant}`,
    });
    const agent = new Agent<{ tenant: string }>({
      name: "ctx",
      instructions: (context) => {
        seen.push(context.context.tenant);
        return "Help.";
      },
      tools: [whoAmI],
    });
    const runner = new OpenAIAgentsRunner(agent, { model: new ScriptedModel(), context: { tenant: "acme" } });
    const turn = await runTurn(runner, [], "call who_am_i {}");
    expect(turn.text).toBe("Results: who_am_i -> tenant acme");
    expect(seen).toEqual(["acme", "acme"]);
  });

  it("a failing model call fails the step (for the engine to retry) and an aborted step stops", async () => {
    const { Agent } = await import("@openai/agents");
    const { OpenAIAgentsRunner } = await import("../src/index.js");
    const { ScriptedModel } = await import("../src/testing/index.js");
    const scripted = new ScriptedModel();
    let failures = 1;
    const flaky = {
      getResponse: (request: never) => scripted.getResponse(request),
      async *getStreamedResponse(request: never) {
        if (failures-- > 0) throw new Error("503 from the provider");
        yield* scripted.getStreamedResponse(request);
      },
    };
    const runner = new OpenAIAgentsRunner(new Agent({ name: "a" }), { model: flaky });
    const history = [runner.userItem("message", "hi")];
    await expect(runner.runModel(input(runner, history, 0, null, []))).rejects.toThrow("503 from the provider");
    const retried = await runner.runModel(input(runner, history, 0, null, []));
    expect(retried.kind === "final" && retried.text).toBe("You said: hi");

    const controller = new AbortController();
    controller.abort(new Error("lease lost"));
    await expect(
      runner.runModel({ ...input(runner, history, 0, null, []), signal: controller.signal }),
    ).rejects.toThrow();

    // Aborted while the model streams: the step fails, it does not end as an empty final answer.
    const slow = {
      getResponse: (request: never) => scripted.getResponse(request),
      async *getStreamedResponse(request: { signal?: AbortSignal }) {
        yield { type: "response_started" as const };
        await new Promise((resolve) => setTimeout(resolve, 200));
        yield* scripted.getStreamedResponse(request as never);
      },
    };
    const slowRunner = new OpenAIAgentsRunner(new Agent({ name: "a" }), { model: slow as never });
    const midway = new AbortController();
    setTimeout(() => midway.abort(new Error("lease lost midway")), 50);
    await expect(
      slowRunner.runModel({ ...input(slowRunner, history, 0, null, []), signal: midway.signal }),
    ).rejects.toThrow();
  });
});

import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  defineToolInputGuardrail,
  defineToolOutputGuardrail,
  ToolGuardrailFunctionOutputFactory,
} from "@openai/agents";
import { currentToolCall, type HistoryItem } from "@durable-agents/core";
import { durableTool, OpenAIAgentsRunner } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";
import { callOnce, runTurn } from "./harness.js";

describe("agent graphs", () => {
  it("a handoff: the step that hands off makes both model calls and reports both", async () => {
    const runs: string[] = [];
    const refund = durableTool({
      name: "refund",
      description: "Refund.",
      parameters: z.object({ id: z.string() }),
      execute: ({ id }) => {
        runs.push(id);
        return `refunded ${id}`;
      },
    });
    const billing = new Agent({ name: "billing", instructions: "Billing.", tools: [refund] });
    const front = new Agent({ name: "front", instructions: "Triage.", handoffs: [billing] });
    const model = new ScriptedModel();
    const runner = new OpenAIAgentsRunner(front, { model });
    expect(runner.tools().map((t) => t.name)).toEqual(["refund"]);
    const history: HistoryItem[] = [];
    const turn = await runTurn(runner, history, 'call transfer_to_billing {}\nthen\ncall refund {"id":"9"}');
    expect(turn.steps.map((s) => s.result.usage.modelCalls)).toEqual([2, 1]);
    const first = turn.steps[0]!.result;
    expect(first.kind === "tool_calls" && first.calls.map((c) => c.name)).toEqual(["refund"]);
    expect(model.calls).toBe(3);
    expect(runs).toEqual(["9"]);
    expect(turn.text).toMatch(/^Results: transfer_to_billing -> .*billing.* \| refund -> refunded 9$/);
    expect(turn.items.map((i) => i.display.toolCalls?.[0]?.name ?? i.display.role)).toEqual([
      "transfer_to_billing",
      "tool",
      "refund",
      "tool",
      "assistant",
    ]);
  });

  it("an agent used as a tool: one call, whose nested run happens inside the call's step", async () => {
    const seenKeys: (string | undefined)[] = [];
    const lookUp = durableTool({
      name: "look_up",
      description: "Look up.",
      parameters: z.object({ id: z.string() }),
      execute: ({ id }) => {
        seenKeys.push(currentToolCall()?.idempotencyKey);
        return `order ${id} is shipped`;
      },
    });
    const helper = new Agent({ name: "helper", instructions: "Look things up.", tools: [lookUp] });
    const front = new Agent({
      name: "front",
      instructions: "Delegate.",
      tools: [helper.asTool({ toolName: "ask_helper", toolDescription: "Ask the helper." })],
    });
    const model = new ScriptedModel();
    const runner = new OpenAIAgentsRunner(front, { model });
    expect(runner.tools()).toEqual([{ name: "ask_helper", approval: "per_call" }]);
    const nested = 'call look_up {"id":"7"}';
    const turn = await runTurn(runner, [], `call ask_helper ${JSON.stringify({ input: nested })}`);
    expect(turn.steps.map((s) => s.result.usage.modelCalls)).toEqual([1, 1]);
    expect(model.calls).toBe(4); // two outer steps + the nested run's two calls inside callTool
    expect(turn.outcomes[0]).toMatchObject({ status: "succeeded", output: "Results: look_up -> order 7 is shipped" });
    expect(turn.text).toBe("Results: ask_helper -> Results: look_up -> order 7 is shipped");
    expect(seenKeys).toEqual([undefined]); // the outer call's key does not leak to the nested tool
  });

  it("an agent tool whose nested run fails or stops for approval does not record a silent success", async () => {
    const broken = durableTool({
      name: "broken",
      description: "Fails.",
      parameters: z.object({}),
      execute: () => {
        throw new Error("inner boom");
      },
    });
    const wipe = durableTool({
      name: "wipe",
      description: "Wipes.",
      parameters: z.object({}),
      needsApproval: true,
      execute: () => "wiped",
    });
    const helper = new Agent({ name: "helper", instructions: "Help.", tools: [broken, wipe] });
    const runner = new OpenAIAgentsRunner(
      new Agent({ name: "front", tools: [helper.asTool({ toolName: "ask_helper", toolDescription: "Ask." })] }),
      { model: new ScriptedModel() },
    );
    const call = (nested: string) =>
      callOnce(runner, "s", "t", {
        toolCallId: "c1",
        name: "ask_helper",
        arguments: JSON.stringify({ input: nested }),
        needsApproval: false,
      });
    const failed = await call("call broken {}");
    expect(failed.status).toBe("outcome_unknown"); // the harness records a thrown error this way
    expect(failed.text).toMatch(/nested run of agent tool "ask_helper" failed/);
    const approval = await call("call wipe {}");
    expect(approval.status).toBe("failed");
    expect(approval.text).toMatch(/stopped for an approval of "wipe"/);
    expect((await call("just talk")).output).toBe("You said: just talk");
  });

  it("a tool input guardrail: runs in the tool call step, rejects or trips before the tool runs", async () => {
    const runs: string[] = [];
    const guardrailRuns: string[] = [];
    const noAdmin = defineToolInputGuardrail({
      name: "no_admin",
      run: async ({ toolCall }) => {
        guardrailRuns.push(toolCall.callId);
        const args = JSON.parse(toolCall.arguments) as { user: string };
        if (args.user === "admin") return ToolGuardrailFunctionOutputFactory.rejectContent("admins are off limits");
        if (args.user === "root") return ToolGuardrailFunctionOutputFactory.throwException();
        return ToolGuardrailFunctionOutputFactory.allow();
      },
    });
    const reset = durableTool({
      name: "reset_password",
      description: "Reset a password.",
      parameters: z.object({ user: z.string() }),
      inputGuardrails: [noAdmin],
      execute: ({ user }) => {
        runs.push(user);
        return `reset ${user}`;
      },
    });
    const runner = new OpenAIAgentsRunner(new Agent({ name: "a", tools: [reset] }), { model: new ScriptedModel() });
    const history = [
      runner.userItem(
        "message",
        'call reset_password {"user":"admin"}\ncall reset_password {"user":"root"}\ncall reset_password {"user":"ann"}',
      ),
    ];
    const step = await runner.runModel({
      sessionId: "s",
      turnId: "t",
      modelStep: 1,
      history,
      turnStart: 0,
      runState: null,
      outcomes: [],
      joined: [],
      signal: new AbortController().signal,
      emit: () => {},
    });
    if (step.kind !== "tool_calls") throw new Error("expected tool calls");
    expect(guardrailRuns).toEqual([]); // not during the model step
    const outcomes = [];
    for (const call of step.calls) outcomes.push(await callOnce(runner, "s", "t", call));
    expect(outcomes.map((o) => [o.status, o.text])).toEqual([
      ["failed", "The tool call failed: admins are off limits"],
      ["failed", 'The tool call failed: The input guardrail "no_admin" stopped this call'],
      ["succeeded", "reset ann"],
    ]);
    expect(runs).toEqual(["ann"]);
    const final = await runner.runModel({
      sessionId: "s",
      turnId: "t",
      modelStep: 2,
      history,
      turnStart: 0,
      runState: step.runState,
      outcomes,
      joined: [],
      signal: new AbortController().signal,
      emit: () => {},
    });
    expect(final.kind === "final" && final.text).toMatch(
      /reset_password -> The tool call failed: admins are off limits/,
    );
    expect(guardrailRuns).toHaveLength(3); // the resumed step does not run them again
  });

  it("a tool output guardrail runs when the resumed step hands the recorded result to the model", async () => {
    const checked: string[] = [];
    const noSecrets = defineToolOutputGuardrail({
      name: "no_secrets",
      run: async ({ output }) => {
        checked.push(String(output));
        return String(output).includes("secret")
          ? ToolGuardrailFunctionOutputFactory.rejectContent("the output was withheld")
          : ToolGuardrailFunctionOutputFactory.allow();
      },
    });
    const read = durableTool({
      name: "read_note",
      description: "Read a note.",
      parameters: z.object({ id: z.string() }),
      outputGuardrails: [noSecrets],
      execute: ({ id }) => (id === "1" ? "the secret is 42" : "buy milk"),
    });
    const runner = new OpenAIAgentsRunner(new Agent({ name: "a", tools: [read] }), { model: new ScriptedModel() });
    const turn = await runTurn(runner, [], 'call read_note {"id":"1"}\ncall read_note {"id":"2"}');
    expect(turn.outcomes.map((o) => o.output)).toEqual(["the secret is 42", "buy milk"]);
    expect(checked).toEqual(["the secret is 42", "buy milk"]);
    expect(turn.text).toBe("Results: read_note -> the output was withheld | read_note -> buy milk");
  });

  it("an output type: the final text is the structured output as JSON", async () => {
    const agent = new Agent({
      name: "typed",
      instructions: "Answer.",
      outputType: z.object({ answer: z.string(), size: z.number() }),
    });
    const runner = new OpenAIAgentsRunner(agent, { model: new ScriptedModel() });
    const history: HistoryItem[] = [];
    const turn = await runTurn(runner, history, "what is up");
    expect(JSON.parse(turn.text)).toEqual({ answer: "You said: what is up", size: "You said: what is up".length });
    expect(history.at(-1)!.display).toEqual({ role: "assistant", text: turn.text });
  });
});

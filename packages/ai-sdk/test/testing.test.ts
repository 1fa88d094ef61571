import {
  TURN_CANCELLED_NOTE_PREFIX,
  TURN_FAILURE_NOTE_PREFIX,
  scriptedHangs,
  type ConformanceTool,
} from "@durable-agents/core/testing";
import { generateText, streamText } from "ai";
import { describe, expect, it } from "vitest";
import { ScriptedLanguageModel, conformanceRunner } from "../src/testing/index.js";
import { driveTurn } from "./support/turn-driver.js";
import { callInput } from "./support/call-input.js";

describe("ScriptedLanguageModel", () => {
  it("derives the same answer from the same prompt, streamed or not, and counts its calls", async () => {
    const model = new ScriptedLanguageModel();
    const messages = [
      { role: "user" as const, content: `${TURN_FAILURE_NOTE_PREFIX} earlier turn broke` },
      { role: "user" as const, content: "hello" },
    ];
    const generated = await generateText({ model, messages });
    const streamed = streamText({ model, messages });
    const chunks: string[] = [];
    for await (const chunk of streamed.textStream) chunks.push(chunk);
    expect(generated.text).toBe("(noted 1 failed turn(s)) You said: hello");
    expect(chunks.join("")).toBe(generated.text);
    expect(chunks.length).toBe(3);
    expect((await streamed.usage).inputTokens).toBe(generated.usage.inputTokens);
    expect(generated.usage.outputTokens).toBe(Math.ceil(generated.text.length / 4));
    expect(model.calls).toBe(2);
  });

  it("asks for the calls of each script block in turn, with IDs derived from the input", async () => {
    const model = new ScriptedLanguageModel();
    const user = { role: "user" as const, content: 'call a {"x":1}\ncall b {}\nthen\ncall c {}' };
    const first = await generateText({ model, messages: [user] });
    expect(first.toolCalls.map((call) => [call.toolName, call.input])).toEqual([
      ["a", { x: 1 }],
      ["b", {}],
    ]);
    const again = await generateText({ model, messages: [user] });
    expect(again.toolCalls.map((call) => call.toolCallId)).toEqual(first.toolCalls.map((call) => call.toolCallId));
    const second = await generateText({
      model,
      messages: [
        user,
        {
          role: "assistant",
          content: first.toolCalls.map((call) => ({
            type: "tool-call" as const,
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            input: call.input,
          })),
        },
        ...first.toolCalls.map((call) => ({
          role: "tool" as const,
          content: [
            {
              type: "tool-result" as const,
              toolCallId: call.toolCallId,
              toolName: call.toolName,
              output: { type: "text" as const, value: `${call.toolName} ok` },
            },
          ],
        })),
      ],
    });
    expect(second.toolCalls.map((call) => call.toolName)).toEqual(["c"]);
    expect(second.toolCalls[0]!.toolCallId).toMatch(/_2_1$/);
  });
});

describe("ScriptedLanguageModel and turn control", () => {
  it("reads messages steered into the turn (after its message or a tool result) and counts cancel notes", async () => {
    const model = new ScriptedLanguageModel();
    const { text } = await generateText({
      model,
      messages: [
        { role: "user", content: "earlier" },
        { role: "assistant", content: "You said: earlier" },
        { role: "user", content: `${TURN_CANCELLED_NOTE_PREFIX} that turn was cancelled` },
        { role: "user", content: "hi" },
        { role: "user", content: "also this" },
      ],
    });
    expect(text).toBe("(noted 1 cancelled turn(s)) You said: hi (also: also this)");
  });

  it("hangs at a 'hang model' block until the abortSignal the SDK hands it aborts", async () => {
    const model = new ScriptedLanguageModel();
    const userText = "ai-sdk testing: hang here\nhang model";
    const controller = new AbortController();
    const pending = generateText({
      model,
      messages: [{ role: "user", content: userText }],
      abortSignal: controller.signal,
    });
    const failed = pending.then(
      () => "answered",
      () => "failed",
    );
    for (let i = 0; i < 1_000 && scriptedHangs(userText).started === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(scriptedHangs(userText)).toEqual({ started: 1, aborted: 0 });
    controller.abort(new Error("stop"));
    expect(await failed).toBe("failed");
    expect(scriptedHangs(userText)).toEqual({ started: 1, aborted: 1 });
    // The signal the SDK handed the model call is the one that aborted.
    expect(model.doGenerateCalls[0]?.abortSignal?.aborted).toBe(true);
  });
});

describe("conformanceRunner", () => {
  const specs = (runs: string[]): ConformanceTool[] => [
    {
      name: "charge",
      description: "Charges a card",
      parameters: { card: "string", amount: "number" },
      execute: (args) => {
        runs.push(`charge ${String(args.card)} ${String(args.amount)}`);
        return `charged ${String(args.amount)}`;
      },
      needsApproval: true,
    },
    {
      name: "flaky",
      description: "Fails",
      parameters: {},
      execute: () => {
        runs.push("flaky");
        throw new Error("flaky failed");
      },
    },
  ];

  it("turns conformance specs into AI SDK tools with their types, bodies and approval flags", async () => {
    const runs: string[] = [];
    const { runner, model } = conformanceRunner(specs(runs));
    expect(runner.tools()).toEqual([
      { name: "charge", approval: "always" },
      { name: "flaky", approval: "never" },
    ]);
    const mistyped = await runner.callTool(callInput("charge", '{"card":"4242","amount":"ten"}'));
    expect(mistyped.status).toBe("failed");
    const missing = await runner.callTool(callInput("charge", '{"amount":10}'));
    expect(missing.status).toBe("failed");
    expect(runs).toEqual([]);
    expect(await runner.callTool(callInput("charge", '{"card":"4242","amount":10}'))).toEqual({
      status: "succeeded",
      output: "charged 10",
    });
    await expect(runner.callTool(callInput("flaky", "{}"))).rejects.toThrow("flaky failed");
    expect(runs).toEqual(["charge 4242 10", "flaky"]);

    const turn = await driveTurn(runner, [], 'call charge {"card":"1","amount":3}', (call) =>
      call.needsApproval ? { status: "rejected", text: "not approved" } : { status: "run" },
    );
    expect(turn.final.text).toBe("Results: charge -> not approved");
    expect(model.calls).toBe(2);
  });
});

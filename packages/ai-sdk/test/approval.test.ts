import { PolicyError } from "@durable-agents/core";
import { tool, type ToolSet } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AiSdkRunner, type AiSdkRunnerOptions } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";

const pay = (needsApproval?: boolean) =>
  tool({
    description: "Pays an amount",
    inputSchema: z.object({ amount: z.number() }),
    ...(needsApproval === undefined ? {} : { needsApproval }),
    execute: async ({ amount }) => `paid ${amount}`,
  });

const tools = { pay: pay(true), refund: pay(), notify: pay() } satisfies ToolSet;

async function approvals(options: Partial<AiSdkRunnerOptions>, script: string) {
  const runner = new AiSdkRunner({ model: new ScriptedLanguageModel(), tools, ...options });
  const result = await runner.runModel({
    sessionId: "s",
    turnId: "t",
    modelStep: 1,
    history: [runner.userItem("message", script)],
    turnStart: 0,
    runState: null,
    outcomes: [],
    joined: [],
    signal: new AbortController().signal,
    emit: () => {},
  });
  if (result.kind !== "tool_calls") throw new Error("expected tool calls");
  return { tools: runner.tools(), calls: result.calls.map((call) => [call.name, call.needsApproval]) };
}

const script =
  'call pay {"amount":500}\ncall refund {"amount":5}\ncall refund {"amount":500}\ncall notify {"amount":1}';

describe("the SDK's toolApproval configuration", () => {
  it("takes precedence over the tools' own flags, per tool", async () => {
    const seen: unknown[] = [];
    const result = await approvals(
      {
        toolApproval: {
          pay: "not-applicable",
          refund: (input: { amount: number }, options: { toolCallId: string }) => {
            seen.push([input, options.toolCallId.startsWith("call_")]);
            return input.amount > 100 ? { type: "user-approval", reason: "large refund" } : "approved";
          },
          notify: "denied",
        },
      },
      script,
    );
    expect(result.tools).toEqual([
      { name: "pay", approval: "never" },
      { name: "refund", approval: "per_call" },
      { name: "notify", approval: "always" },
    ]);
    expect(result.calls).toEqual([
      ["pay", false],
      ["refund", false],
      ["refund", true],
      ["notify", true],
    ]);
    expect(seen).toEqual([
      [{ amount: 5 }, true],
      [{ amount: 500 }, true],
    ]);
  });

  it("asks a generic approval function about every call", async () => {
    const result = await approvals(
      {
        toolApproval: ({ toolCall }) =>
          (toolCall.input as { amount: number }).amount >= 500 ? "user-approval" : undefined,
      },
      script,
    );
    expect(result.tools.every((description) => description.approval === "per_call")).toBe(true);
    expect(result.calls).toEqual([
      ["pay", true],
      ["refund", false],
      ["refund", true],
      ["notify", false],
    ]);
  });

  it("falls back to the tool's own flag when the configuration does not name it", async () => {
    const result = await approvals({ toolApproval: { refund: "user-approval" } }, script);
    expect(result.calls).toEqual([
      ["pay", true],
      ["refund", true],
      ["refund", true],
      ["notify", false],
    ]);
  });

  it("refuses a configuration that names no tool", () => {
    let caught: unknown;
    try {
      new AiSdkRunner({ model: new ScriptedLanguageModel(), tools, toolApproval: { pya: "user-approval" } as never });
    } catch (error) {
      caught = error;
    }
    expect(PolicyError.isInstance(caught)).toBe(true);
    expect((caught as Error).message).toContain('toolApproval names "pya"');
  });
});

import { PolicyError } from "@durable-agents/core";
import { tool, type ToolSet } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AiSdkRunner, aiSdkSession } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";
import { callInput as call } from "./support/call-input.js";

const empty = z.object({});

describe("tool outputs as the model will read them", () => {
  const tools = {
    nothing: tool({
      description: "Returns nothing",
      inputSchema: empty,
      execute: async (): Promise<undefined> => undefined,
    }),
    progress: tool({
      description: "Streams preliminary results",
      inputSchema: empty,
      async *execute() {
        yield "10%";
        yield "50%";
        yield "done";
      },
    }),
    shaped: tool({
      description: "Maps its output for the model",
      inputSchema: z.object({ n: z.number() }),
      execute: async ({ n }) => ({ n, squared: n * n }),
      toModelOutput: ({ output }) => ({ type: "text", value: `${output.n} squared is ${output.squared}` }),
    }),
    content: tool({
      description: "Returns content parts",
      inputSchema: empty,
      execute: async () => "raw",
      toModelOutput: () => ({
        type: "content",
        value: [
          { type: "text", text: "first " },
          { type: "text", text: "second" },
        ],
      }),
    }),
  } satisfies ToolSet;
  const runner = new AiSdkRunner({ model: new ScriptedLanguageModel(), tools });

  it("stores an undefined output as null, and the last value a streaming tool yields", async () => {
    expect(await runner.callTool(call("nothing"))).toEqual({ status: "succeeded", output: "null" });
    expect(await runner.callTool(call("progress"))).toEqual({ status: "succeeded", output: "done" });
  });

  it("applies the tool's toModelOutput when it gives text or content", async () => {
    expect(await runner.callTool(call("shaped", '{"n":7}'))).toEqual({
      status: "succeeded",
      output: "7 squared is 49",
    });
    expect(await runner.callTool(call("content"))).toEqual({ status: "succeeded", output: "first second" });
  });
});

describe("provider-executed tools", () => {
  const search = {
    type: "provider",
    id: "test.web_search",
    args: {},
    isProviderExecuted: true,
    inputSchema: z.object({ query: z.string() }),
  } as unknown as ToolSet[string];
  const lookup = tool({
    description: "Looks up",
    inputSchema: z.object({ id: z.string() }),
    execute: async ({ id }) => id,
  });

  it("are not durable steps: not listed, and a policy for one is refused", () => {
    const runner = new AiSdkRunner({ model: new ScriptedLanguageModel(), tools: { search, lookup } });
    expect(runner.tools()).toEqual([{ name: "lookup", approval: "never" }]);
    let caught: unknown;
    try {
      aiSdkSession({
        name: "a",
        model: new ScriptedLanguageModel(),
        tools: { search, lookup },
        policies: { search: { effect: "read" } },
      });
    } catch (error) {
      caught = error;
    }
    expect(PolicyError.isInstance(caught)).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, MCPServerStdio, handoff, shellTool, tool, webSearchTool } from "@openai/agents";
import { ConfigurationError, PolicyError } from "@durable-agents/core";
import { durableTool, openAIAgentsSession, OpenAIAgentsRunner } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";

const lookUp = () =>
  durableTool({
    name: "look_up",
    description: "Look up.",
    parameters: z.object({ id: z.string() }),
    execute: ({ id }) => id,
  });
const policyError = (fn: () => unknown, pattern: RegExp) => {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(PolicyError.isInstance(error), String(error)).toBe(true);
  expect((error as Error).message).toMatch(pattern);
};

describe("construction", () => {
  it("builds a session definition whose policies are checked against the whole graph", () => {
    const billing = new Agent({
      name: "billing",
      tools: [
        durableTool({
          name: "refund",
          description: "Refund.",
          parameters: z.object({ id: z.string() }),
          needsApproval: true,
          execute: () => "ok",
        }),
      ],
    });
    const agent = new Agent({ name: "front", tools: [lookUp()], handoffs: [billing] });
    const definition = openAIAgentsSession(agent, {
      name: "support",
      model: new ScriptedModel(),
      policies: { look_up: { effect: "read" }, refund: { effect: "non_idempotent_write" } },
      maxModelSteps: 7,
    });
    expect(definition.name).toBe("support");
    expect(definition.maxModelSteps).toBe(7);
    expect(definition.tools.map((t) => t.name).sort()).toEqual(["look_up", "refund"]);
    expect(definition.policies).toEqual({ look_up: { effect: "read" }, refund: { effect: "non_idempotent_write" } });
    expect(definition.runner).toBeInstanceOf(OpenAIAgentsRunner);
  });

  it("rejects a policy that names no tool (a typo)", () => {
    const agent = new Agent({ name: "front", tools: [lookUp()] });
    policyError(
      () => openAIAgentsSession(agent, { name: "s", policies: { look_upp: { effect: "read" } } }),
      /"look_upp" names no tool/,
    );
  });

  it("rejects a policy that turns off the approval a tool always asks for", () => {
    const cancel = durableTool({
      name: "cancel",
      description: "Cancel.",
      parameters: z.object({}),
      needsApproval: true,
      execute: () => "ok",
    });
    const agent = new Agent({ name: "front", tools: [cancel] });
    policyError(
      () => openAIAgentsSession(agent, { name: "s", policies: { cancel: { effect: "read", needsApproval: false } } }),
      /always needs approval/,
    );
  });

  it("rejects two different tools with one name anywhere in the graph", () => {
    const other = new Agent({ name: "other", tools: [lookUp()] });
    policyError(
      () => new OpenAIAgentsRunner(new Agent({ name: "front", tools: [lookUp()], handoffs: [handoff(other)] })),
      /two tools of the agent graph are named "look_up"/,
    );
    const shared = lookUp();
    const a = new Agent({ name: "a", tools: [shared] });
    expect(() => new OpenAIAgentsRunner(new Agent({ name: "front", tools: [shared], handoffs: [a] }))).not.toThrow();
  });

  it("refuses tools whose errors the SDK would turn into text", () => {
    const plain = tool({ name: "plain", description: "Plain.", parameters: z.object({}), execute: () => "ok" });
    policyError(
      () => new OpenAIAgentsRunner(new Agent({ name: "a", tools: [plain] })),
      /"plain" was not built with durableTool\(\)/,
    );
    const handled = tool({
      name: "handled",
      description: "H.",
      parameters: z.object({}),
      outputSchema: z.object({ ok: z.boolean() }),
      errorFunction: () => ({ ok: false }),
      execute: () => ({ ok: true }),
    });
    policyError(
      () => new OpenAIAgentsRunner(new Agent({ name: "a", tools: [handled] })),
      /"handled" has an errorFunction/,
    );
    const structured = tool({
      name: "structured",
      description: "S.",
      parameters: z.object({}),
      outputSchema: z.object({ ok: z.boolean() }),
      execute: () => ({ ok: true }),
    });
    expect(() => new OpenAIAgentsRunner(new Agent({ name: "a", tools: [structured] }))).not.toThrow();
    policyError(
      () =>
        durableTool({
          name: "x",
          description: "X.",
          parameters: z.object({}),
          errorFunction: () => "hidden",
          execute: () => "ok",
        }),
      /errorFunction/,
    );
  });

  it("refuses MCP server tools and local shell tools unless allowAtLeastOnceTools is set; hosted tools are fine", () => {
    const server = new MCPServerStdio({ name: "files", fullCommand: 'node -e ""' }); // never connected
    const withMcp = new Agent({ name: "a", tools: [lookUp()], mcpServers: [server] });
    policyError(() => new OpenAIAgentsRunner(withMcp), /MCP servers \(files\).*allowAtLeastOnceTools/);
    const runner = new OpenAIAgentsRunner(withMcp, { allowAtLeastOnceTools: true });
    expect(runner.tools().map((t) => t.name)).toEqual(["look_up"]);

    const shell = shellTool({ shell: { run: async () => ({ output: [] }) } });
    policyError(() => new OpenAIAgentsRunner(new Agent({ name: "a", tools: [shell] })), /local shell tool/);
    expect(() => new OpenAIAgentsRunner(new Agent({ name: "a", tools: [webSearchTool(), lookUp()] }))).not.toThrow();
  });

  it("rejects a maxTurns that is not a positive integer", () => {
    for (const maxTurns of [0, 1.5, -3]) {
      let error: unknown;
      try {
        new OpenAIAgentsRunner(new Agent({ name: "a" }), { maxTurns });
      } catch (e) {
        error = e;
      }
      expect(ConfigurationError.isInstance(error)).toBe(true);
    }
  });

  it("refuses two agents of the graph with one name", () => {
    const twin = new Agent({ name: "front" });
    policyError(
      () => new OpenAIAgentsRunner(new Agent({ name: "front", handoffs: [twin] })),
      /two agents of the graph are named "front"/,
    );
  });
});

/**
 * The MCP session scenarios (`@durable-agents/mcp/testing`) for this runner, over stdio and
 * Streamable HTTP. The runner keeps no live run state, so every resumed step restores the saved one
 * (also when an MCP tool it names went away meanwhile); the session suite over MCP covers live states.
 */
import { Agent } from "@openai/agents";
import { ConfigurationError, PolicyError } from "@durable-agents/core";
import { McpToolset } from "@durable-agents/mcp";
import { McpTestServer, mcpSessionSuite } from "@durable-agents/mcp/testing";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { durableTool, OpenAIAgentsRunner } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";

for (const transport of ["stdio", "http"] as const) {
  mcpSessionSuite(
    { describe, it, afterEach },
    {
      transport,
      makeRunner: (mcp) =>
        new OpenAIAgentsRunner(new Agent({ name: "warehouse", instructions: "Follow the script." }), {
          model: new ScriptedModel(),
          mcp,
          liveRunStates: 0,
        }),
    },
  );
}

describe("the mcp option", () => {
  it("refuses an MCP tool named like a function tool of the graph, and what is not a toolset", async () => {
    const server = new McpTestServer([{ name: "look_up", behaviour: { kind: "echo" } }]);
    const toolset = await McpToolset.connect([server.stdio("shop")]);
    try {
      const lookUp = durableTool({
        name: "look_up",
        description: "Look up.",
        parameters: z.object({}),
        execute: () => "ok",
      });
      const agent = new Agent({ name: "a", tools: [lookUp] });
      expect(() => new OpenAIAgentsRunner(agent, { mcp: toolset })).toThrow(
        expect.toSatisfy(
          (e: unknown) => PolicyError.isInstance(e) && /"look_up" \(server "shop"\).*toolPrefix/.test(String(e)),
        ),
      );
      expect(() => new OpenAIAgentsRunner(agent, { mcp: {} as McpToolset })).toThrow(
        expect.toSatisfy((e: unknown) => ConfigurationError.isInstance(e) && /McpToolset/.test(String(e))),
      );
    } finally {
      await toolset.close();
      await server.dispose();
    }
  });
});

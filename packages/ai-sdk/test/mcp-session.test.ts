/** The MCP session scenarios (`@durable-agents/mcp/testing`) for this runner, over stdio and Streamable HTTP. */
import { ConfigurationError, PolicyError } from "@durable-agents/core";
import { McpToolset } from "@durable-agents/mcp";
import { McpTestServer, mcpSessionSuite } from "@durable-agents/mcp/testing";
import { tool } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AiSdkRunner } from "../src/index.js";
import { conformanceRunner, ScriptedLanguageModel } from "../src/testing/index.js";

for (const transport of ["stdio", "http"] as const) {
  mcpSessionSuite(
    { describe, it, afterEach },
    { transport, makeRunner: (toolset) => conformanceRunner([], { mcp: toolset }).runner },
  );
}

describe("the mcp option", () => {
  it("refuses an MCP tool named like a tool of the set, and what is not a toolset", async () => {
    const server = new McpTestServer([{ name: "look_up", behaviour: { kind: "echo" } }]);
    const toolset = await McpToolset.connect([server.stdio("shop")]);
    try {
      const tools = { look_up: tool({ inputSchema: z.object({}), execute: async () => "ok" }) };
      const model = new ScriptedLanguageModel();
      expect(() => new AiSdkRunner({ model, tools, mcp: toolset })).toThrow(
        expect.toSatisfy(
          (e: unknown) => PolicyError.isInstance(e) && /"look_up" \(server "shop"\).*toolPrefix/.test(String(e)),
        ),
      );
      expect(() => new AiSdkRunner({ model, tools: {}, mcp: {} as McpToolset })).toThrow(
        expect.toSatisfy((e: unknown) => ConfigurationError.isInstance(e) && /McpToolset/.test(String(e))),
      );
    } finally {
      await toolset.close();
      await server.dispose();
    }
  });
});

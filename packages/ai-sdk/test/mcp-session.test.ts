/** The MCP session scenarios (`@durable-agents/mcp/testing`) for this runner, over stdio and Streamable HTTP. */
import { ConfigurationError, PolicyError } from "@durable-agents/core";
import { McpToolset } from "@durable-agents/mcp";
import { McpTestServer, mcpSessionSuite } from "@durable-agents/mcp/testing";
import { tool } from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AiSdkRunner, aiSdkSession } from "../src/index.js";
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

describe("the definition's fingerprint", () => {
  it("takes in the MCP tools as listed: another input schema is another definition", async () => {
    const schema = (extra: boolean) => ({
      type: "object",
      properties: { order_id: { type: "string" }, ...(extra ? { reason: { type: "string" } } : {}) },
      required: ["order_id"],
    });
    const servers = [
      new McpTestServer([{ name: "release", inputSchema: schema(false), behaviour: { kind: "echo" } }]),
      new McpTestServer([{ name: "release", inputSchema: schema(false), behaviour: { kind: "echo" } }]),
      new McpTestServer([{ name: "release", inputSchema: schema(true), behaviour: { kind: "echo" } }]),
    ];
    const toolsets = await Promise.all(servers.map((server) => McpToolset.connect([server.stdio("shop")])));
    try {
      const [same1, same2, changed] = toolsets.map(
        (mcp) => aiSdkSession({ name: "shop", model: new ScriptedLanguageModel(), tools: {}, mcp }).fingerprint,
      );
      expect(same1).toBe(same2);
      expect(changed).not.toBe(same1);
      expect(aiSdkSession({ name: "shop", model: new ScriptedLanguageModel(), tools: {} }).fingerprint).not.toBe(same1);
    } finally {
      for (const toolset of toolsets) await toolset.close();
      for (const server of servers) await server.dispose();
    }
  });
});

/**
 * The MCP session scenarios (`@durable-agents/mcp/testing`) for this runner, over stdio and
 * Streamable HTTP. The runner keeps no live run state, so every resumed step restores the saved one
 * (also when an MCP tool it names went away meanwhile); the session suite over MCP covers live states.
 */
import { Agent } from "@openai/agents";
import { mcpSessionSuite } from "@durable-agents/mcp/testing";
import { afterEach, describe, it } from "vitest";
import { OpenAIAgentsRunner } from "../src/index.js";
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

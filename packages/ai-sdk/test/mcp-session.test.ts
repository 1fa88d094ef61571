/** The MCP session scenarios (`@durable-agents/mcp/testing`) for this runner, over stdio and Streamable HTTP. */
import { mcpSessionSuite } from "@durable-agents/mcp/testing";
import { afterEach, describe, it } from "vitest";
import { conformanceRunner } from "../src/testing/index.js";

for (const transport of ["stdio", "http"] as const) {
  mcpSessionSuite(
    { describe, it, afterEach },
    { transport, makeRunner: (toolset) => conformanceRunner([], { mcp: toolset }).runner },
  );
}

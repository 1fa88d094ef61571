/** Core's session suite with its tools served by a real MCP server process (stdio), on the in-memory store. */
import assert from "node:assert/strict";
import { sessionConformance } from "@durable-agents/core/conformance";
import { localConformanceTools, mcpConformanceRunners } from "@durable-agents/mcp/testing";
import { MemoryStore } from "@durable-agents/store-memory";
import { afterAll, afterEach, describe, it } from "vitest";
import { conformanceRunner } from "../src/testing/index.js";

const mcp = mcpConformanceRunners("stdio", ({ local, toolset }) => conformanceRunner(local, { mcp: toolset }).runner);
// Registered before the suite's own: it runs after it, once the suite's workers have stopped.
afterEach(mcp.closeAll);
afterAll(() => {
  // The suite's tools really ran on the MCP servers (all but the ones that stay function tools).
  for (const tool of ["look_up_order", "cancel_order", "flaky_read", "charge_card", "find_customer", "wait_read"])
    assert.ok((mcp.served.get(tool) ?? 0) > 0, `${tool} was served over MCP`);
  for (const tool of localConformanceTools) assert.equal(mcp.served.get(tool), undefined);
});

describe("over MCP (stdio)", () => {
  sessionConformance(
    { describe, it, afterEach },
    { makeRunner: mcp.makeRunner, makeStore: async () => ({ store: new MemoryStore() }) },
  );
});

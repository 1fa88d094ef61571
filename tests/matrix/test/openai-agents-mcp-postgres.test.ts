import assert from "node:assert/strict";
import { sessionConformance } from "@durable-agents/core/conformance";
import { localConformanceTools, mcpConformanceRunners } from "@durable-agents/mcp/testing";
import { conformanceRunner } from "@durable-agents/openai-agents/testing";
import { afterAll, afterEach, describe, it } from "vitest";
import { postgresStores } from "./postgres-store.js";

// The OpenAI Agents SDK runner on store-postgres, with the suite's tools served by a real MCP server
// process over Streamable HTTP on a loopback port (all but `localConformanceTools`).
const mcp = mcpConformanceRunners("http", ({ local, toolset }) => conformanceRunner(local, { mcp: toolset }).runner);
// Registered before the suite's own: it runs after it, once the suite's workers have stopped.
afterEach(mcp.closeAll);
afterAll(() => {
  for (const tool of ["look_up_order", "cancel_order", "flaky_read", "charge_card", "find_customer", "wait_read"])
    assert.ok((mcp.served.get(tool) ?? 0) > 0, `${tool} was served over MCP`);
  for (const tool of localConformanceTools) assert.equal(mcp.served.get(tool), undefined);
});

describe("over MCP (Streamable HTTP)", () => {
  sessionConformance(
    { describe, it, afterEach },
    { makeRunner: mcp.makeRunner, makeStore: postgresStores("openai_mcp") },
  );
});

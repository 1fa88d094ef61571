/**
 * `@durable-agents/mcp/testing`: real MCP server processes for tests (`McpTestServer`, over stdio or
 * Streamable HTTP on a loopback port), core's session suite with its tools served over MCP
 * (`mcpConformanceRunners`), and the MCP session scenarios every adapter runs (`mcpSessionSuite`).
 */
export {
  McpTestServer,
  testServerScript,
  waitUntil,
  type HttpTestProcess,
  type TestBehaviour,
  type TestCallEvent,
  type TestTool,
} from "./test-servers.js";
export {
  localConformanceTools,
  mcpConformanceRunners,
  serveConformanceTools,
  type ConformanceMcp,
  type McpTransportKind,
} from "./conformance.js";
export { mcpSessionSuite, type McpSessionSuiteOptions } from "./session-suite.js";

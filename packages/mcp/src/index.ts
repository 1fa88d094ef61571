/**
 * `@durable-agents/mcp`: MCP server tools for durable sessions. Connect to the servers the
 * application trusts (`McpToolset.connect`), then hand the toolset to an adapter
 * (`openAIAgentsSession(agent, { mcp })`, `aiSdkSession({ ..., mcp })`): every MCP tool call is its
 * own durable step, with the effect its annotations imply unless a policy says otherwise.
 */
export { McpToolset, type McpCallContext, type McpTool, type McpToolsetOptions } from "./toolset.js";
export type { McpHttpServer, McpServerConfig, McpStdioServer } from "./server-config.js";
export { effectOfHints, type McpToolHints } from "./effects.js";
export { durableMeta, metaKeys, readDurableMeta, type DurableCallMeta } from "./meta.js";
export { contentText, outcomeOfResult, type McpToolResult } from "./result-text.js";
export { McpConnectionError } from "./errors.js";

/**
 * What an MCP tool's annotations say about its effect. The hints are the server's own claims, so
 * they only choose the default: the application's policy for the tool (keyed by the name the agent
 * sees) overrides them.
 */
import type { ToolEffect } from "@durable-agents/core";

/** The behaviour hints of an MCP tool (`Tool.annotations` in the MCP specification). */
export interface McpToolHints {
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

/**
 * The default effect of a tool with these annotations:
 *
 * | annotations | effect |
 * | --- | --- |
 * | `readOnlyHint: true` | `read` |
 * | `idempotentHint: true` and `destructiveHint: false` (readOnlyHint not true) | `idempotent_write` |
 * | anything else, or none | `unclassified` |
 *
 * A missing hint takes the specification's default (`readOnlyHint` false, `destructiveHint` true,
 * `idempotentHint` false), so an idempotent tool that does not say it is non-destructive stays
 * `unclassified`. A hint that is not a boolean counts as missing. `openWorldHint` does not matter.
 */
export function effectOfHints(hints: McpToolHints | undefined | null): ToolEffect {
  if (typeof hints !== "object" || hints === null) return "unclassified";
  if (hints.readOnlyHint === true) return "read";
  if (hints.idempotentHint === true && hints.destructiveHint === false) return "idempotent_write";
  return "unclassified";
}

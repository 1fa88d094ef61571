/**
 * How an MCP tool result becomes the outcome the engine records and the model reads. The engine
 * stores text, so every content block becomes text: a text block as it is, other blocks as a short
 * description (their data is not passed on).
 */
import type { CallToolResult } from "@durable-agents/core/engine";

/** The parts of an MCP `CallToolResult` the conversion reads (any other field is ignored). */
export interface McpToolResult {
  readonly content?: readonly unknown[];
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
}

const describeBlock = (block: unknown): string => {
  if (typeof block !== "object" || block === null) return JSON.stringify(block) ?? "";
  const b = block as Record<string, unknown>;
  switch (b.type) {
    case "text":
      return typeof b.text === "string" ? b.text : "";
    case "image":
    case "audio":
      return `[${b.type}${typeof b.mimeType === "string" ? ` ${b.mimeType}` : ""}, not passed on as text]`;
    case "resource_link":
      return `[resource ${String(b.uri ?? "")}${typeof b.name === "string" ? ` (${b.name})` : ""}]`;
    case "resource": {
      const resource = (b.resource ?? {}) as Record<string, unknown>;
      if (typeof resource.text === "string") return resource.text;
      return `[resource ${String(resource.uri ?? "")}${typeof resource.mimeType === "string" ? ` ${resource.mimeType}` : ""}, binary, not passed on]`;
    }
    default:
      return JSON.stringify(block) ?? "";
  }
};

/** The text of a result's content blocks, one block per line. */
export function contentText(content: readonly unknown[] | undefined): string {
  return (content ?? [])
    .map(describeBlock)
    .filter((text) => text.length > 0)
    .join("\n");
}

/**
 * The engine's outcome of an MCP result:
 * - `isError: true` is `failed` with the content's text (the model sees it; no retry);
 * - otherwise `succeeded` with the content's text, or the JSON of `structuredContent` when
 *   `useStructuredContent` is set (or when there is no content but structured content).
 */
export function outcomeOfResult(
  result: McpToolResult,
  options: { useStructuredContent?: boolean } = {},
): CallToolResult {
  const text = contentText(result.content);
  if (result.isError === true) {
    return { status: "failed", message: text || "the MCP tool reported an error without a message" };
  }
  const structured = result.structuredContent;
  if (structured !== undefined && (options.useStructuredContent === true || text.length === 0)) {
    return { status: "succeeded", output: JSON.stringify(structured) };
  }
  return { status: "succeeded", output: text };
}

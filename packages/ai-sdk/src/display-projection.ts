/**
 * The display projection of one AI SDK model message: what a UI shows of it, whatever the message
 * carries for the model (reasoning, provider metadata, files).
 */
import type { DisplayItem } from "@durable-agents/core";
import type { ModelMessage } from "ai";
import { toolOutputText } from "./tool-output-text.js";

type Part = { readonly type: string; readonly [key: string]: unknown };

const partsOf = (content: unknown): Part[] =>
  typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? (content as Part[]) : [];

const textOf = (parts: readonly Part[]): string =>
  parts
    .filter((part) => part.type === "text" && typeof part.text === "string")
    .map((part) => part.text as string)
    .join("");

const jsonText = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value ?? null));

export function displayMessage(message: ModelMessage): DisplayItem {
  const parts = partsOf(message.content);
  switch (message.role) {
    case "user":
      return { role: "user", text: textOf(parts) };
    case "assistant": {
      const toolCalls = parts
        .filter((part) => part.type === "tool-call")
        .map((part) => ({
          toolCallId: String(part.toolCallId),
          name: String(part.toolName),
          arguments: jsonText(part.input),
        }));
      return toolCalls.length > 0
        ? { role: "assistant", text: textOf(parts), toolCalls }
        : { role: "assistant", text: textOf(parts) };
    }
    case "tool": {
      const results = parts.filter((part) => part.type === "tool-result");
      const text = results.map((part) => toolOutputText(part.output)).join("\n");
      const first = results[0];
      return first ? { role: "tool", text, toolCallId: String(first.toolCallId) } : { role: "tool", text };
    }
    default:
      return { role: "note", text: textOf(parts) };
  }
}

/** Display projections of the SDK's input items (what a UI shows, whatever the framework). */
import type { DisplayItem, HistoryItem } from "@durable-agents/core";

type Item = Record<string, unknown>;

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => {
      const p = part as Item;
      if (typeof p["text"] === "string") return p["text"] as string;
      if (typeof p["refusal"] === "string") return p["refusal"] as string;
      return "";
    })
    .join("");
}

function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return output.map(outputText).join("");
  if (output && typeof output === "object") {
    const o = output as Item;
    if (typeof o["text"] === "string") return o["text"] as string;
  }
  return output === undefined ? "" : JSON.stringify(output);
}

/** The display projection of one SDK input item. */
export function displayOf(raw: unknown): DisplayItem {
  const item = (raw ?? {}) as Item;
  const type = item["type"] ?? (item["role"] ? "message" : undefined);
  switch (type) {
    case "message": {
      const role = item["role"];
      if (role === "user") return { role: "user", text: contentText(item["content"]) };
      if (role === "assistant") return { role: "assistant", text: contentText(item["content"]) };
      return { role: "note", text: contentText(item["content"]) };
    }
    case "function_call":
      return {
        role: "assistant",
        text: "",
        toolCalls: [
          {
            toolCallId: String(item["callId"]),
            name: String(item["name"]),
            arguments: String(item["arguments"] ?? ""),
          },
        ],
      };
    case "function_call_result":
      return { role: "tool", text: outputText(item["output"]), toolCallId: String(item["callId"]) };
    case "hosted_tool_call":
      return {
        role: "assistant",
        text: typeof item["output"] === "string" ? (item["output"] as string) : "",
        toolCalls: [
          {
            toolCallId: String(item["id"] ?? item["name"]),
            name: String(item["name"]),
            arguments: String(item["arguments"] ?? ""),
          },
        ],
      };
    case "reasoning":
      return { role: "assistant", text: "" };
    default: {
      // Calls of tools the SDK runs itself (shell, computer, apply-patch, ...) and their outputs.
      const kind = typeof type === "string" ? type : "";
      const callId = typeof item["callId"] === "string" ? (item["callId"] as string) : undefined;
      if (callId && /_call$/.test(kind)) {
        const action = item["action"] ?? item["operation"] ?? item["arguments"] ?? {};
        return {
          role: "assistant",
          text: "",
          toolCalls: [
            {
              toolCallId: callId,
              name: String(item["name"] ?? kind),
              arguments: typeof action === "string" ? action : JSON.stringify(action),
            },
          ],
        };
      }
      if (callId && /_call_(output|result)$/.test(kind))
        return { role: "tool", text: outputText(item["output"]), toolCallId: callId };
      return { role: "assistant", text: "" };
    }
  }
}

/** One history item per SDK input item: the item as plain JSON plus its display projection. */
export function toHistoryItem(item: unknown): HistoryItem {
  const plain = JSON.parse(JSON.stringify(item)) as unknown;
  return { item: plain, display: displayOf(plain) };
}

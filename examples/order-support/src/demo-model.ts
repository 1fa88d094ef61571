/**
 * A local model for the order desk that needs no API key. It implements the Agents SDK's `Model`
 * interface and decides from the request alone (with `demoConversation` and `decideDemoTurn`,
 * shared with the AI SDK demo model), so a retried RunModel step gets the same answer:
 *
 * - "cancel order 1002" asks for `cancel_order`, "look up order 1001" for `look_up_order` (the
 *   order number is parsed from the turn's message, or from a message steered into the turn);
 * - once the results came back: it answers from them, and notes what was steered in;
 * - else it explains what it can do.
 *
 * Streaming sends the answer in small chunks with a short pause, like a real model.
 */
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Usage } from "@openai/agents";
import {
  chunkText,
  decideDemoTurn,
  demoConversation,
  orderIdOfArguments,
  type DemoDecision,
  type DemoMessage,
} from "./demo-decision.js";
import type { DemoToolResult } from "./demo-decision.js";
import type {
  AgentInputItem,
  AssistantMessageItem,
  FunctionCallItem,
  Model,
  ModelRequest,
  ModelResponse,
  StreamEvent,
} from "@openai/agents";

/** Re-exported for callers of this module; they live in `demo-decision.ts`. */
export { chunkText, parseOrderId, type DemoDecision } from "./demo-decision.js";

export interface OrderSupportDemoModelOptions {
  /** Characters per streamed chunk (about; chunks end at a word boundary). Default 18. */
  readonly chunkSize?: number;
  /** Pause between streamed chunks. Default 15 ms; 0 streams at once. */
  readonly chunkDelayMs?: number;
}

export class OrderSupportDemoModel implements Model {
  readonly #chunkSize: number;
  readonly #chunkDelayMs: number;

  constructor(options: OrderSupportDemoModelOptions = {}) {
    this.#chunkSize = Math.max(1, options.chunkSize ?? 18);
    this.#chunkDelayMs = Math.max(0, options.chunkDelayMs ?? 15);
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    request.signal?.throwIfAborted();
    const { output, usage, responseId } = respond(request);
    return { output, usage, responseId };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    request.signal?.throwIfAborted();
    const { output, usage, responseId, decision } = respond(request);
    yield { type: "response_started" };
    if (decision.kind === "text") {
      const itemId = messageId(responseId);
      for (const chunk of chunkText(decision.text, this.#chunkSize)) {
        if (this.#chunkDelayMs > 0) await sleep(this.#chunkDelayMs, undefined, { signal: request.signal });
        yield { type: "output_text_delta", itemId, delta: chunk };
      }
    }
    yield {
      type: "response_done",
      response: {
        id: responseId,
        usage: {
          requests: usage.requests,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          totalTokens: usage.totalTokens,
        },
        output,
      },
    };
  }
}

/** The decision for a request, from its input and offered tools only. */
export function decideDemoResponse(request: Pick<ModelRequest, "input" | "tools">): DemoDecision {
  const items: AgentInputItem[] =
    typeof request.input === "string" ? [{ role: "user", content: request.input }] : request.input;
  const calls = new Map<string, string>();
  for (const item of items) if ("type" in item && item.type === "function_call") calls.set(item.callId, item.arguments);
  const messages = items.map((item): DemoMessage => {
    if (isUserMessage(item)) return { kind: "user", text: userMessageText(item) };
    const result = toolResult(item, calls);
    return result ? { kind: "tool_result", result } : { kind: "other" };
  });
  return decideDemoTurn(demoConversation(messages, new Set(request.tools.map((tool) => tool.name))));
}

function respond(request: ModelRequest): {
  decision: DemoDecision;
  output: Array<AssistantMessageItem | FunctionCallItem>;
  usage: Usage;
  responseId: string;
} {
  const decision = decideDemoResponse(request);
  const digest = createHash("sha256").update(JSON.stringify(request.input)).digest("hex").slice(0, 16);
  const responseId = `resp_demo_${digest}`;
  const output: Array<AssistantMessageItem | FunctionCallItem> =
    decision.kind === "tool_call"
      ? [
          {
            type: "function_call",
            id: `fc_demo_${digest}`,
            callId: `call_demo_${digest}`,
            name: decision.name,
            arguments: JSON.stringify(decision.arguments),
            status: "completed",
          },
        ]
      : [
          {
            type: "message",
            id: messageId(responseId),
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: decision.text }],
          },
        ];
  // A rough token count (4 characters a token), from the input and output only.
  const inputTokens = Math.ceil(JSON.stringify(request.input).length / 4);
  const outputTokens = Math.ceil(JSON.stringify(output).length / 4);
  const usage = new Usage({ requests: 1, inputTokens, outputTokens, totalTokens: inputTokens + outputTokens });
  return { decision, output, usage, responseId };
}

function messageId(responseId: string): string {
  return `msg_${responseId.slice("resp_".length)}`;
}

function isUserMessage(item: AgentInputItem | undefined): boolean {
  return typeof item === "object" && item !== null && "role" in item && item.role === "user";
}

function userMessageText(item: AgentInputItem): string {
  if (!("role" in item) || item.role !== "user") return "";
  if (typeof item.content === "string") return item.content;
  return item.content.map((part) => (part.type === "input_text" ? part.text : "")).join("\n");
}

function toolResult(item: AgentInputItem, calls: ReadonlyMap<string, string>): DemoToolResult | null {
  if (!("type" in item) || item.type !== "function_call_result") return null;
  const output = item.output;
  let text: string;
  if (typeof output === "string") text = output;
  else if (Array.isArray(output))
    text = output.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
  else text = "text" in output && typeof output.text === "string" ? output.text : JSON.stringify(output);
  return { name: item.name, text, orderId: orderIdOfArguments(calls.get(item.callId)) };
}

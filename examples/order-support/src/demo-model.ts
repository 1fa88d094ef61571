/**
 * A local model for the order desk that needs no API key. It implements the Agents SDK's `Model`
 * interface and decides from the request alone, so a retried RunModel step gets the same answer:
 *
 * - after the latest user message, if tool results came back: it answers from them;
 * - else "cancel order 1002" asks for `cancel_order`, "look up order 1001" for `look_up_order`
 *   (the order number is parsed from the latest user message);
 * - else it explains what it can do.
 *
 * Streaming sends the answer in small chunks with a short pause, like a real model.
 */
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Usage } from "@openai/agents";
import type {
  AgentInputItem,
  AssistantMessageItem,
  FunctionCallItem,
  Model,
  ModelRequest,
  ModelResponse,
  StreamEvent,
} from "@openai/agents";

export interface OrderSupportDemoModelOptions {
  /** Characters per streamed chunk (about; chunks end at a word boundary). Default 18. */
  readonly chunkSize?: number;
  /** Pause between streamed chunks. Default 15 ms; 0 streams at once. */
  readonly chunkDelayMs?: number;
}

/** What the demo model decided for one request. */
export type DemoDecision =
  | { readonly kind: "tool_call"; readonly name: string; readonly arguments: Record<string, string> }
  | { readonly kind: "text"; readonly text: string };

interface ToolResult {
  readonly name: string;
  readonly text: string;
  /** The `order_id` argument of the call this result answers, when it had one. */
  readonly orderId: string | null;
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
  const items: AgentInputItem[] = typeof request.input === "string" ? [{ role: "user", content: request.input }] : request.input;
  let lastUser = -1;
  for (let index = items.length - 1; index >= 0; index--) {
    if (isUserMessage(items[index])) {
      lastUser = index;
      break;
    }
  }
  const userText = lastUser >= 0 ? userMessageText(items[lastUser]!) : "";
  const turnItems = items.slice(lastUser + 1);
  const calls = new Map<string, string>();
  for (const item of turnItems) if ("type" in item && item.type === "function_call") calls.set(item.callId, item.arguments);
  const results = turnItems.flatMap((item) => toolResult(item, calls));
  if (results.length > 0) return { kind: "text", text: answerFromResults(results) };

  const offered = new Set(request.tools.map((tool) => tool.name));
  const orderId = parseOrderId(userText);
  const wantsCancel = /\bcancel/i.test(userText);
  const wantsLookUp = /\b(look|status|where|find|check|show|track|order)\b/i.test(userText);
  if ((wantsCancel || wantsLookUp) && orderId === null) {
    return { kind: "text", text: "Which order do you mean? Please give me its order number, such as 1001." };
  }
  if (orderId !== null && wantsCancel && offered.has("cancel_order")) {
    return { kind: "tool_call", name: "cancel_order", arguments: { order_id: orderId, reason: parseReason(userText) } };
  }
  if (orderId !== null && wantsLookUp && offered.has("look_up_order")) {
    return { kind: "tool_call", name: "look_up_order", arguments: { order_id: orderId } };
  }
  return {
    kind: "text",
    text: 'I can look up an order or cancel one that has not shipped. Try "look up order 1001" or "cancel order 1002".',
  };
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

function toolResult(item: AgentInputItem, calls: ReadonlyMap<string, string>): ToolResult[] {
  if (!("type" in item) || item.type !== "function_call_result") return [];
  const output = item.output;
  let text: string;
  if (typeof output === "string") text = output;
  else if (Array.isArray(output)) text = output.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
  else text = "text" in output && typeof output.text === "string" ? output.text : JSON.stringify(output);
  return [{ name: item.name, text, orderId: orderIdOfArguments(calls.get(item.callId)) }];
}

function orderIdOfArguments(args: string | undefined): string | null {
  if (args === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(args);
    const orderId = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>).order_id : undefined;
    return typeof orderId === "string" ? orderId : null;
  } catch {
    return null;
  }
}

/** One sentence per result, naming the order; the result's text is quoted as it came back. */
function answerFromResults(results: readonly ToolResult[]): string {
  return results
    .map((result) => {
      const order = result.orderId === null ? "the order" : `order ${result.orderId}`;
      if (result.name === "look_up_order") return `I looked up ${order}: ${result.text}`;
      if (result.name === "cancel_order") return `I asked to cancel ${order}: ${result.text}`;
      return `${result.name} answered: ${result.text}`;
    })
    .join("\n");
}

/** The order number in a message: the number after "order" ("order 1002", "order #1002"), or else the first 3-10 digit number. */
export function parseOrderId(text: string): string | null {
  const afterWord = /\border\s*(?:no\.?|number|#)?\s*#?(\d{3,10})\b/i.exec(text);
  if (afterWord) return afterWord[1]!;
  const anyNumber = /\b(\d{3,10})\b/.exec(text);
  return anyNumber ? anyNumber[1]! : null;
}

function parseReason(text: string): string {
  const because = /\b(?:because|since|as)\s+(.+)$/i.exec(text.trim());
  const reason = because?.[1]?.replace(/[.!]+$/, "").trim();
  return reason ? reason : "requested by the customer";
}

/** Splits text into chunks of about `size` characters, each ending at a word boundary when it can. */
export function chunkText(text: string, size: number): string[] {
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > size) {
    // Cut after the last space that keeps the chunk within `size`, or at `size` in a long word.
    const space = rest.lastIndexOf(" ", size - 1);
    const cut = space <= 0 ? size : space + 1;
    chunks.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0) chunks.push(rest);
  return chunks;
}

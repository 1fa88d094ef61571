/**
 * The order desk's local demo model for the Vercel AI SDK: the SDK's own `MockLanguageModelV4`
 * (from `ai/test`) answering with `decideDemoTurn`, the decision the Agents SDK demo model uses
 * too. It needs no API key, and every response (tool call IDs included) is derived from the
 * prompt alone, so a retried RunModel step gets the same answer. Streamed text comes in small
 * chunks with a short pause, like a real model.
 */
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { toolOutputText } from "@durable-agents/ai-sdk";
import { MockLanguageModelV4 } from "ai/test";
import {
  chunkText,
  decideDemoTurn,
  demoConversation,
  orderIdOfArguments,
  type DemoDecision,
  type DemoMessage,
} from "./demo-decision.js";

type CallOptions = MockLanguageModelV4["doStreamCalls"][number];
type StreamResult = Awaited<ReturnType<MockLanguageModelV4["doStream"]>>;
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;
type StreamPart = StreamResult["stream"] extends ReadableStream<infer P> ? P : never;
type Part = { readonly type: string; readonly [key: string]: unknown };

export interface OrderSupportAiSdkDemoModelOptions {
  /** Characters per streamed chunk (about; chunks end at a word boundary). Default 18. */
  readonly chunkSize?: number;
  /** Pause between streamed chunks. Default 15 ms; 0 streams at once. */
  readonly chunkDelayMs?: number;
}

interface DemoResponse {
  readonly decision: DemoDecision;
  /** Derived from the prompt: the same prompt gives the same IDs. */
  readonly digest: string;
  readonly usage: GenerateResult["usage"];
}

export class OrderSupportAiSdkDemoModel extends MockLanguageModelV4 {
  constructor(options: OrderSupportAiSdkDemoModelOptions = {}) {
    const chunkSize = Math.max(1, options.chunkSize ?? 18);
    const chunkDelayMs = Math.max(0, options.chunkDelayMs ?? 15);
    super({
      provider: "order-support-demo",
      modelId: "order-support-demo",
      doGenerate: async (call) => {
        call.abortSignal?.throwIfAborted();
        return generate(respond(call));
      },
      doStream: async (call) => {
        call.abortSignal?.throwIfAborted();
        return stream(respond(call), chunkSize, chunkDelayMs, call.abortSignal);
      },
    });
  }

  /** Model calls made so far (streamed and not). */
  get calls(): number {
    return this.doStreamCalls.length + this.doGenerateCalls.length;
  }
}

function respond(call: CallOptions): DemoResponse {
  const prompt = call.prompt;
  const callArguments = new Map<string, unknown>();
  const messages: DemoMessage[] = [];
  for (const message of prompt) {
    if (message.role === "user") {
      messages.push({ kind: "user", text: textOf(message.content) });
      continue;
    }
    const parts = (Array.isArray(message.content) ? message.content : []) as unknown as Part[];
    if (message.role !== "tool") messages.push({ kind: "other" });
    for (const part of parts) {
      if (message.role === "assistant" && part.type === "tool-call")
        callArguments.set(String(part.toolCallId), part.input);
      if (message.role === "tool" && part.type === "tool-result") {
        const result = {
          name: String(part.toolName),
          text: toolOutputText(part.output),
          orderId: orderIdOf(callArguments.get(String(part.toolCallId))),
        };
        messages.push({ kind: "tool_result", result });
      }
    }
  }
  const offeredTools = new Set((call.tools ?? []).map((tool) => tool.name));
  const decision = decideDemoTurn(demoConversation(messages, offeredTools));
  const promptJson = JSON.stringify(prompt);
  const digest = createHash("sha256").update(promptJson).digest("hex").slice(0, 16);
  // A rough token count (4 characters a token), from the prompt and the decision only.
  const inputTokens = Math.ceil(promptJson.length / 4);
  const outputTokens = Math.max(1, Math.ceil(JSON.stringify(decision).length / 4));
  return {
    decision,
    digest,
    usage: {
      inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
    },
  };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return (content as Part[])
    .map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : ""))
    .join("\n");
}

/** The `order_id` of a prompt's tool call input: an object, or JSON text. */
function orderIdOf(input: unknown): string | null {
  if (typeof input === "string") return orderIdOfArguments(input);
  if (typeof input !== "object" || input === null) return null;
  const orderId = (input as Record<string, unknown>).order_id;
  return typeof orderId === "string" ? orderId : null;
}

function finishReason(decision: DemoDecision) {
  return decision.kind === "text"
    ? { unified: "stop" as const, raw: "stop" }
    : { unified: "tool-calls" as const, raw: "tool_calls" };
}

function toolCall(response: DemoResponse) {
  if (response.decision.kind !== "tool_call") return null;
  return {
    type: "tool-call" as const,
    toolCallId: `call_demo_${response.digest}`,
    toolName: response.decision.name,
    input: JSON.stringify(response.decision.arguments),
  };
}

function generate(response: DemoResponse): GenerateResult {
  const content: GenerateResult["content"] = [];
  if (response.decision.kind === "text") content.push({ type: "text", text: response.decision.text });
  const call = toolCall(response);
  if (call !== null) content.push(call);
  return {
    content,
    finishReason: finishReason(response.decision),
    usage: response.usage,
    warnings: [],
    response: { id: `resp_demo_${response.digest}`, modelId: "order-support-demo" },
  };
}

function stream(
  response: DemoResponse,
  chunkSize: number,
  chunkDelayMs: number,
  signal: AbortSignal | undefined,
): StreamResult {
  const parts: { readonly part: StreamPart; readonly pause: boolean }[] = [
    { part: { type: "stream-start", warnings: [] }, pause: false },
    {
      part: { type: "response-metadata", id: `resp_demo_${response.digest}`, modelId: "order-support-demo" },
      pause: false,
    },
  ];
  if (response.decision.kind === "text") {
    const id = `text_demo_${response.digest}`;
    parts.push({ part: { type: "text-start", id }, pause: false });
    for (const delta of chunkText(response.decision.text, chunkSize))
      parts.push({ part: { type: "text-delta", id, delta }, pause: true });
    parts.push({ part: { type: "text-end", id }, pause: false });
  }
  const call = toolCall(response);
  if (call !== null) parts.push({ part: call, pause: false });
  parts.push({
    part: { type: "finish", usage: response.usage, finishReason: finishReason(response.decision) },
    pause: false,
  });

  let next = 0;
  return {
    stream: new ReadableStream<StreamPart>({
      async pull(controller) {
        const entry = parts[next];
        if (entry === undefined) {
          controller.close();
          return;
        }
        next += 1;
        if (entry.pause && chunkDelayMs > 0) await sleep(chunkDelayMs, undefined, signal ? { signal } : {});
        controller.enqueue(entry.part);
      },
    }),
  };
}

/**
 * A deterministic `Model` for tests: every response is derived from the request's input by core's
 * scripted rules (`decideScriptedResponse`), so a retried step gets the same answer. It needs no
 * API key and counts its calls. At a `hang model` block the call waits for the abort signal the
 * SDK hands the model (`ModelRequest.signal`) and fails with its reason.
 */
import { createHash } from "node:crypto";
import type { AgentInputItem, Model, ModelRequest, ModelResponse, StreamEvent } from "@openai/agents";
import { Usage } from "@openai/agents";
import {
  decideScriptedResponse,
  hangUntilAborted,
  scriptedNotesAndSteers,
  scriptedToolCallId,
  scriptedTurnStart,
  type ScriptedDecision,
  type ScriptedMessage,
  type ScriptedModelInput,
} from "@durable-agents/core/testing";

export interface ScriptedModelOptions {
  /**
   * Report token usage: input tokens = ceil(length of the JSON of the request's input / 4), output
   * tokens = ceil(length of the JSON of the response's output / 4). Off: every count is 0.
   */
  readonly reportUsage?: boolean;
  /** Chunks a streamed text is split into (at least 1). Default 3. */
  readonly streamChunks?: number;
  /** Emit this many reasoning deltas (the text "thinking about <n> item(s)") before a streamed answer. Default 0. */
  readonly reasoningDeltas?: number;
}

type Item = Record<string, unknown>;

function textOf(item: Item): string {
  const content = item["content"];
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => {
      const p = part as Item;
      return typeof p["text"] === "string" ? (p["text"] as string) : "";
    })
    .join("");
}

function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (output && typeof output === "object") {
    const o = output as Item;
    if (o["type"] === "text" && typeof o["text"] === "string") return o["text"] as string;
    if (Array.isArray(output)) return output.map(outputText).join("");
  }
  return JSON.stringify(output);
}

const isUserMessage = (item: Item) =>
  item["role"] === "user" && (item["type"] === "message" || item["type"] === undefined);

/** How the scripted rules see one SDK input item. */
function classify(item: Item): ScriptedMessage {
  if (isUserMessage(item)) return { kind: "user", text: textOf(item) };
  if (item["type"] === "function_call_result") return { kind: "tool_result" };
  return { kind: "other" };
}

/**
 * Reads the scripted rules' input from the SDK's model input: the turn starts at core's
 * `scriptedTurnStart` (a user message after a tool result or after another user message was
 * steered into the turn).
 */
export function scriptedInputFromItems(input: string | readonly AgentInputItem[]): ScriptedModelInput {
  const items: Item[] =
    typeof input === "string" ? [{ type: "message", role: "user", content: input }] : (input as unknown as Item[]);
  const classified = items.map(classify);
  const turnIndex = scriptedTurnStart(classified);
  const userText = turnIndex >= 0 ? (classified[turnIndex]!.text ?? "") : "";
  const { failureNotesSeen, cancelNotesSeen, steered } = scriptedNotesAndSteers(classified, turnIndex);
  let toolResponses = 0;
  const toolResults: { name: string; text: string }[] = [];
  for (let i = turnIndex + 1; i < items.length; i++) {
    const item = items[i]!;
    if (item["type"] === "function_call" && items[i - 1]?.["type"] !== "function_call") toolResponses++;
    if (item["type"] === "function_call_result") {
      toolResults.push({ name: String(item["name"] ?? ""), text: outputText(item["output"]) });
    }
  }
  return { userText, toolResponses, toolResults, failureNotesSeen, cancelNotesSeen, steered };
}

/** Fills an output type's JSON schema from the decided text: strings get the text, numbers the text's length. */
function structuredAnswer(schema: unknown, text: string): unknown {
  const s = (schema ?? {}) as Item;
  if (s["type"] === "object" && s["properties"] && typeof s["properties"] === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(s["properties"] as Record<string, unknown>))
      out[key] = structuredAnswer(sub, text);
    return out;
  }
  if (s["type"] === "number" || s["type"] === "integer") return text.length;
  if (s["type"] === "boolean") return true;
  if (s["type"] === "array") return [];
  return text;
}

export class ScriptedModel implements Model {
  #calls = 0;
  #streamedCalls = 0;
  readonly #usages: { inputTokens: number; outputTokens: number; totalTokens: number }[] = [];
  readonly #options: ScriptedModelOptions;

  constructor(options: ScriptedModelOptions = {}) {
    this.#options = options;
  }

  /** Model calls made so far (streamed or not). */
  get calls(): number {
    return this.#calls;
  }

  /** The token counts reported for each call so far, in call order. */
  get usages(): readonly {
    readonly inputTokens: number;
    readonly outputTokens: number;
    readonly totalTokens: number;
  }[] {
    return this.#usages;
  }

  /** Model calls made through `getStreamedResponse`. */
  get streamedCalls(): number {
    return this.#streamedCalls;
  }

  /** The response for a request, without counting it. Throws for a `hang model` block (see `getResponse`). */
  respond(request: ModelRequest): ModelResponse {
    const input = scriptedInputFromItems(request.input);
    const decision = decideScriptedResponse(input);
    if (decision.kind === "hang") throw new Error("the script hangs the model call here; it has no response");
    return this.#response(request, input, decision);
  }

  #response(
    request: ModelRequest,
    input: ScriptedModelInput,
    decision: Exclude<ScriptedDecision, { kind: "hang" }>,
  ): ModelResponse {
    let output: ModelResponse["output"];
    if (decision.kind === "tool_calls") {
      output = decision.calls.map((call, index) => ({
        type: "function_call" as const,
        callId: scriptedToolCallId(input, index),
        name: call.name,
        arguments: call.arguments,
        status: "completed" as const,
      }));
    } else {
      const outputType = request.outputType as unknown;
      const text =
        outputType && typeof outputType === "object" && (outputType as Item)["type"] === "json_schema"
          ? JSON.stringify(structuredAnswer((outputType as Item)["schema"], decision.text))
          : decision.text;
      output = [
        {
          type: "message" as const,
          role: "assistant" as const,
          status: "completed" as const,
          content: [{ type: "output_text" as const, text }],
        },
      ];
    }
    const report = this.#options.reportUsage === true;
    const inputTokens = report ? Math.ceil(JSON.stringify(request.input).length / 4) : 0;
    const outputTokens = report ? Math.ceil(JSON.stringify(output).length / 4) : 0;
    return {
      usage: new Usage({ requests: 1, inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }),
      output,
      responseId: `resp_${createHash("sha256").update(JSON.stringify(request.input)).digest("hex").slice(0, 16)}`,
    };
  }

  #record(response: ModelResponse): ModelResponse {
    const { inputTokens, outputTokens, totalTokens } = response.usage;
    this.#usages.push({ inputTokens, outputTokens, totalTokens });
    return response;
  }

  /** The decided response, or (at a `hang model` block) a wait for the request's own abort signal. */
  async #answer(request: ModelRequest): Promise<ModelResponse> {
    const input = scriptedInputFromItems(request.input);
    const decision = decideScriptedResponse(input);
    if (decision.kind === "hang") return hangUntilAborted(request.signal, input.userText);
    return this.#record(this.#response(request, input, decision));
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    request.signal?.throwIfAborted();
    this.#calls++;
    return this.#answer(request);
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    request.signal?.throwIfAborted();
    this.#calls++;
    this.#streamedCalls++;
    const response = await this.#answer(request);
    yield { type: "response_started" };
    const reasoning = this.#options.reasoningDeltas ?? 0;
    const itemCount = typeof request.input === "string" ? 1 : request.input.length;
    for (let i = 0; i < reasoning; i++) {
      yield {
        type: "model",
        event: {
          type: "response.reasoning_summary_text.delta",
          delta: i === 0 ? `thinking about ${itemCount} item(s)` : ".",
        },
      };
    }
    for (const item of response.output as unknown as Item[]) {
      if (item["type"] !== "message" || !Array.isArray(item["content"])) continue;
      for (const part of item["content"] as Item[]) {
        if (part["type"] !== "output_text" || typeof part["text"] !== "string") continue;
        for (const chunk of chunks(part["text"], this.#options.streamChunks ?? 3)) {
          yield { type: "output_text_delta", delta: chunk };
        }
      }
    }
    yield {
      type: "response_done",
      response: {
        id: response.responseId ?? "resp",
        usage: {
          requests: 1,
          inputTokens: response.usage.inputTokens,
          outputTokens: response.usage.outputTokens,
          totalTokens: response.usage.totalTokens,
        },
        output: response.output,
      },
    } as StreamEvent;
  }
}

function chunks(text: string, count: number): string[] {
  const n = Math.max(1, Math.floor(count));
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

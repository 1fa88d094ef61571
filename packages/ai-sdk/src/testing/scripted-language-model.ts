/**
 * A deterministic AI SDK language model for tests, built on the SDK's own `MockLanguageModelV4`.
 * Every response is derived from the prompt alone, by core's `decideScriptedResponse`: a retried
 * step gets the same answer, tool call IDs included. At a `hang model` block the call waits for
 * the abort signal the SDK hands the model (`options.abortSignal`) and fails with its reason.
 */
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
import { MockLanguageModelV4 } from "ai/test";
import { toolOutputText } from "../tool-output-text.js";

type CallOptions = MockLanguageModelV4["doStreamCalls"][number];
type StreamResult = Awaited<ReturnType<MockLanguageModelV4["doStream"]>>;
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;
type StreamPart = StreamResult["stream"] extends ReadableStream<infer P> ? P : never;
type Part = { readonly type: string; readonly [key: string]: unknown };

export interface ScriptedLanguageModelOptions {
  /** Also stream a short reasoning text before each response (default false). */
  readonly reasoning?: boolean;
  /** Number of chunks the text of a response is streamed in (default 3). */
  readonly textChunks?: number;
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? (content as Part[])
          .filter((part) => part.type === "text")
          .map((part) => String(part.text))
          .join("")
      : "";

/** How the scripted rules see one prompt message. */
const classify = (message: CallOptions["prompt"][number]): ScriptedMessage =>
  message.role === "user"
    ? { kind: "user", text: textOf(message.content) }
    : message.role === "tool"
      ? { kind: "tool_result" }
      : { kind: "other" };

/**
 * Reads the scripted-rules input from a prompt: the turn starts at core's `scriptedTurnStart` (a user
 * message after a tool result or after another user message was steered into the turn).
 */
function scriptedInput(prompt: CallOptions["prompt"]): ScriptedModelInput {
  const classified = prompt.map(classify);
  const turnStart = scriptedTurnStart(classified);
  const userText = turnStart >= 0 ? (classified[turnStart]!.text ?? "") : "";
  const { failureNotesSeen, cancelNotesSeen, steered } = scriptedNotesAndSteers(classified, turnStart);
  let toolResponses = 0;
  const toolResults: { name: string; text: string }[] = [];
  for (const message of prompt.slice(turnStart + 1)) {
    const parts = (Array.isArray(message.content) ? message.content : []) as unknown as Part[];
    if (message.role === "assistant" && parts.some((part) => part.type === "tool-call")) toolResponses += 1;
    if (message.role === "tool") {
      for (const part of parts) {
        if (part.type === "tool-result")
          toolResults.push({ name: String(part.toolName), text: toolOutputText(part.output) });
      }
    }
  }
  return { userText, toolResponses, toolResults, failureNotesSeen, cancelNotesSeen, steered };
}

function splitText(text: string, chunks: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, chunks)));
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}

interface ScriptedResponse {
  readonly input: ScriptedModelInput;
  readonly decision: ScriptedDecision;
  readonly reasoning: string | null;
  readonly usage: GenerateResult["usage"];
}

function respond(options: CallOptions, settings: ScriptedLanguageModelOptions): ScriptedResponse {
  const input = scriptedInput(options.prompt);
  const decision = decideScriptedResponse(input);
  const reasoning = settings.reasoning
    ? `Turn message of ${input.userText.length} characters, ${input.toolResults.length} tool result(s) so far.`
    : null;
  const produced =
    (decision.kind === "text"
      ? decision.text.length
      : decision.kind === "tool_calls"
        ? decision.calls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0)
        : 0) + (reasoning?.length ?? 0);
  const inputTokens = Math.ceil(JSON.stringify(options.prompt).length / 4);
  const outputTokens = Math.max(1, Math.ceil(produced / 4));
  return {
    input,
    decision,
    reasoning,
    usage: {
      inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
    },
  };
}

const finishReason = (decision: ScriptedDecision) =>
  decision.kind === "text"
    ? { unified: "stop" as const, raw: "stop" }
    : { unified: "tool-calls" as const, raw: "tool_calls" };

function toolCalls(response: ScriptedResponse) {
  if (response.decision.kind !== "tool_calls") return [];
  return response.decision.calls.map((call, index) => ({
    type: "tool-call" as const,
    toolCallId: scriptedToolCallId(response.input, index),
    toolName: call.name,
    input: call.arguments,
  }));
}

async function streamResponse(options: CallOptions, settings: ScriptedLanguageModelOptions): Promise<StreamResult> {
  const response = respond(options, settings);
  if (response.decision.kind === "hang") return hangUntilAborted(options.abortSignal, response.input.userText);
  const parts: StreamPart[] = [{ type: "stream-start", warnings: [] }];
  if (response.reasoning !== null) {
    parts.push({ type: "reasoning-start", id: "reasoning-0" });
    for (const delta of splitText(response.reasoning, 2))
      parts.push({ type: "reasoning-delta", id: "reasoning-0", delta });
    parts.push({ type: "reasoning-end", id: "reasoning-0" });
  }
  if (response.decision.kind === "text") {
    parts.push({ type: "text-start", id: "text-0" });
    for (const delta of splitText(response.decision.text, settings.textChunks ?? 3)) {
      parts.push({ type: "text-delta", id: "text-0", delta });
    }
    parts.push({ type: "text-end", id: "text-0" });
  }
  parts.push(...toolCalls(response));
  parts.push({ type: "finish", usage: response.usage, finishReason: finishReason(response.decision) });
  return {
    stream: new ReadableStream<StreamPart>({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    }),
  };
}

async function generateResponse(options: CallOptions, settings: ScriptedLanguageModelOptions): Promise<GenerateResult> {
  const response = respond(options, settings);
  if (response.decision.kind === "hang") return hangUntilAborted(options.abortSignal, response.input.userText);
  const content: GenerateResult["content"] = [];
  if (response.reasoning !== null) content.push({ type: "reasoning", text: response.reasoning });
  if (response.decision.kind === "text") content.push({ type: "text", text: response.decision.text });
  content.push(...toolCalls(response));
  return { content, finishReason: finishReason(response.decision), usage: response.usage, warnings: [] };
}

export class ScriptedLanguageModel extends MockLanguageModelV4 {
  constructor(settings: ScriptedLanguageModelOptions = {}) {
    super({
      provider: "durable-agents-testing",
      modelId: "scripted",
      doStream: (options) => streamResponse(options, settings),
      doGenerate: (options) => generateResponse(options, settings),
    });
  }

  /** Model calls made so far (streamed and not). */
  get calls(): number {
    return this.doStreamCalls.length + this.doGenerateCalls.length;
  }
}

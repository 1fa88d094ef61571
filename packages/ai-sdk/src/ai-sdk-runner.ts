/**
 * A core `Runner` for the Vercel AI SDK (`ai`): one `streamText` model call per RunModel step, with
 * tool definitions the SDK cannot execute, and the real tools run one call at a time by `callTool`.
 */
import {
  ConfigurationError,
  ContractViolationError,
  InvalidInputError,
  PolicyError,
  currentToolCall,
  type HistoryItem,
  type Runner,
  type RunnerDescription,
  type Usage,
} from "@durable-agents/core";
import {
  runInToolCall,
  type CallToolInput,
  type CallToolResult,
  type RunModelInput,
  type RunModelResult,
  type ToolDescription,
  type UserItemKind,
} from "@durable-agents/core/engine";
import {
  asSchema,
  isStepCount,
  jsonSchema,
  streamText,
  type Instructions,
  type LanguageModel,
  type LanguageModelCallOptions,
  type LanguageModelUsage,
  type ModelMessage,
  type Tool,
  type ToolSet,
} from "ai";
import type { McpToolset } from "@durable-agents/mcp";
import { ApprovalRules, type AiSdkToolApproval } from "./approval-rules.js";
import { describeAgent } from "./describe.js";
import { displayMessage } from "./display-projection.js";
import { historyWithoutJoined, placeJoined } from "./joined-messages.js";
import { outcomeMessage } from "./outcome-message.js";
import { runStateCodec, type AiSdkRunState } from "./run-state.js";
import { toolOutputText } from "./tool-output-text.js";
import { validateToolInput } from "./validate-tool-input.js";

type StreamTextOptions = Parameters<typeof streamText>[0];

export interface AiSdkRunnerOptions {
  /** The AI SDK language model (a provider model, or a gateway model ID). */
  readonly model: LanguageModel;
  /** The system instructions sent with every model call. */
  readonly instructions?: Instructions;
  /** The agent's tools, as for `streamText`. Every tool needs an `execute`, except provider-executed ones. */
  readonly tools: ToolSet;
  /** Provider options passed to every model call. */
  readonly providerOptions?: StreamTextOptions["providerOptions"];
  /** Call settings (temperature, maxOutputTokens, ...) passed to every model call. */
  readonly settings?: LanguageModelCallOptions;
  /** Tool context (for tools with a `contextSchema`), keyed by tool name; passed to `execute` and approval functions. */
  readonly toolsContext?: Readonly<Record<string, unknown>>;
  /** Runtime context passed to the model call and to `toolApproval` functions. */
  readonly runtimeContext?: unknown;
  /**
   * The SDK's `toolApproval` configuration (as for `streamText`): it takes precedence over the tools'
   * own `needsApproval`. `user-approval` and `denied` make the call wait for a person.
   */
  readonly toolApproval?: AiSdkToolApproval;
  /**
   * Tools of MCP servers (`McpToolset.connect` from `@durable-agents/mcp`, connected before the
   * runner is built): each call is its own durable step, with the effect the tool's annotations
   * imply unless a policy names it. The list follows the servers' `list_changed` notifications.
   */
  readonly mcp?: McpToolset;
}

const isProviderExecuted = (tool: Tool): boolean =>
  (tool as { type?: string }).type === "provider" &&
  (tool as { isProviderExecuted?: boolean }).isProviderExecuted === true;

/** Accepts every JSON value, so that the SDK hands invalid arguments over verbatim (callTool judges them). */
const passThroughSchema = (tool: Tool) =>
  jsonSchema(async () => await asSchema(tool.inputSchema).jsonSchema, {
    validate: (value: unknown) => ({ success: true as const, value }),
  });

const toUsage = (usage: LanguageModelUsage | undefined): Usage => {
  const inputTokens = usage?.inputTokens ?? 0;
  const outputTokens = usage?.outputTokens ?? 0;
  return { modelCalls: 1, inputTokens, outputTokens, totalTokens: usage?.totalTokens ?? inputTokens + outputTokens };
};

/** Stored items must be plain JSON (no `undefined`, no class instances). */
const toJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const historyItem = (message: ModelMessage): HistoryItem => {
  const item = toJson(message);
  return { item, display: displayMessage(item) };
};

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";

/** The model's view of an MCP tool: its description and input schema, no execute (arguments are checked in `callTool`). */
const mcpModelTool = (tool: ReturnType<McpToolset["tools"]>[number]): ToolSet[string] =>
  ({
    description: tool.description,
    inputSchema: jsonSchema(tool.inputSchema as Parameters<typeof jsonSchema>[0], {
      validate: (value: unknown) => ({ success: true as const, value }),
    }),
  }) as unknown as ToolSet[string];

export class AiSdkRunner implements Runner {
  readonly #options: AiSdkRunnerOptions;
  readonly #tools: ReadonlyMap<string, Tool>;
  readonly #modelTools: ToolSet;
  readonly #approval: ApprovalRules;
  readonly #mcp: McpToolset | undefined;
  /** The model's tool set with the MCP tools of `#mcp.version`, built again when the servers' lists change. */
  #withMcp: { readonly version: number; readonly tools: ToolSet } | undefined;

  constructor(options: AiSdkRunnerOptions) {
    if (typeof options !== "object" || options === null || options.model == null) {
      throw new ConfigurationError("an AI SDK runner needs a model");
    }
    if (typeof options.tools !== "object" || options.tools === null) {
      throw new ConfigurationError("an AI SDK runner needs a tool set (an object keyed by tool name; it may be empty)");
    }
    this.#options = options;
    const tools = new Map<string, Tool>();
    const modelTools: ToolSet = {};
    for (const [name, tool] of Object.entries(options.tools)) {
      if (isProviderExecuted(tool)) {
        modelTools[name] = tool;
        continue;
      }
      if (typeof tool.execute !== "function") {
        throw new PolicyError(
          `tool "${name}" has no execute function; a durable session must run every tool it offers the model`,
        );
      }
      tools.set(name, tool);
      modelTools[name] = {
        ...tool,
        inputSchema: passThroughSchema(tool),
        execute: undefined,
        needsApproval: undefined,
      } as unknown as ToolSet[string];
    }
    this.#tools = tools;
    this.#modelTools = modelTools;
    const approval = options.toolApproval;
    if (typeof approval === "object" && approval !== null) {
      for (const name of Object.keys(approval)) {
        if (!tools.has(name)) {
          const known = [...tools.keys()].sort().join(", ") || "none";
          throw new PolicyError(`toolApproval names "${name}", which is no tool of the agent (its tools: ${known})`);
        }
      }
    }
    this.#approval = new ApprovalRules(tools, approval, options.toolsContext, options.runtimeContext);
    this.#mcp = options.mcp;
    if (this.#mcp) {
      if (typeof this.#mcp.tools !== "function" || typeof this.#mcp.call !== "function") {
        throw new ConfigurationError(
          "mcp must be an McpToolset from @durable-agents/mcp (await McpToolset.connect(...))",
        );
      }
      const both = this.#mcp.tools().filter((tool) => tools.has(tool.name) || modelTools[tool.name] !== undefined);
      if (both.length > 0) {
        throw new PolicyError(
          `the agent has a tool and an MCP server offers one with the same name: ${both.map((t) => `"${t.name}" (server "${t.server}")`).join(", ")}; give the server a toolPrefix`,
        );
      }
    }
  }

  tools(): readonly ToolDescription[] {
    const own = [...this.#tools.keys()].map((name) => ({ name, approval: this.#approval.mode(name) }));
    return this.#mcp
      ? [
          ...own,
          ...this.#mcpTools().map((tool) => ({
            name: tool.name,
            approval: "never" as const,
            defaultEffect: tool.effect,
          })),
        ]
      : own;
  }

  /** The MCP tools the servers offer now, but a name the agent's own tools use (a later list) stays the agent's. */
  #mcpTools(): ReturnType<McpToolset["tools"]> {
    return this.#mcp
      ? this.#mcp.tools().filter((tool) => !this.#tools.has(tool.name) && this.#modelTools[tool.name] === undefined)
      : [];
  }

  #modelToolSet(): ToolSet {
    if (!this.#mcp) return this.#modelTools;
    const version = this.#mcp.version;
    if (this.#withMcp?.version !== version) {
      const tools: ToolSet = { ...this.#modelTools };
      for (const tool of this.#mcpTools()) tools[tool.name] = mcpModelTool(tool);
      this.#withMcp = { version, tools };
    }
    return this.#withMcp.tools;
  }

  /** The agent for the definition's fingerprint: model name, instructions, tools and their schemas. */
  describe(): RunnerDescription {
    const description = describeAgent(this.#options);
    // The MCP tools as listed when the session is defined are part of its definition.
    return this.#mcp ? { ...description, mcpTools: this.#mcp.describe() } : description;
  }

  userItem(kind: UserItemKind, text: string): HistoryItem {
    if (typeof text !== "string") throw new InvalidInputError("a user item needs text");
    const item: ModelMessage = { role: "user", content: text };
    return { item, display: { role: kind === "turn_failure_note" ? "note" : "user", text } };
  }

  async runModel(input: RunModelInput): Promise<RunModelResult> {
    const state = this.#stateOf(input);
    // The turn's own messages (its items and the next run state) never hold a steered message: the
    // model sees each where it joined, and core stored it already.
    const turnMessages: ModelMessage[] = [...state.messages, ...this.#outcomeMessages(state, input)];
    const joined = input.joined ?? [];
    const messages: ModelMessage[] = [
      ...historyWithoutJoined(input.history, joined),
      ...placeJoined(turnMessages, joined),
    ];

    const result = streamText({
      ...this.#options.settings,
      model: this.#options.model,
      instructions: this.#options.instructions,
      messages,
      tools: this.#modelToolSet(),
      stopWhen: isStepCount(1),
      maxRetries: 0,
      abortSignal: input.signal,
      providerOptions: this.#options.providerOptions,
      toolsContext: this.#options.toolsContext,
      runtimeContext: this.#options.runtimeContext,
      onError: () => {},
    } as StreamTextOptions);

    for await (const part of result.stream) {
      if (part.type === "text-delta" && part.text.length > 0) input.emit({ kind: "text", text: part.text });
      else if (part.type === "reasoning-delta" && part.text.length > 0)
        input.emit({ kind: "reasoning", text: part.text });
      else if (part.type === "error") throw part.error;
      else if (part.type === "abort") throw input.signal.reason ?? new Error("the model call was aborted");
    }
    input.signal.throwIfAborted();

    const step = await result.finalStep;
    const usage = toUsage(step.usage);
    // The SDK adds tool messages of its own for calls it could not parse; the engine reports those outcomes.
    const response = (await result.responseMessages).filter(
      (message) => message.role === "assistant",
    ) as ModelMessage[];
    const calls = step.content.filter(
      (part): part is Extract<typeof part, { type: "tool-call" }> =>
        part.type === "tool-call" && !part.providerExecuted,
    );

    if (calls.length === 0) {
      const text = await result.text;
      return { kind: "final", items: [...turnMessages, ...response].map(historyItem), text, usage };
    }

    const requested = [];
    for (const call of calls) {
      const args = typeof call.input === "string" ? call.input : JSON.stringify(call.input ?? {});
      requested.push({
        toolCallId: call.toolCallId,
        name: call.toolName,
        arguments: args,
        needsApproval: await this.#needsApproval(call.toolName, call.toolCallId, args, messages),
      });
    }
    const nextState: AiSdkRunState = {
      messages: toJson([...turnMessages, ...response]),
      pending: requested.map((call) => ({ toolCallId: call.toolCallId, name: call.name })),
    };
    return { kind: "tool_calls", calls: requested, runState: runStateCodec.encode(nextState), usage };
  }

  async callTool(input: CallToolInput): Promise<CallToolResult> {
    const tool = this.#tools.get(input.name);
    if (!tool && this.#mcp) {
      // One MCP call: the toolset validates the arguments and sends the key and attempt in _meta.
      return await this.#mcp.call(input.name, input.arguments, input);
    }
    if (!tool || typeof tool.execute !== "function") {
      const known = [...this.#tools.keys()].sort().join(", ") || "none";
      return { status: "failed", message: `the agent has no tool named "${input.name}" (its tools: ${known})` };
    }
    const validation = await validateToolInput(tool, input.name, input.arguments);
    if (!validation.success) return { status: "failed", message: validation.message };

    const execute = tool.execute.bind(tool);
    const run = async (): Promise<unknown> => {
      const returned: unknown = await execute(validation.value, {
        toolCallId: input.toolCallId,
        messages: [],
        abortSignal: input.signal,
        context: this.#options.toolsContext?.[input.name],
      });
      if (!isAsyncIterable(returned)) return returned;
      // A streaming tool yields preliminary results; the last one is its output.
      let last: unknown;
      for await (const value of returned) last = value;
      return last;
    };
    const context = currentToolCall();
    const output =
      context?.toolCallId === input.toolCallId
        ? await run()
        : await runInToolCall(
            {
              sessionId: input.sessionId,
              turnId: input.turnId,
              toolCallId: input.toolCallId,
              toolName: input.name,
              idempotencyKey: input.idempotencyKey,
              attempt: input.attempt,
              signal: input.signal,
            },
            run,
          );
    return { status: "succeeded", output: await this.#outputText(tool, input.toolCallId, validation.value, output) };
  }

  #stateOf(input: RunModelInput): AiSdkRunState {
    if (input.runState === null) {
      if (input.outcomes.length > 0) {
        throw new ContractViolationError(
          "engine",
          "outcomes were given without the run state of the step that asked for them",
        );
      }
      return { messages: [], pending: [] };
    }
    return runStateCodec.decode(input.runState);
  }

  /** One tool message per outcome, in the order the model asked for the calls. */
  #outcomeMessages(state: AiSdkRunState, input: RunModelInput): ModelMessage[] {
    const byId = new Map(input.outcomes.map((outcome) => [outcome.toolCallId, outcome]));
    const missing = state.pending.filter((call) => !byId.has(call.toolCallId)).map((call) => call.toolCallId);
    const pendingIds = new Set(state.pending.map((call) => call.toolCallId));
    const unknown = input.outcomes.filter((outcome) => !pendingIds.has(outcome.toolCallId)).map((o) => o.toolCallId);
    if (missing.length > 0 || unknown.length > 0) {
      throw new ContractViolationError(
        "engine",
        `the outcomes do not match the calls the model asked for: ${[
          ...missing.map((id) => `no outcome for call ${id}`),
          ...unknown.map((id) => `outcome for call ${id}, which the model did not ask for`),
        ].join("; ")}`,
      );
    }
    return state.pending.map((call) => outcomeMessage(byId.get(call.toolCallId)!));
  }

  async #needsApproval(name: string, toolCallId: string, args: string, messages: ModelMessage[]): Promise<boolean> {
    const tool = this.#tools.get(name);
    if (!tool) return false;
    if (this.#approval.mode(name) !== "per_call") return this.#approval.mode(name) === "always";
    // Arguments that fail validation never run (callTool reports them failed), so there is nothing to approve.
    const validation = await validateToolInput(tool, name, args);
    if (!validation.success) return false;
    return await this.#approval.needsApproval({ name, toolCallId, input: validation.value, messages });
  }

  async #outputText(tool: Tool, toolCallId: string, input: unknown, output: unknown): Promise<string> {
    if (typeof tool.toModelOutput === "function") {
      const modelOutput = (await tool.toModelOutput({ toolCallId, input, output } as never)) as { type?: string };
      if (["text", "json", "content", "error-text", "error-json"].includes(modelOutput?.type ?? "")) {
        return toolOutputText(modelOutput);
      }
    }
    return typeof output === "string" ? output : JSON.stringify(output ?? null);
  }
}

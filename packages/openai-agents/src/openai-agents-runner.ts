/**
 * A core `Runner` for `@openai/agents` agents. The model runs on a gated copy of the agent graph:
 * every function tool of the copy stops the run right after the model asks for it, so one
 * `runModel` makes one model call, and the real tools run only in `callTool`.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Agent,
  RunContext,
  tool as sdkTool,
  RunState,
  Runner as SdkRunner,
  ToolInputGuardrailTripwireTriggered,
  invokeFunctionTool,
  runToolInputGuardrails,
  user,
  type AgentInputItem,
  type CallModelInputFilter,
  type FunctionTool,
  type Model,
  type ModelResponse,
  type RunConfig,
  type RunToolApprovalItem,
  type StreamedRunResult,
} from "@openai/agents";
import {
  getFunctionToolApprovalInput,
  hasDynamicFunctionToolApprovalPolicy,
  hasInspectableFunctionToolArguments,
  prepareFunctionToolInput,
  setFunctionToolPreparedInput,
  type FunctionToolPreparedInput,
} from "@openai/agents-core/utils/internal";
import {
  ConfigurationError,
  ContractViolationError,
  PolicyError,
  type HistoryItem,
  type Runner,
  type RunnerDescription,
  type ToolPolicies,
  type Usage,
} from "@durable-agents/core";
import {
  runOutsideToolCall,
  type CallToolInput,
  type CallToolResult,
  type RecordedOutcome,
  type RequestedToolCall,
  type RunModelInput,
  type RunModelResult,
  type ToolDescription,
  type UserItemKind,
} from "@durable-agents/core/engine";
import type { McpTool, McpToolset } from "@durable-agents/mcp";
import { gateAgentGraph, readAgentGraph, type AgentGraph, type GraphTool } from "./agent-graph.js";
import { describeGraph } from "./describe.js";
import { durableToolInfo } from "./durable-tool.js";
import { displayOf, toHistoryItem } from "./display.js";
import { historyWithoutJoined, joinedInputFilter } from "./joined-items.js";
import { decodeRunState, encodeRunState, historyHolds, type HistoryPrefix } from "./run-state-codec.js";

export interface OpenAIAgentsRunnerOptions {
  /** A model (or model name) for every agent of the graph, as the SDK `Runner`'s `model`. Default: each agent's own. */
  readonly model?: Model | string;
  /** More SDK `Runner` configuration (tracing is off unless this turns it on). */
  readonly runConfig?: Partial<RunConfig>;
  /**
   * Let tools the SDK runs itself (MCP server tools, local shell, computer, apply-patch) run inside
   * `runModel`: they are not gated, repeat when the step is retried, and let one step make several
   * model calls. Default false: the runner refuses them with a `PolicyError`.
   */
  readonly allowAtLeastOnceTools?: boolean;
  /** The SDK's `maxTurns`: model calls of one session turn, across all its steps. Default 100. */
  readonly maxTurns?: number;
  /** The SDK run context value handed to tools, guardrails and instructions. */
  readonly context?: unknown;
  /** Leave the session history out of the saved run state (restored from the history on resume). Default true. */
  readonly compactRunState?: boolean;
  /**
   * How many live SDK run states the runner keeps between the steps of a turn (default 32; 0 keeps
   * none). A step that returns tool calls leaves its state here under the exact run state string
   * it returned; the next step with that string and the same history objects takes it (once) and
   * skips decoding and `RunState.fromString`. Any other step decodes, with the same result.
   */
  readonly liveRunStates?: number;
  /**
   * Tools of MCP servers for the entry agent (`McpToolset.connect` from `@durable-agents/mcp`,
   * connected before the runner is built): each call is its own durable step, like a function tool,
   * with the effect the tool's annotations imply unless a policy names it. The list follows the
   * servers' `list_changed` notifications. (`Agent.mcpServers` stays refused: the SDK would run those
   * tools itself.)
   */
  readonly mcp?: McpToolset;
}

/** A turn's SDK state kept in memory between its steps, and the history part of its input. */
interface LiveRunState {
  readonly state: RunState<any, Agent<any, any>>;
  readonly prefix: HistoryPrefix;
  /** The state's interruptions as the step read them (`getInterruptions()` copies them on every call). */
  readonly interruptions: readonly RunToolApprovalItem[];
}

/** The text the SDK's default tool error handler gives instead of the error (agent tools use it). */
const SDK_DEFAULT_TOOL_ERROR = "An error occurred while running the tool. Please try again.";

type Outcomes = ReadonlyMap<string, RecordedOutcome>;

/** Approvals a nested agent-tool run stopped for, collected while `callTool` runs it. */
const nestedApprovals = new AsyncLocalStorage<string[]>();
const watchedAgentTools = new WeakSet<object>();

/**
 * An agent tool's nested run that stops for approval returns an empty output, which would be
 * recorded as a success. Listening to the nested run's events (this makes the SDK stream it) is the
 * public way to notice.
 */
function watchNestedApprovals(entry: GraphTool): void {
  const tool = entry.tool as unknown as {
    on?: (name: string, handler: (event: { event: unknown }) => void) => unknown;
  };
  if (entry.kind !== "agent" || typeof tool.on !== "function" || watchedAgentTools.has(tool)) return;
  watchedAgentTools.add(tool);
  tool.on("run_item_stream_event", ({ event }) => {
    const e = event as { name?: string; item?: { toolName?: string; rawItem?: { name?: string } } };
    if (e.name === "tool_approval_requested")
      nestedApprovals.getStore()?.push(e.item?.toolName ?? e.item?.rawItem?.name ?? "?");
  });
}

export class OpenAIAgentsRunner implements Runner {
  readonly agent: Agent<any, any>;
  readonly #graph: AgentGraph;
  readonly #gated: Agent<any, any>;
  readonly #sdk: SdkRunner;
  readonly #maxTurns: number;
  readonly #context: unknown;
  readonly #compact: boolean;
  readonly #descriptions: readonly ToolDescription[];
  readonly #model: Model | string | undefined;
  readonly #outcomes = new AsyncLocalStorage<Outcomes>();
  readonly #nestedRunConfig: Partial<RunConfig>;
  /** The application's own `runConfig.callModelInputFilter`, composed with the placement of steered messages. */
  readonly #inputFilter: CallModelInputFilter<any> | undefined;
  readonly #liveLimit: number;
  /** Live states by the exact run state string returned with them, oldest first. */
  readonly #live = new Map<string, LiveRunState>();
  readonly #mcp: McpToolset | undefined;
  /** The entry agent's own tools on the gated copy; the MCP tools are added after them. */
  readonly #ownGatedTools: readonly unknown[];
  /** A gated copy of every MCP tool the servers offered (also of those they no longer offer, for saved run states). */
  readonly #mcpGated = new Map<string, { readonly tool: McpTool; readonly gated: FunctionTool<any, any, any> }>();
  #mcpVersion = -1;
  /** Set while a saved run state is restored: gated copies of MCP tools that went away must still resolve. */
  readonly #restoring = new AsyncLocalStorage<true>();

  constructor(agent: Agent<any, any>, options: OpenAIAgentsRunnerOptions = {}) {
    this.agent = agent;
    this.#graph = readAgentGraph(agent);
    if (this.#graph.atLeastOnce.length > 0 && options.allowAtLeastOnceTools !== true) {
      throw new PolicyError(
        `the agent graph has tools the SDK runs itself, which the runner cannot give their own step: ${this.#graph.atLeastOnce.join("; ")}. ` +
          "Wrap each such action in a durableTool(), or pass allowAtLeastOnceTools: true to run them inside RunModel (at least once: they repeat when the step is retried)",
      );
    }
    const maxTurns = options.maxTurns ?? 100;
    if (!Number.isInteger(maxTurns) || maxTurns < 1)
      throw new ConfigurationError("maxTurns must be a positive integer");
    this.#maxTurns = maxTurns;
    this.#context = options.context;
    this.#compact = options.compactRunState ?? true;
    const liveLimit = options.liveRunStates ?? 32;
    if (!Number.isInteger(liveLimit) || liveLimit < 0)
      throw new ConfigurationError("liveRunStates must be a non-negative integer");
    this.#liveLimit = liveLimit;
    this.#gated = gateAgentGraph(this.#graph, { recordedOutput: (name, callId) => this.#recordedOutput(name, callId) });
    const config: Partial<RunConfig> = { tracingDisabled: true, ...options.runConfig };
    if (options.model !== undefined) config.model = options.model;
    this.#sdk = new SdkRunner(config);
    this.#inputFilter = config.callModelInputFilter;
    this.#nestedRunConfig = {
      tracingDisabled: config.tracingDisabled ?? true,
      ...(config.model !== undefined ? { model: config.model } : {}),
      ...(config.modelProvider !== undefined ? { modelProvider: config.modelProvider } : {}),
    };
    this.#descriptions = [...this.#graph.tools.values()].map((entry) => describeTool(entry));
    this.#model = options.model;
    for (const entry of this.#graph.tools.values()) watchNestedApprovals(entry);
    this.#ownGatedTools = [...this.#gated.tools];
    this.#mcp = options.mcp;
    if (this.#mcp) {
      if (typeof this.#mcp.tools !== "function" || typeof this.#mcp.call !== "function") {
        throw new ConfigurationError(
          "mcp must be an McpToolset from @durable-agents/mcp (await McpToolset.connect(...))",
        );
      }
      const both = this.#mcp.tools().filter((tool) => this.#graph.tools.has(tool.name));
      if (both.length > 0) {
        throw new PolicyError(
          `the agent graph has a tool and an MCP server offers one with the same name: ${both.map((t) => `"${t.name}" (server "${t.server}")`).join(", ")}; give the server a toolPrefix`,
        );
      }
      this.#syncMcp();
    }
  }

  tools(): readonly ToolDescription[] {
    if (!this.#mcp) return this.#descriptions;
    return [
      ...this.#descriptions,
      ...this.#mcpTools().map((tool) => ({ name: tool.name, approval: "never" as const, defaultEffect: tool.effect })),
    ];
  }

  /** The MCP tools the servers offer now; a name a tool of the graph uses (in a later list) stays the graph's. */
  #mcpTools(): readonly McpTool[] {
    return this.#mcp ? this.#mcp.tools().filter((tool) => !this.#graph.tools.has(tool.name)) : [];
  }

  /** Brings the entry agent's gated MCP tools up to the servers' current lists. */
  #syncMcp(): void {
    if (!this.#mcp || this.#mcp.version === this.#mcpVersion) return;
    this.#mcpVersion = this.#mcp.version;
    for (const tool of this.#mcpTools()) {
      if (this.#mcpGated.get(tool.name)?.tool !== tool)
        this.#mcpGated.set(tool.name, { tool, gated: this.#gateMcpTool(tool) });
    }
    this.#gated.tools = [...this.#ownGatedTools, ...[...this.#mcpGated.values()].map((entry) => entry.gated)] as never;
  }

  /** The model's view of an MCP tool: its schema, gated like a function tool; it never calls the server. */
  #gateMcpTool(tool: McpTool): FunctionTool<any, any, any> {
    const name = tool.name;
    const schema = tool.inputSchema as Record<string, unknown>;
    return sdkTool({
      name,
      description: tool.description,
      parameters: {
        ...schema,
        type: "object",
        properties: (schema.properties as Record<string, unknown> | undefined) ?? {},
        required: (schema.required as string[] | undefined) ?? [],
        additionalProperties: (schema.additionalProperties as boolean | undefined) ?? true,
      } as never,
      strict: false,
      needsApproval: true,
      // A tool the servers no longer offer is hidden from the model, but a saved run state that
      // named it still resolves it (its call ends failed in callTool, and the model reads that).
      isEnabled: async () => this.#mcp?.tool(name) !== undefined || this.#restoring.getStore() === true,
      execute: async (_input: unknown, _context: unknown, details?: { toolCall?: { callId?: string } }) =>
        this.#recordedOutput(name, details?.toolCall?.callId),
      errorFunction: (_context, error) => (error instanceof Error ? error.message : String(error)),
    }) as FunctionTool<any, any, any>;
  }

  /** The agent graph for the definition's fingerprint: agents, models, instructions, tools and their schemas, handoffs. */
  describe(): RunnerDescription {
    const description = describeGraph(this.#graph, this.#model);
    // The MCP tools as listed when the session is defined are part of its definition.
    return this.#mcp ? { ...description, mcpTools: this.#mcp.describe() } : description;
  }

  validatePolicies(policies: ToolPolicies): void {
    for (const [name, policy] of Object.entries(policies)) {
      const description = this.#descriptions.find((tool) => tool.name === name);
      if (description?.approval === "always" && policy.needsApproval === false) {
        throw new PolicyError(
          `the policy for "${name}" says needsApproval: false, but the tool itself always needs approval (needsApproval: true); the tool's own setting wins, so remove one of them`,
        );
      }
    }
  }

  userItem(kind: UserItemKind, text: string): HistoryItem {
    const item = JSON.parse(JSON.stringify(user(text))) as unknown;
    const display = displayOf(item);
    return { item, display: kind === "turn_failure_note" ? { ...display, role: "note" } : display };
  }

  async runModel(input: RunModelInput): Promise<RunModelResult> {
    this.#syncMcp();
    const history = input.history;
    let runInput: AgentInputItem[] | RunState<any, Agent<any, any>>;
    let responsesBefore = 0;
    const outcomes = new Map<string, RecordedOutcome>();
    let known: HistoryPrefix | undefined;
    // Steered messages stay out of the SDK's state (and so out of the turn's items): the filter puts
    // them into each model call's input where they joined.
    const joined = input.joined ?? [];
    const placement =
      joined.length > 0
        ? joinedInputFilter(joined, history[input.turnStart]?.item, input.turnStart, this.#inputFilter)
        : undefined;
    if (input.runState === null) {
      runInput = historyWithoutJoined(history, joined);
    } else {
      let state: RunState<any, Agent<any, any>>;
      let waiting: readonly RunToolApprovalItem[] | undefined;
      const live = this.#takeLive(input.runState, history);
      if (live) {
        state = live.state;
        known = live.prefix;
        waiting = live.interruptions;
      } else {
        const saved = decodeRunState(input.runState, history);
        state = await this.#restoring.run(true, () =>
          this.#context === undefined
            ? RunState.fromString(this.#gated, saved.sdkState)
            : RunState.fromStringWithContext(this.#gated, saved.sdkState, new RunContext(this.#context)),
        );
        if (saved.historyItems.length > 0) {
          // The SDK gets its own copy of the history items, as on the first step of a turn.
          const original = structuredClone(saved.historyItems) as AgentInputItem[];
          const rest = state._originalInput;
          state._originalInput = [...original, ...(Array.isArray(rest) ? rest : [])];
          known = { p: original.length, h: saved.h, original, history: saved.historyItems };
        }
      }
      responsesBefore = state._modelResponses.length;
      for (const outcome of input.outcomes) outcomes.set(outcome.toolCallId, outcome);
      for (const item of waiting ?? state.getInterruptions()) {
        const callId = callIdOf(item);
        const outcome = callId === undefined ? undefined : outcomes.get(callId);
        if (!outcome) {
          throw new ContractViolationError(
            "engine",
            `the saved run state waits for tool call "${callId ?? "?"}" (${item.toolName ?? ""}), but no outcome was recorded for it`,
          );
        }
        if (outcome.status === "rejected") {
          // The person's message reaches the model verbatim.
          state.reject(item, { message: outcome.text });
        } else {
          // The gated copy returns the recorded text. (For arguments that are not JSON the SDK
          // answers with its own parse-error text instead, without calling the copy.)
          state.approve(item);
        }
      }
      runInput = state;
    }

    const result = await this.#outcomes.run(outcomes, () =>
      this.#sdk.run(this.#gated, runInput, {
        stream: true,
        maxTurns: this.#maxTurns,
        signal: input.signal,
        ...(placement ? { callModelInputFilter: placement } : {}),
        ...(this.#context !== undefined && input.runState === null ? { context: this.#context } : {}),
      }),
    );
    await this.#outcomes.run(outcomes, () => drain(result, input.emit));
    // A cancelled stream ends quietly; it must not look like a final answer.
    input.signal.throwIfAborted();
    if (result.cancelled) throw new Error("the model step was cancelled before it finished");
    const usage = stepUsage(result.rawResponses.slice(responsesBefore));

    const interruptions = result.interruptions ?? [];
    if (interruptions.length > 0) {
      const calls: RequestedToolCall[] = [];
      for (const item of interruptions) {
        const raw = item.rawItem as { type?: string; callId?: string; name?: string; arguments?: string };
        const entry = raw.type === "function_call" && raw.name ? this.#graph.tools.get(raw.name) : undefined;
        if (
          !entry &&
          raw.type === "function_call" &&
          raw.name &&
          raw.callId !== undefined &&
          this.#mcpGated.has(raw.name)
        ) {
          // An MCP tool asks for no approval of its own: its effect (or policy) decides.
          calls.push({ toolCallId: raw.callId, name: raw.name, arguments: raw.arguments ?? "", needsApproval: false });
          continue;
        }
        if (!entry || raw.callId === undefined) {
          throw new Error(
            `the run stopped for an approval the runner does not gate (${raw.type ?? "?"} "${raw.name ?? item.toolName ?? "?"}"); ` +
              "approvals of tools the SDK runs itself (MCP servers, shell, computer, apply-patch, hosted MCP) are not supported",
          );
        }
        const args = raw.arguments ?? "";
        calls.push({
          toolCallId: raw.callId,
          name: entry.name,
          arguments: args,
          needsApproval: await frameworkApproval(entry.tool, args, result.runContext, raw.callId),
        });
      }
      const encoded = encodeRunState(result.state, history, this.#compact, known);
      this.#keepLive(
        encoded.runState,
        { state: result.state, prefix: encoded.prefix, interruptions },
        encoded.sessionInputSaved,
      );
      return { kind: "tool_calls", calls, runState: encoded.runState, usage };
    }

    const finalOutput = result.finalOutput;
    const text =
      typeof finalOutput === "string" ? finalOutput : finalOutput === undefined ? "" : JSON.stringify(finalOutput);
    const items = result.history.slice(input.turnStart + 1).map((item) => toHistoryItem(item));
    return { kind: "final", items, text, usage };
  }

  async callTool(input: CallToolInput): Promise<CallToolResult> {
    const entry = this.#graph.tools.get(input.name);
    // One MCP call: the toolset validates the arguments and sends the key and attempt in _meta.
    if (!entry && this.#mcp) return await this.#mcp.call(input.name, input.arguments, input);
    if (!entry) return { status: "failed", message: `the agent has no tool named "${input.name}"` };
    const tool = entry.tool;
    const runContext = new RunContext(this.#context);
    const toolCall = {
      type: "function_call" as const,
      callId: input.toolCallId,
      name: input.name,
      arguments: input.arguments,
      status: "completed" as const,
    };

    let prepared: FunctionToolPreparedInput | undefined;
    try {
      prepared = prepareFunctionToolInput(tool, input.arguments);
      if (prepared === undefined && tool.parameters) JSON.parse(input.arguments);
    } catch (error) {
      return { status: "failed", message: `Invalid arguments for tool "${input.name}": ${describeInvalid(error)}` };
    }
    if (prepared && !prepared.result.success) {
      return {
        status: "failed",
        message: `Invalid arguments for tool "${input.name}": ${describeInvalid(prepared.result.error)}`,
      };
    }

    try {
      const verdict = await runToolInputGuardrails({
        guardrails: tool.inputGuardrails,
        context: runContext,
        agent: entry.owner,
        toolCall,
      });
      if (verdict.type === "reject") return { status: "failed", message: verdict.message };
    } catch (error) {
      if (error instanceof ToolInputGuardrailTripwireTriggered) {
        return { status: "failed", message: `The input guardrail "${error.result.guardrail.name}" stopped this call` };
      }
      throw error;
    }

    const details: Record<string, unknown> = { toolCall, signal: input.signal };
    if (entry.kind === "agent") details["parentRunConfig"] = this.#nestedRunConfig;
    if (prepared) setFunctionToolPreparedInput(details, prepared);
    const invoke = () => invokeFunctionTool({ tool, runContext, input: input.arguments, details });
    if (entry.kind === "agent") {
      // The nested run's tools must not see (and reuse) this call's idempotency key.
      const approvals: string[] = [];
      const output = await nestedApprovals.run(approvals, () => runOutsideToolCall(invoke));
      if (approvals.length > 0) {
        return {
          status: "failed",
          message: `the agent tool "${input.name}" stopped for an approval of ${approvals.map((n) => `"${n}"`).join(", ")} inside its nested run; approvals inside an agent tool are not supported`,
        };
      }
      if (output === SDK_DEFAULT_TOOL_ERROR) {
        throw new Error(
          `the nested run of agent tool "${input.name}" failed (the SDK hid the error behind its default tool error text)`,
        );
      }
      return { status: "succeeded", output: typeof output === "string" ? output : (JSON.stringify(output) ?? "") };
    }
    const output = await invoke();
    return { status: "succeeded", output: typeof output === "string" ? output : (JSON.stringify(output) ?? "") };
  }

  /** Takes (and drops) the live state saved under this exact string, if the history is the same objects. */
  #takeLive(runState: string, history: readonly HistoryItem[]): LiveRunState | undefined {
    const live = this.#live.get(runState);
    if (!live) return undefined;
    this.#live.delete(runState);
    return historyHolds(history, live.prefix.history, live.prefix.p) ? live : undefined;
  }

  #keepLive(runState: string, live: LiveRunState, sessionInputSaved: boolean): void {
    if (this.#liveLimit === 0) return;
    // The SDK's snapshot of the turn's input for session persistence (the whole history, normalized)
    // is left out of the saved string unless a blocked output needs it, so a decoded state has none.
    // The live state drops it too: a resume then does what it does on a decoded state (the adapter
    // passes the SDK no session, so nothing reads it) instead of cloning the history twice.
    if (!sessionInputSaved) live.state._currentTurnSessionHistoryTransactionInputItems = undefined;
    // An equal string saved before (another session, a repeated step) serializes the same state.
    this.#live.delete(runState);
    this.#live.set(runState, live);
    for (const key of this.#live.keys()) {
      if (this.#live.size <= this.#liveLimit) break;
      this.#live.delete(key);
    }
  }

  #recordedOutput(name: string, callId: string | undefined): string {
    const outcome = callId === undefined ? undefined : this.#outcomes.getStore()?.get(callId);
    if (!outcome) {
      // Never run the real tool from inside the model step.
      throw new ContractViolationError(
        "runner",
        `the gated copy of tool "${name}" was invoked for call "${callId ?? "?"}" without a recorded outcome`,
      );
    }
    return outcome.text;
  }
}

function describeTool(entry: GraphTool): ToolDescription {
  const info = durableToolInfo(entry.tool);
  const approval = info?.approval ?? "per_call";
  return { name: entry.name, approval, ...(info?.effect ? { defaultEffect: info.effect } : {}) };
}

function callIdOf(item: RunToolApprovalItem): string | undefined {
  const raw = item.rawItem as { callId?: string; id?: string };
  return raw.callId ?? raw.id;
}

function describeInvalid(error: unknown): string {
  const issues = (error as { issues?: unknown })?.issues;
  if (Array.isArray(issues) && issues.length > 0) {
    return issues
      .map((issue: { path?: unknown[]; message?: string }) => {
        const path = Array.isArray(issue.path) && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
        return `${path}${issue.message ?? "invalid"}`;
      })
      .join("; ");
  }
  if (error instanceof SyntaxError) return `not valid JSON (${error.message})`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * The tool's own `needsApproval`, evaluated as the SDK evaluates it for a run: on the
 * schema-normalized input when the arguments validate, forced for a per-call policy whose input
 * cannot be inspected, and never asked for arguments that are not JSON with a fixed policy.
 */
async function frameworkApproval(
  tool: FunctionTool<any, any, any>,
  args: string,
  runContext: RunContext<any>,
  callId: string,
): Promise<boolean> {
  const dynamic = hasDynamicFunctionToolApprovalPolicy(tool);
  let approvalArgs: unknown = args;
  let prepared: FunctionToolPreparedInput | undefined;
  try {
    if (tool.parameters) approvalArgs = JSON.parse(args);
    prepared = prepareFunctionToolInput(tool, args);
  } catch {
    return dynamic;
  }
  if (prepared?.result.success) {
    if (dynamic) approvalArgs = getFunctionToolApprovalInput(prepared.result.value);
    else if (prepared.validationMode === "standard") approvalArgs = prepared.result.value;
  }
  if (dynamic && prepared?.result.success && !hasInspectableFunctionToolArguments(approvalArgs)) return true;
  return Boolean(await tool.needsApproval(runContext, approvalArgs, callId));
}

async function drain(result: StreamedRunResult<any, Agent<any, any>>, emit: RunModelInput["emit"]): Promise<void> {
  for await (const event of result) {
    if (event.type !== "raw_model_stream_event") continue;
    const data = event.data as { type?: string; delta?: unknown; event?: unknown };
    if (data.type === "output_text_delta" && typeof data.delta === "string" && data.delta.length > 0) {
      emit({ kind: "text", text: data.delta });
    } else if (data.type === "model") {
      const reasoning = reasoningDelta(data.event);
      if (reasoning) emit({ kind: "reasoning", text: reasoning });
    }
  }
  await result.completed;
  if (result.error) throw result.error;
}

/** Reasoning text of a raw provider event (Responses API summary/text deltas, Chat Completions `reasoning`). */
function reasoningDelta(event: unknown): string | undefined {
  if (!event || typeof event !== "object") return undefined;
  const e = event as { type?: unknown; delta?: unknown; choices?: { delta?: { reasoning?: unknown } }[] };
  if (
    typeof e.type === "string" &&
    /^response\.reasoning(_summary)?_text\.delta$/.test(e.type) &&
    typeof e.delta === "string"
  ) {
    return e.delta || undefined;
  }
  const chat = e.choices?.[0]?.delta?.reasoning;
  return typeof chat === "string" && chat.length > 0 ? chat : undefined;
}

function stepUsage(responses: readonly ModelResponse[]): Usage {
  const usage: Usage = { modelCalls: responses.length, inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  for (const response of responses) {
    usage.inputTokens += response.usage?.inputTokens ?? 0;
    usage.outputTokens += response.usage?.outputTokens ?? 0;
    usage.totalTokens += response.usage?.totalTokens ?? 0;
  }
  return usage;
}

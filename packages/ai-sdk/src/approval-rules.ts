/**
 * The AI SDK's own approval settings, read as core's "needs approval": the `toolApproval`
 * configuration of `streamText` (which takes precedence, as in the SDK) and a tool's own
 * `needsApproval` flag or function.
 *
 * The engine asks a person whenever the framework says so. It cannot deny a call by itself, so an
 * SDK status of `denied` also becomes "a person decides"; `approved` and `not-applicable` need no one.
 */
import type { ModelMessage, Tool, ToolApprovalConfiguration, ToolApprovalStatus, ToolSet } from "ai";

export type AiSdkToolApproval = ToolApprovalConfiguration<ToolSet, any>;

type ApprovalFunction = (...args: unknown[]) => unknown;

const statusNeedsPerson = (status: unknown): boolean => {
  const type = typeof status === "object" && status !== null ? (status as { type?: unknown }).type : status;
  return type === "user-approval" || type === "denied";
};

export interface ApprovalCall {
  readonly name: string;
  readonly toolCallId: string;
  /** The validated input. */
  readonly input: unknown;
  readonly messages: ModelMessage[];
}

export class ApprovalRules {
  constructor(
    private readonly tools: ReadonlyMap<string, Tool>,
    private readonly toolApproval: AiSdkToolApproval | undefined,
    private readonly toolsContext: Readonly<Record<string, unknown>> | undefined,
    private readonly runtimeContext: unknown,
  ) {}

  /** What the framework says about a tool before any call: always, never, or decided per call. */
  mode(name: string): "always" | "per_call" | "never" {
    if (typeof this.toolApproval === "function") return "per_call";
    const configured = this.#configured(name);
    if (configured !== undefined) {
      return typeof configured === "function" ? "per_call" : statusNeedsPerson(configured) ? "always" : "never";
    }
    const flag = this.tools.get(name)?.needsApproval;
    return typeof flag === "function" ? "per_call" : flag === true ? "always" : "never";
  }

  /** Whether this call needs a person, evaluating the SDK's approval functions on its input. */
  async needsApproval(call: ApprovalCall): Promise<boolean> {
    const mode = this.mode(call.name);
    if (mode !== "per_call") return mode === "always";
    const config = this.toolApproval;
    const context = this.toolsContext?.[call.name];
    if (typeof config === "function") {
      const status = await (config as ApprovalFunction)({
        toolCall: { type: "tool-call", toolCallId: call.toolCallId, toolName: call.name, input: call.input },
        tools: Object.fromEntries(this.tools),
        toolsContext: this.toolsContext ?? {},
        runtimeContext: this.runtimeContext,
        messages: call.messages,
      });
      return statusNeedsPerson(status);
    }
    const configured = this.#configured(call.name);
    if (typeof configured === "function") {
      const status = await (configured as ApprovalFunction)(call.input, {
        toolCallId: call.toolCallId,
        messages: call.messages,
        toolContext: context,
        runtimeContext: this.runtimeContext,
      });
      return statusNeedsPerson(status);
    }
    const flag = this.tools.get(call.name)?.needsApproval as ApprovalFunction;
    return (await flag(call.input, { toolCallId: call.toolCallId, messages: call.messages, context })) === true;
  }

  #configured(name: string): ToolApprovalStatus | ApprovalFunction | undefined {
    const config = this.toolApproval;
    if (typeof config !== "object" || config === null || !Object.hasOwn(config, name)) return undefined;
    return (config as Record<string, ToolApprovalStatus | ApprovalFunction | undefined>)[name] ?? undefined;
  }
}

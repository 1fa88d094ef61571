/**
 * `durableTool`: the SDK's `tool()` with `errorFunction: null`, so that every error the tool throws
 * reaches the session engine (which retries it per the policy table) instead of becoming the SDK's
 * fixed "An error occurred while running the tool" text. It also records what the runner cannot
 * read back from a built tool: its approval setting and the effect it declares about itself.
 */
import { tool, type FunctionTool, type ToolInputParameters, type ToolOptions } from "@openai/agents";
import { PolicyError, type ToolEffect, toolEffects } from "@durable-agents/core";

const marker = Symbol.for("durable-agents.openai-agents.durable-tool");

export interface DurableToolInfo {
  /** How the tool's own `needsApproval` was given. */
  readonly approval: "always" | "per_call" | "never";
  readonly effect?: ToolEffect;
}

export type DurableToolOptions<TParameters extends ToolInputParameters, Context> = ToolOptions<TParameters, Context> & {
  /** The effect the tool declares about itself; a policy for this tool overrides it. */
  readonly effect?: ToolEffect;
};

export function durableTool<TParameters extends ToolInputParameters = undefined, Context = unknown, Result = string>(
  options: DurableToolOptions<TParameters, Context>,
): FunctionTool<Context, TParameters, Result> {
  const { effect, ...rest } = options as DurableToolOptions<TParameters, Context> & { errorFunction?: unknown };
  if (rest.errorFunction !== undefined && rest.errorFunction !== null) {
    throw new PolicyError(
      `durableTool "${String(rest.name ?? "")}" was given an errorFunction: a durable tool's errors must reach the engine; throw ToolExecutionError for a failure the model should see`,
    );
  }
  if (effect !== undefined && !(toolEffects as readonly string[]).includes(effect)) {
    throw new PolicyError(`durableTool "${String(rest.name ?? "")}" declares an unknown effect "${String(effect)}"`);
  }
  const built = tool({ ...(rest as ToolOptions<TParameters, Context>), errorFunction: null } as ToolOptions<
    TParameters,
    Context
  >);
  const needsApproval = (rest as { needsApproval?: unknown }).needsApproval;
  const info: DurableToolInfo = {
    approval: typeof needsApproval === "function" ? "per_call" : needsApproval === true ? "always" : "never",
    ...(effect ? { effect } : {}),
  };
  Object.defineProperty(built, marker, { value: info, enumerable: true, configurable: true });
  return built as unknown as FunctionTool<Context, TParameters, Result>;
}

/** What `durableTool` recorded about a tool, or undefined for a tool it did not build. */
export function durableToolInfo(value: unknown): DurableToolInfo | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  return (value as Record<symbol, DurableToolInfo | undefined>)[marker];
}

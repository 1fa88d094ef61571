/**
 * A session definition: an agent's runner plus its tool policies and the engine's knobs. Built once
 * per process; every process that runs or starts sessions of this agent builds the same one.
 */
import { InvalidInputError, PolicyError } from "./errors.js";
import { validatePolicies, type ToolDescription, type ToolPolicies } from "./policy.js";
import type { Runner } from "./runner.js";

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly maxAttempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly factor: number;
}

/** Backoff between tool attempts (the number of attempts comes from the policy table). */
export type BackoffPolicy = Omit<RetryPolicy, "maxAttempts">;

export interface SessionDefinitionOptions {
  /** The agent name sessions are started with; also what a worker serves. */
  readonly name: string;
  readonly runner: Runner;
  readonly policies?: ToolPolicies;
  readonly modelRetry?: Partial<RetryPolicy>;
  readonly toolBackoff?: Partial<BackoffPolicy>;
  /** RunModel steps one turn may take before it fails (guards against a model that never stops). */
  readonly maxModelSteps?: number;
}

export interface SessionDefinition {
  readonly name: string;
  readonly runner: Runner;
  readonly tools: readonly ToolDescription[];
  readonly policies: ToolPolicies;
  readonly modelRetry: RetryPolicy;
  readonly toolBackoff: BackoffPolicy;
  readonly maxModelSteps: number;
}

export const defaultModelRetry: RetryPolicy = { maxAttempts: 3, initialDelayMs: 250, maxDelayMs: 10_000, factor: 2 };
export const defaultToolBackoff: BackoffPolicy = { initialDelayMs: 250, maxDelayMs: 10_000, factor: 2 };

/** Validates the policies against the runner's tools (a typo is a `PolicyError`) and fills defaults. */
export function defineSession(options: SessionDefinitionOptions): SessionDefinition {
  if (typeof options.name !== "string" || !/^[A-Za-z0-9._-]{1,100}$/.test(options.name)) {
    throw new InvalidInputError("a session definition needs a name of 1-100 letters, digits, '.', '_' or '-'");
  }
  const tools = options.runner.tools();
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name)) throw new PolicyError(`two tools of the agent are named "${tool.name}"`);
    seen.add(tool.name);
  }
  const policies = validatePolicies(tools, options.policies);
  options.runner.validatePolicies?.(policies);
  const modelRetry = { ...defaultModelRetry, ...options.modelRetry };
  if (!Number.isInteger(modelRetry.maxAttempts) || modelRetry.maxAttempts < 1) {
    throw new InvalidInputError("modelRetry.maxAttempts must be a positive integer");
  }
  return {
    name: options.name,
    runner: options.runner,
    tools,
    policies,
    modelRetry,
    toolBackoff: { ...defaultToolBackoff, ...options.toolBackoff },
    maxModelSteps: options.maxModelSteps ?? 50,
  };
}

/** The delay before attempt `attempt + 1`, after `attempt` attempts failed. */
export function backoffDelay(policy: BackoffPolicy, attempt: number): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** Math.max(0, attempt - 1));
}

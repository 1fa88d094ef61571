/**
 * A session definition: an agent's runner plus its tool policies and the engine's knobs. Built once
 * per process; every process that runs or starts sessions of this agent builds the same one.
 */
import { ConfigurationError, PolicyError } from "./errors.js";
import { validatePolicies, type ToolDescription, type ToolPolicies } from "./policy.js";
import type { MachineConfig } from "./machine.js";
import { defaultModelRetry, defaultToolBackoff, type BackoffPolicy, type RetryPolicy } from "./retry.js";
import type { Runner } from "./runner.js";

export { backoffDelay, defaultModelRetry, defaultToolBackoff, type BackoffPolicy, type RetryPolicy } from "./retry.js";

export interface SessionDefinitionOptions {
  /** The agent name sessions are started with; also what a worker serves. */
  readonly name: string;
  readonly runner: Runner;
  readonly policies?: ToolPolicies;
  readonly modelRetry?: Partial<RetryPolicy>;
  readonly toolBackoff?: Partial<BackoffPolicy>;
  /** RunModel steps one turn may take before it fails (guards against a model that never stops). */
  readonly maxModelSteps?: number;
  /**
   * How long a cancelled turn waits for its calls in flight (ms, default 10,000): a call that has not
   * returned by then ends `outcome_unknown` (single-attempt) or `cancelled` (read, idempotent write).
   */
  readonly cancelGraceMs?: number;
}

export interface SessionDefinition {
  readonly name: string;
  readonly runner: Runner;
  /**
   * The runner's tools as it lists them now (`runner.tools()` on every read): a runner whose tools
   * can change while it serves (MCP servers announce new tool lists) reports the new list here.
   */
  readonly tools: readonly ToolDescription[];
  readonly policies: ToolPolicies;
  readonly modelRetry: RetryPolicy;
  readonly toolBackoff: BackoffPolicy;
  readonly maxModelSteps: number;
  readonly cancelGraceMs: number;
}

/** Validates the policies against the runner's tools (a typo is a `PolicyError`) and fills defaults. */
export function defineSession(options: SessionDefinitionOptions): SessionDefinition {
  if (typeof options.name !== "string" || !/^[A-Za-z0-9._-]{1,100}$/.test(options.name)) {
    throw new ConfigurationError("a session definition needs a name of 1-100 letters, digits, '.', '_' or '-'");
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
    throw new ConfigurationError("modelRetry.maxAttempts must be a positive integer");
  }
  const cancelGraceMs = options.cancelGraceMs ?? 10_000;
  if (!Number.isFinite(cancelGraceMs) || cancelGraceMs < 0) {
    throw new ConfigurationError("cancelGraceMs must be a non-negative number of milliseconds");
  }
  const runner = options.runner;
  return {
    name: options.name,
    runner,
    get tools() {
      return runner.tools();
    },
    policies,
    modelRetry,
    toolBackoff: { ...defaultToolBackoff, ...options.toolBackoff },
    maxModelSteps: options.maxModelSteps ?? 50,
    cancelGraceMs,
  };
}

/** The rules the state machine applies to this definition's sessions: limits, retries, backoff, policies. */
export function machineConfig(definition: SessionDefinition): MachineConfig {
  return {
    maxModelSteps: definition.maxModelSteps,
    modelRetry: definition.modelRetry,
    toolBackoff: definition.toolBackoff,
    // Read on every use, so a tool list that changes (MCP) reaches the machine's next transition.
    get tools() {
      return definition.tools;
    },
    policies: definition.policies,
    cancelGraceMs: definition.cancelGraceMs ?? 10_000,
    failureNote: (text) => definition.runner.userItem("turn_failure_note", text),
  };
}

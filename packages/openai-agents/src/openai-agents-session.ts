/** `openAIAgentsSession`: a core session definition for an `@openai/agents` agent. */
import type { Agent } from "@openai/agents";
import {
  defineSession,
  type BackoffPolicy,
  type DefinitionMigration,
  type RetryPolicy,
  type SessionDefinition,
  type ToolPolicies,
} from "@durable-agents/core";
import { OpenAIAgentsRunner, type OpenAIAgentsRunnerOptions } from "./openai-agents-runner.js";

export interface OpenAIAgentsSessionOptions extends OpenAIAgentsRunnerOptions {
  /** The agent name sessions are started with (1-100 letters, digits, '.', '_' or '-'). */
  readonly name: string;
  /** Tool-effect policies keyed by tool name; every name must be a function tool of the agent graph. */
  readonly policies?: ToolPolicies;
  readonly modelRetry?: Partial<RetryPolicy>;
  readonly toolBackoff?: Partial<BackoffPolicy>;
  /** RunModel steps one turn may take before it fails. */
  readonly maxModelSteps?: number;
  /** How long a cancelled turn waits for its calls in flight (ms, core's default 10,000). */
  readonly cancelGraceMs?: number;
  /** How sessions pinned to earlier definitions (by fingerprint) move to this one (core's `defineSession`). */
  readonly migrations?: readonly DefinitionMigration[];
}

export function openAIAgentsSession(agent: Agent<any, any>, options: OpenAIAgentsSessionOptions): SessionDefinition {
  const { name, policies, modelRetry, toolBackoff, maxModelSteps, cancelGraceMs, migrations, ...runnerOptions } =
    options;
  const runner = new OpenAIAgentsRunner(agent, runnerOptions);
  return defineSession({
    name,
    runner,
    ...(policies !== undefined ? { policies } : {}),
    ...(modelRetry !== undefined ? { modelRetry } : {}),
    ...(toolBackoff !== undefined ? { toolBackoff } : {}),
    ...(maxModelSteps !== undefined ? { maxModelSteps } : {}),
    ...(cancelGraceMs !== undefined ? { cancelGraceMs } : {}),
    ...(migrations !== undefined ? { migrations } : {}),
  });
}

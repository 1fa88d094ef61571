/** Turns an AI SDK model, instructions and tool set into a durable session definition. */
import { defineSession, type SessionDefinition, type SessionDefinitionOptions } from "@durable-agents/core";
import { AiSdkRunner, type AiSdkRunnerOptions } from "./ai-sdk-runner.js";

export interface AiSdkSessionOptions
  extends AiSdkRunnerOptions,
    Pick<
      SessionDefinitionOptions,
      "policies" | "modelRetry" | "toolBackoff" | "maxModelSteps" | "cancelGraceMs" | "migrations"
    > {
  /** The agent name sessions are started with (1-100 letters, digits, '.', '_' or '-'). */
  readonly name: string;
}

/**
 * Builds the runner and the session definition. Policies are checked against the tool set here: a
 * policy that names no tool is a `PolicyError`, and so is a tool without `execute`.
 */
export function aiSdkSession(options: AiSdkSessionOptions): SessionDefinition {
  const { name, policies, modelRetry, toolBackoff, maxModelSteps, cancelGraceMs, migrations, ...runnerOptions } =
    options;
  return defineSession({
    name,
    runner: new AiSdkRunner(runnerOptions),
    policies,
    modelRetry,
    toolBackoff,
    maxModelSteps,
    cancelGraceMs,
    migrations,
  });
}

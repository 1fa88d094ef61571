/**
 * `conformanceRunner`: the runner core's conformance suites run, built from their tool specs, with
 * a deterministic model that follows core's scripted rules.
 */
import { Agent } from "@openai/agents";
import { z } from "zod";
import type { ConformanceTool } from "@durable-agents/core/testing";
import type { McpToolset } from "@durable-agents/mcp";
import { durableTool } from "../durable-tool.js";
import { OpenAIAgentsRunner } from "../openai-agents-runner.js";
import { ScriptedModel, type ScriptedModelOptions } from "./scripted-model.js";

export interface ConformanceRunnerOptions extends ScriptedModelOptions {
  /** The model to use; default a new `ScriptedModel` with these options. */
  readonly model?: ScriptedModel;
  /** MCP tools for the agent besides `tools` (core's session suite run with its tools on an MCP server). */
  readonly mcp?: McpToolset;
}

export function conformanceRunner(
  tools: readonly ConformanceTool[],
  options: ConformanceRunnerOptions = {},
): { runner: OpenAIAgentsRunner; model: ScriptedModel; agent: Agent } {
  const model = options.model ?? new ScriptedModel(options);
  const agent = new Agent({
    name: "conformance",
    instructions: "Follow the script in the user's message.",
    tools: tools.map((spec) => {
      const shape: Record<string, z.ZodType> = {};
      for (const [key, type] of Object.entries(spec.parameters))
        shape[key] = type === "number" ? z.number() : z.string();
      return durableTool({
        name: spec.name,
        description: spec.description,
        parameters: z.object(shape),
        needsApproval: spec.needsApproval ?? false,
        execute: async (args: Record<string, unknown>) => spec.execute(args),
      });
    }),
  });
  const runner = new OpenAIAgentsRunner(agent, { model, ...(options.mcp ? { mcp: options.mcp } : {}) });
  return { runner, model, agent };
}

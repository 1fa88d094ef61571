/** The runner the conformance suites drive: conformance tools as AI SDK tools, and the scripted model. */
import type { ConformanceTool } from "@durable-agents/core/testing";
import type { McpToolset } from "@durable-agents/mcp";
import { tool, type ToolSet } from "ai";
import { z } from "zod";
import { AiSdkRunner } from "../ai-sdk-runner.js";
import { ScriptedLanguageModel, type ScriptedLanguageModelOptions } from "./scripted-language-model.js";

/** An AI SDK tool for one conformance tool: a zod object of the declared types, the spec's body and approval flag. */
function toAiSdkTool(spec: ConformanceTool): ToolSet[string] {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, type] of Object.entries(spec.parameters)) shape[key] = type === "number" ? z.number() : z.string();
  return tool({
    description: spec.description,
    inputSchema: z.object(shape),
    execute: async (args: Record<string, unknown>) => await spec.execute(args),
    ...(spec.needsApproval === undefined ? {} : { needsApproval: spec.needsApproval }),
  }) as ToolSet[string];
}

export interface ConformanceRunnerOptions extends ScriptedLanguageModelOptions {
  /** MCP tools for the agent besides `tools` (core's session suite run with its tools on an MCP server). */
  readonly mcp?: McpToolset;
}

export function conformanceRunner(
  tools: readonly ConformanceTool[],
  options: ConformanceRunnerOptions = {},
): { runner: AiSdkRunner; model: ScriptedLanguageModel } {
  const { mcp, ...modelOptions } = options;
  const model = new ScriptedLanguageModel(modelOptions);
  const toolSet: ToolSet = {};
  for (const spec of tools) toolSet[spec.name] = toAiSdkTool(spec);
  const runner = new AiSdkRunner({
    model,
    instructions: "You are the conformance test agent.",
    tools: toolSet,
    ...(mcp ? { mcp } : {}),
  });
  return { runner, model };
}

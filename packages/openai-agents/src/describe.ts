/**
 * The runner's `describe()`: the agent graph as plain JSON, which core hashes into the fingerprint a
 * session is pinned to. It holds what resuming a session on another definition could break: each
 * agent's name, model, instructions, tools with their argument schemas, handoffs (with their own
 * tool names and input schemas), and this package's version.
 */
import { createRequire } from "node:module";
import { Handoff, type Agent, type Model, type Tool } from "@openai/agents";
import type { AgentDescription, RunnerDescription } from "@durable-agents/core";
import type { AgentGraph } from "./agent-graph.js";

const packageJson = createRequire(import.meta.url)("../package.json") as { name: string; version: string };

/** A model as a name: the string itself, else the model object's own name if it has one, else its class. */
export function modelName(model: Model | string | undefined): string | null {
  if (model === undefined) return null;
  if (typeof model === "string") return model;
  const own = model as { model?: unknown; modelId?: unknown; name?: unknown };
  for (const name of [own.model, own.modelId, own.name]) if (typeof name === "string" && name.length > 0) return name;
  return `(model object: ${model.constructor?.name ?? "unnamed"})`;
}

function toolOf(tool: Tool<any>): AgentDescription["tools"][number] {
  switch (tool.type) {
    case "function":
      return { name: tool.name, type: "function", parameters: tool.parameters, strict: tool.strict };
    case "hosted_tool":
      return { name: tool.name, type: "hosted_tool", parameters: null };
    default:
      return { name: tool.name, type: tool.type, parameters: null };
  }
}

function agentOf(agent: Agent<any, any>, runnerModel: Model | string | undefined): AgentDescription {
  const instructions = agent.instructions;
  return {
    name: agent.name,
    // The runner's model, when given, is the one every agent calls.
    model: modelName(runnerModel ?? agent.model) ?? null,
    instructions:
      typeof instructions === "string"
        ? instructions
        : `(dynamic instructions: function ${instructions.name || "anonymous"})`,
    tools: agent.tools.map(toolOf),
    handoffs: agent.handoffs.map((entry) => (entry instanceof Handoff ? entry.agentName : (entry as Agent).name)),
    handoffTools: agent.handoffs.map((entry) =>
      entry instanceof Handoff
        ? { name: entry.toolName, agent: entry.agentName, parameters: entry.inputJsonSchema }
        : { name: null, agent: (entry as Agent).name, parameters: null },
    ),
    output: agent.outputType === "text" ? "text" : "structured",
  };
}

/** The graph as core's `RunnerDescription`: the entry agent first, then every agent reachable by handoffs. */
export function describeGraph(graph: AgentGraph, runnerModel: Model | string | undefined): RunnerDescription {
  return {
    adapter: { name: packageJson.name, version: packageJson.version },
    agents: graph.agents.map((agent) => agentOf(agent, runnerModel)),
  };
}

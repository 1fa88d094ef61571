/**
 * The agent graph (an agent and every handoff target, transitively): what it holds, what the runner
 * refuses, and the gated copy the runner runs the model with.
 */
import { Agent, Handoff, type FunctionTool, type Tool } from "@openai/agents";
import { PolicyError } from "@durable-agents/core";
import { durableToolInfo } from "./durable-tool.js";

export interface GraphTool {
  readonly name: string;
  /** The application's tool: run for real in `callTool`. */
  readonly tool: FunctionTool<any, any, any>;
  /** The first agent of the graph that holds the tool (its guardrails receive this agent). */
  readonly owner: Agent<any, any>;
  /** `agent`: built by `Agent.asTool()`; its nested run happens inside the call's step. */
  readonly kind: "function" | "agent";
}

export interface AgentGraph {
  readonly agents: readonly Agent<any, any>[];
  readonly tools: ReadonlyMap<string, GraphTool>;
  /** Why the graph holds tools the SDK runs itself (empty when it holds none). */
  readonly atLeastOnce: readonly string[];
}

/** A tool built by `Agent.asTool()` (it carries the `on` event registration method). */
export function isAgentTool(tool: Tool<any>): boolean {
  return tool.type === "function" && typeof (tool as { on?: unknown }).on === "function";
}

function handoffTarget(entry: Agent<any, any> | Handoff<any, any>): Agent<any, any> {
  return entry instanceof Handoff ? entry.agent : (entry as Agent<any, any>);
}

/** Reads the graph; throws `PolicyError` for what cannot run as a durable session. */
export function readAgentGraph(entry: Agent<any, any>): AgentGraph {
  if (!(entry instanceof Agent)) throw new PolicyError("the runner needs an Agent from @openai/agents");
  const agents: Agent<any, any>[] = [];
  const seen = new Set<Agent<any, any>>();
  const queue: Agent<any, any>[] = [entry];
  while (queue.length > 0) {
    const agent = queue.shift()!;
    if (seen.has(agent)) continue;
    seen.add(agent);
    agents.push(agent);
    for (const target of agent.handoffs ?? []) {
      if (!(target instanceof Agent) && !(target instanceof Handoff)) {
        throw new PolicyError(
          `a handoff of agent "${agent.name}" is neither an Agent nor a Handoff made with handoff(agent)`,
        );
      }
      queue.push(handoffTarget(target));
    }
  }
  const names = new Map<string, Agent<any, any>>();
  for (const agent of agents) {
    const previous = names.get(agent.name);
    if (previous && previous !== agent) {
      throw new PolicyError(
        `two agents of the graph are named "${agent.name}": a saved run state names its current agent, so names must be unique`,
      );
    }
    names.set(agent.name, agent);
  }

  const tools = new Map<string, GraphTool>();
  const atLeastOnce: string[] = [];
  for (const agent of agents) {
    if ((agent.mcpServers ?? []).length > 0) {
      atLeastOnce.push(
        `agent "${agent.name}" has MCP servers (${agent.mcpServers.map((s) => s.name).join(", ")}) (to give each of their calls a durable step, connect them with McpToolset from @durable-agents/mcp and pass it as the runner's mcp option)`,
      );
    }
    if (agent.getAllTools !== Agent.prototype.getAllTools) {
      atLeastOnce.push(`agent "${agent.name}" overrides getAllTools, so its tools cannot be gated`);
    }
    for (const tool of agent.tools ?? []) {
      switch (tool.type) {
        case "function": {
          const previous = tools.get(tool.name);
          if (previous) {
            if (previous.tool === tool) continue;
            throw new PolicyError(
              `two tools of the agent graph are named "${tool.name}" (agents "${previous.owner.name}" and "${agent.name}"): a tool call step finds its tool by name`,
            );
          }
          const kind = isAgentTool(tool) ? "agent" : "function";
          if (kind === "function") checkErrorsPropagate(tool);
          tools.set(tool.name, { name: tool.name, tool, owner: agent, kind });
          break;
        }
        case "hosted_tool":
          break; // runs inside the model call at the provider
        case "shell":
          if ((tool as { shell?: unknown }).shell !== undefined) {
            atLeastOnce.push(`agent "${agent.name}" has the local shell tool "${tool.name}"`);
          }
          break;
        case "computer":
          atLeastOnce.push(`agent "${agent.name}" has the computer tool "${tool.name}"`);
          break;
        case "apply_patch":
          atLeastOnce.push(`agent "${agent.name}" has the apply-patch tool "${tool.name}"`);
          break;
        default:
          throw new PolicyError(
            `agent "${agent.name}" has a tool of unknown type "${String((tool as { type?: unknown }).type)}"`,
          );
      }
    }
  }
  return { agents, tools, atLeastOnce };
}

/**
 * A tool built with the SDK's `tool()` keeps its error handler in a closure. Unless it was built
 * with `durableTool()` (or has an output schema and no error function, which the SDK exposes), a
 * thrown error would become text and never reach the policy table.
 */
function checkErrorsPropagate(tool: FunctionTool<any, any, any>): void {
  if (durableToolInfo(tool)) return;
  if (Object.hasOwn(tool, "errorFunction")) {
    if (tool.errorFunction === null) return;
    throw new PolicyError(
      `tool "${tool.name}" has an errorFunction, which turns its errors into text the engine never sees; build it with durableTool() from @durable-agents/openai-agents (or errorFunction: null) and throw ToolExecutionError for a failure the model should see`,
    );
  }
  throw new PolicyError(
    `tool "${tool.name}" was not built with durableTool(): the SDK's tool() turns every error into a fixed text, hiding failures from the policy table; build it with durableTool() from @durable-agents/openai-agents (same options as tool())`,
  );
}

export interface GateHooks {
  /** Called by a gated copy's `invoke` on resume: the recorded outcome text for this call. */
  readonly recordedOutput: (toolName: string, callId: string | undefined) => string;
}

const OUTPUT_VALIDATOR_DESCRIPTION = "openai.agents.functionToolOutputValidator";

/** Copies one function tool so that it always stops the run for approval and never runs the real tool. */
function gateTool(tool: FunctionTool<any, any, any>, hooks: GateHooks): FunctionTool<any, any, any> {
  const copy: FunctionTool<any, any, any> = {
    ...tool,
    needsApproval: async () => true,
    invoke: async (_context, _input, details) => hooks.recordedOutput(tool.name, details?.toolCall?.callId),
    // A recorded failure reaches the model as text, also for a tool with an output schema.
    errorFunction: (_context, error) => (error instanceof Error ? error.message : String(error)),
    // Input guardrails run in the tool call step, before the real tool.
    inputGuardrails: [],
  };
  for (const symbol of Object.getOwnPropertySymbols(copy)) {
    // The recorded text is handed back as is; the real tool's output was checked when it ran.
    if (symbol.description === OUTPUT_VALIDATOR_DESCRIPTION)
      delete (copy as unknown as Record<symbol, unknown>)[symbol];
  }
  return copy;
}

/** Copies the graph once: same agents and handoffs, every function tool gated. */
export function gateAgentGraph(graph: AgentGraph, hooks: GateHooks): Agent<any, any> {
  const copies = new Map<Agent<any, any>, Agent<any, any>>();
  for (const agent of graph.agents) {
    const tools = agent.tools.map((tool) => (tool.type === "function" ? gateTool(tool, hooks) : tool));
    copies.set(agent, agent.clone({ tools, handoffs: [] }));
  }
  for (const agent of graph.agents) {
    const copy = copies.get(agent)!;
    copy.handoffs = agent.handoffs.map((entry) =>
      entry instanceof Handoff
        ? entry.clone({ agent: copies.get(entry.agent)! })
        : copies.get(entry as Agent<any, any>)!,
    );
  }
  return copies.get(graph.agents[0]!)!;
}

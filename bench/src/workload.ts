/**
 * The scripted workload every phase runs: one agent with one real tool, and user messages that are
 * scripts for the deterministic model (`call <tool> <args>` lines, `then` between model responses).
 *
 * A STEP is one model call or one tool call. A turn with `toolCalls` calls asks for them one per
 * model response, so it makes `toolCalls + 1` model calls and `toolCalls` tool calls.
 */
import { createHash } from "node:crypto";
import { Agent, tool } from "@openai/agents";
import { z } from "zod";
import { durableTool, openAIAgentsSession } from "@durable-agents/openai-agents";
import type { SessionDefinition } from "@durable-agents/core";
import type { StepClock } from "./step-clock.js";
import { TimedModel } from "./timed-model.js";

export const AGENT_NAME = "bench";
export const TOOL_NAME = "look_up";

export interface WorkloadSize {
  /** Sessions measured, one after the other. */
  readonly sessions: number;
  /** Turns per session. */
  readonly turns: number;
  /** Tool calls per turn (each in its own model response). */
  readonly toolCalls: number;
  /** Sessions run first and not measured (JIT, connections, prepared statements). */
  readonly warmupSessions: number;
}

export const stepsPerTurn = (toolCalls: number): number => 2 * toolCalls + 1;

/** The message of one measured turn; the keys make every turn's final answer unique. */
export function turnScript(sessionKey: string, turn: number, toolCalls: number): string {
  const blocks: string[] = [];
  for (let c = 1; c <= toolCalls; c++) blocks.push(`call ${TOOL_NAME} {"key":"${sessionKey}-t${turn}-c${c}"}`);
  return blocks.join("\nthen\n");
}

/**
 * A message whose turn leaves exactly `items` history items (user message, `k` calls in one
 * response, their `k` results, the answer: 2k + 2 items). `items` must be even and at least 4.
 */
export function seedScript(sessionKey: string, items: number): string {
  if (items < 4 || items % 2 !== 0)
    throw new Error(`a seed turn makes an even number of items, at least 4 (asked ${items})`);
  const calls = (items - 2) / 2;
  const lines: string[] = [];
  for (let c = 1; c <= calls; c++) lines.push(`call ${TOOL_NAME} {"key":"${sessionKey}-seed-${c}"}`);
  return lines.join("\n");
}

/** The tool's real work: a hash of its key (cheap, deterministic, and not optimised away). */
export function lookUp(key: string): string {
  return `record ${key}: ${createHash("sha256").update(key).digest("hex").slice(0, 16)}`;
}

/**
 * The agent. The raw SDK baseline gets the tool from the SDK's own `tool()`; a durable session needs
 * `durableTool()` (the same `tool()` with errors passed on to the engine), with the same body.
 */
export function makeAgent(clock: StepClock, durable: boolean): Agent {
  const options = {
    name: TOOL_NAME,
    description: "Look up a record by its key.",
    parameters: z.object({ key: z.string() }),
    execute: ({ key }: { key: string }) => {
      const output = lookUp(key);
      clock.mark();
      return output;
    },
  };
  const lookUpTool = durable ? durableTool(options) : tool(options);
  return new Agent({ name: AGENT_NAME, instructions: "Look records up when asked.", tools: [lookUpTool] });
}

/** The same agent and model as a durable session definition. */
export function makeDefinition(
  clock: StepClock,
  stream: { chunks?: number; paceMs?: number } = {},
): { definition: SessionDefinition; model: TimedModel } {
  const model = new TimedModel(clock, stream.chunks ?? 3, stream.paceMs ?? 0);
  const definition = openAIAgentsSession(makeAgent(clock, true), {
    name: AGENT_NAME,
    model,
    policies: { [TOOL_NAME]: { effect: "read" } },
  });
  return { definition, model };
}

import { z } from "zod";
import { Agent } from "@openai/agents";
import { ToolExecutionError, currentToolCall } from "@durable-agents/core";
import { durableTool, OpenAIAgentsRunner, type OpenAIAgentsRunnerOptions } from "../src/index.js";
import { ScriptedModel, type ScriptedModelOptions } from "../src/testing/index.js";

/** An agent with a few real tools that record every run. */
export function orderAgent(modelOptions: ScriptedModelOptions = {}, runnerOptions: OpenAIAgentsRunnerOptions = {}) {
  const runs: { name: string; args: unknown; key: string | undefined }[] = [];
  const record = (name: string, args: unknown) => runs.push({ name, args, key: currentToolCall()?.idempotencyKey });
  const lookUp = durableTool({
    name: "look_up",
    description: "Look an order up.",
    parameters: z.object({ id: z.string() }),
    effect: "read",
    execute: ({ id }) => {
      record("look_up", { id });
      return `order ${id} is shipped`;
    },
  });
  const refund = durableTool({
    name: "refund",
    description: "Refund an order.",
    parameters: z.object({ id: z.string(), amount: z.number() }),
    needsApproval: async (_context, input) => (input as { amount: number }).amount > 100,
    execute: ({ id, amount }) => {
      record("refund", { id, amount });
      return { refunded: id, amount };
    },
  });
  const cancel = durableTool({
    name: "cancel",
    description: "Cancel an order.",
    parameters: z.object({ id: z.string() }),
    needsApproval: true,
    execute: ({ id }) => {
      record("cancel", { id });
      return `order ${id} cancelled`;
    },
  });
  const explode = durableTool({
    name: "explode",
    description: "Always fails.",
    parameters: z.object({}),
    execute: () => {
      record("explode", {});
      throw new Error("the warehouse is on fire");
    },
  });
  const picky = durableTool({
    name: "picky",
    description: "Fails in a way the model should see.",
    parameters: z.object({}),
    execute: () => {
      record("picky", {});
      throw new ToolExecutionError("picky wants a prime number");
    },
  });
  const model = new ScriptedModel(modelOptions);
  const agent = new Agent({
    name: "orders",
    instructions: "Help with orders.",
    tools: [lookUp, refund, cancel, explode, picky],
  });
  const runner = new OpenAIAgentsRunner(agent, { model, ...runnerOptions });
  return { runner, model, agent, runs };
}

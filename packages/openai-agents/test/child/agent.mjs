// The agent both processes build, from the BUILT package (dist), as an application would.
import { Agent } from "@openai/agents";
import { z } from "zod";
import { durableTool, OpenAIAgentsRunner } from "../../dist/index.js";
import { ScriptedModel } from "../../dist/testing/index.js";

export function buildRunner() {
  const runs = [];
  const lookUp = durableTool({
    name: "look_up",
    description: "Look an order up.",
    parameters: z.object({ id: z.string() }),
    execute: ({ id }) => {
      runs.push(id);
      return `order ${id} is shipped (pid ${process.pid})`;
    },
  });
  const model = new ScriptedModel();
  const agent = new Agent({ name: "orders", instructions: "Help.", tools: [lookUp] });
  return { runner: new OpenAIAgentsRunner(agent, { model }), model, runs };
}

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, handoff } from "@openai/agents";
import { describeChanges } from "@durable-agents/core";
import { durableTool, openAIAgentsSession } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";

const version = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
  .version;

/** The same graph every time it is called, with the changes asked for. */
function build(change: { instructions?: string; refundArgs?: z.ZodObject; model?: string; shipping?: boolean } = {}) {
  const refund = durableTool({
    name: "refund",
    description: "Refund.",
    parameters: change.refundArgs ?? z.object({ id: z.string() }),
    execute: () => "refunded",
  });
  const billing = new Agent({ name: "billing", instructions: "Billing.", tools: [refund] });
  const front = new Agent({
    name: "front",
    instructions: change.instructions ?? "Triage.",
    handoffs: change.shipping
      ? [handoff(billing), new Agent({ name: "shipping", instructions: "Ship." })]
      : [handoff(billing)],
  });
  return openAIAgentsSession(front, {
    name: "support",
    model: change.model ?? "gpt-test",
    policies: { refund: { effect: "non_idempotent_write" } },
  });
}

describe("the runner's description (the definition's fingerprint)", () => {
  it("describes the graph: adapter version, agents with model, instructions, tools and schemas, handoffs", () => {
    const definition = build();
    const runner = definition.description.runner!;
    expect(runner.adapter).toEqual({ name: "@durable-agents/openai-agents", version });
    expect(runner.agents.map((a) => [a.name, a.model, a.instructions, a.handoffs])).toEqual([
      ["front", "gpt-test", "Triage.", ["billing"]],
      ["billing", "gpt-test", "Billing.", []],
    ]);
    const refund = runner.agents[1]!.tools[0]!;
    expect(refund.name).toBe("refund");
    expect(refund.parameters).toMatchObject({ type: "object", properties: { id: { type: "string" } } });
    expect(runner.agents[0]!.handoffTools).toEqual([
      expect.objectContaining({ name: "transfer_to_billing", agent: "billing" }),
    ]);
    expect(build().fingerprint).toBe(definition.fingerprint);
  });

  it("any change to instructions, a tool's schema, the model or the handoffs is another fingerprint", () => {
    const base = build();
    const changed = [
      build({ instructions: "Triage, politely." }),
      build({ refundArgs: z.object({ id: z.string(), reason: z.string() }) }),
      build({ model: "gpt-other" }),
      build({ shipping: true }),
    ];
    const all = new Set([base.fingerprint, ...changed.map((d) => d.fingerprint)]);
    expect(all.size).toBe(5);
    expect(describeChanges(base.description, changed[0]!.description)).toEqual([
      { path: 'runner.agents["front"].instructions', before: "Triage.", after: "Triage, politely." },
    ]);
  });

  it("passes migrations on to core's defineSession", () => {
    const old = build({ instructions: "Old." });
    const agent = new Agent({ name: "a", instructions: "A." });
    const definition = openAIAgentsSession(agent, {
      name: "a",
      model: "m",
      migrations: [{ from: old.fingerprint, accept: true }],
    });
    expect(definition.migrations).toEqual([{ from: old.fingerprint, accept: true }]);
  });

  it("dynamic instructions and a model object are described by name", () => {
    const agent = new Agent({
      name: "a",
      instructions: function greet() {
        return "hi";
      },
    });
    const definition = openAIAgentsSession(agent, { name: "a", model: new ScriptedModel() });
    const [described] = definition.description.runner!.agents;
    expect(described?.instructions).toBe("(dynamic instructions: function greet)");
    expect(described?.model).toBe("(model object: ScriptedModel)");
  });
});

import { readFileSync } from "node:fs";
import { describeChanges } from "@durable-agents/core";
import { jsonSchema, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkSession } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";

const version = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
  .version;

/** The same agent every time it is called, with the changes asked for. */
const build = (change: { instructions?: string; orderSchema?: z.ZodObject } = {}) =>
  aiSdkSession({
    name: "support",
    model: new ScriptedLanguageModel(),
    instructions: change.instructions ?? "Help with orders.",
    tools: {
      lookup: tool({
        description: "Looks an order up",
        inputSchema: change.orderSchema ?? z.object({ order: z.string() }),
        execute: async ({ order }) => `order ${order}: shipped`,
      }),
    },
    policies: { lookup: { effect: "read" } },
  });

describe("the runner's description (the definition's fingerprint)", () => {
  it("describes the agent: adapter version, model, instructions, tools with their JSON Schema", () => {
    const definition = build();
    const runner = definition.description.runner!;
    expect(runner.adapter).toEqual({ name: "@durable-agents/ai-sdk", version });
    const [agent] = runner.agents;
    expect(agent?.instructions).toBe("Help with orders.");
    expect(agent?.model).toBe("durable-agents-testing:scripted");
    expect(agent?.handoffs).toEqual([]);
    expect(agent?.tools[0]).toMatchObject({
      name: "lookup",
      parameters: { type: "object", properties: { order: { type: "string" } } },
    });
    expect(build().fingerprint).toBe(definition.fingerprint);
  });

  it("a change to the instructions or a tool's schema is another fingerprint, and says what changed", () => {
    const base = build();
    const polite = build({ instructions: "Help with orders, politely." });
    const schema = build({ orderSchema: z.object({ order: z.string(), reason: z.string() }) });
    expect(new Set([base.fingerprint, polite.fingerprint, schema.fingerprint]).size).toBe(3);
    expect(describeChanges(base.description, polite.description).map((c) => c.path)).toEqual([
      'runner.agents["agent"].instructions',
    ]);
    expect(describeChanges(base.description, schema.description).map((c) => c.path)).toContain(
      'runner.agents["agent"].tools["lookup"].parameters.properties.reason',
    );
  });

  it("passes migrations on to core's defineSession", () => {
    const old = build({ instructions: "Old." });
    const definition = aiSdkSession({
      name: "support",
      model: new ScriptedLanguageModel(),
      tools: {},
      migrations: [{ from: old.fingerprint, accept: true }],
    });
    expect(definition.migrations).toEqual([{ from: old.fingerprint, accept: true }]);
  });

  it("a schema whose JSON Schema only a promise gives is described by a marker", () => {
    const definition = aiSdkSession({
      name: "support",
      model: new ScriptedLanguageModel(),
      tools: {
        lookup: tool({
          description: "Looks an order up",
          inputSchema: jsonSchema<{ order: string }>(Promise.resolve({ type: "object" })),
          execute: async ({ order }) => `order ${order}`,
        }),
      },
      policies: { lookup: { effect: "read" } },
    });
    expect(definition.description.runner?.agents[0]?.tools[0]?.parameters).toBe(
      "(asynchronous JSON schema: not described)",
    );
  });
});

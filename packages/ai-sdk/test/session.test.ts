import {
  ConfigurationError,
  DurableAgentsError,
  InvalidInputError,
  PolicyError,
  defaultModelRetry,
} from "@durable-agents/core";
import { tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkSession } from "../src/index.js";
import { ScriptedLanguageModel } from "../src/testing/index.js";

const tools = {
  lookup: tool({
    description: "Looks an order up",
    inputSchema: z.object({ order: z.string() }),
    execute: async ({ order }) => `order ${order}: shipped`,
  }),
  refund: tool({
    description: "Refunds an order",
    inputSchema: z.object({ order: z.string() }),
    needsApproval: true,
    execute: async ({ order }) => `refunded ${order}`,
  }),
};

describe("aiSdkSession", () => {
  it("builds a session definition from a model, instructions and tools", () => {
    const definition = aiSdkSession({
      name: "support",
      model: new ScriptedLanguageModel(),
      instructions: "Help with orders.",
      tools,
      policies: { lookup: { effect: "read" }, refund: { effect: "non_idempotent_write" } },
      modelRetry: { maxAttempts: 5 },
      maxModelSteps: 7,
      cancelGraceMs: 250,
    });
    expect(definition.name).toBe("support");
    expect(definition.tools).toEqual([
      { name: "lookup", approval: "never" },
      { name: "refund", approval: "always" },
    ]);
    expect(definition.policies).toEqual({ lookup: { effect: "read" }, refund: { effect: "non_idempotent_write" } });
    expect(definition.modelRetry).toEqual({ ...defaultModelRetry, maxAttempts: 5 });
    expect(definition.maxModelSteps).toBe(7);
    expect(definition.cancelGraceMs).toBe(250);
    expect(definition.runner.tools()).toEqual(definition.tools);
  });

  it("refuses a policy that names no tool", () => {
    expect(() =>
      aiSdkSession({
        name: "support",
        model: new ScriptedLanguageModel(),
        tools,
        policies: { lookpu: { effect: "read" } },
      }),
    ).toThrowError(
      expect.objectContaining({ code: "configuration", message: expect.stringContaining('"lookpu" names no tool') }),
    );
    let caught: unknown;
    try {
      aiSdkSession({
        name: "support",
        model: new ScriptedLanguageModel(),
        tools,
        policies: { lookpu: { effect: "read" } },
      });
    } catch (error) {
      caught = error;
    }
    expect(PolicyError.isInstance(caught)).toBe(true);
    expect(ConfigurationError.isInstance(caught)).toBe(true);
    expect(InvalidInputError.isInstance(caught)).toBe(false);
  });

  it("refuses a tool without execute, which a durable session could never run", () => {
    const clientSide = {
      ask: tool({ description: "Asks the user", inputSchema: z.object({ q: z.string() }), outputSchema: z.string() }),
    };
    let caught: unknown;
    try {
      aiSdkSession({ name: "support", model: new ScriptedLanguageModel(), tools: { ...tools, ...clientSide } });
    } catch (error) {
      caught = error;
    }
    expect(PolicyError.isInstance(caught)).toBe(true);
    expect((caught as Error).message).toContain('tool "ask" has no execute function');
  });

  it("refuses a malformed name or a missing model with a typed error: a configuration mistake, not bad input", () => {
    expect(() => aiSdkSession({ name: "no spaces allowed", model: new ScriptedLanguageModel(), tools })).toThrowError(
      expect.objectContaining({ code: "configuration" }),
    );
    let caught: unknown;
    try {
      aiSdkSession({ name: "support", model: undefined as never, tools });
    } catch (error) {
      caught = error;
    }
    expect(ConfigurationError.isInstance(caught)).toBe(true);
    expect(PolicyError.isInstance(caught)).toBe(false);
    const refusals = [
      () => aiSdkSession({ name: "support", model: new ScriptedLanguageModel(), tools: undefined as never }),
      () => definitionOf().runner.userItem("message", 42 as never),
    ].map((build) => {
      try {
        build();
        return "accepted";
      } catch (error) {
        return DurableAgentsError.isInstance(error) ? error.code : String(error);
      }
    });
    // A missing tool set is the application's mistake; a user item without text is bad input to the runner.
    expect(refusals).toEqual(["configuration", "invalid_input"]);
  });

  it("builds user items and failure notes as SDK user messages", () => {
    const runner = definitionOf().runner;
    expect(runner.userItem("message", "hi")).toEqual({
      item: { role: "user", content: "hi" },
      display: { role: "user", text: "hi" },
    });
    expect(runner.userItem("turn_failure_note", "[previous turn failed] x")).toEqual({
      item: { role: "user", content: "[previous turn failed] x" },
      display: { role: "note", text: "[previous turn failed] x" },
    });
  });
});

const definitionOf = () => aiSdkSession({ name: "support", model: new ScriptedLanguageModel(), tools });

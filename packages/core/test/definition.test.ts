/** A definition reads its runner's tool list on every use, so a list that changes while it serves (MCP) is followed. */
import { describe, expect, it } from "vitest";
import { defineSession, SessionClient, Worker } from "../src/index.js";
import { machineConfig, type ToolDescription } from "../src/engine.js";
import { MemoryStore, ScriptedRunner } from "../src/testing/index.js";

/** A scripted runner whose tool list the test changes, with the effects it declares. */
class ChangingRunner extends ScriptedRunner {
  effects = new Map<string, ToolDescription["defaultEffect"]>([["look_up_order", "read"]]);
  override tools(): ToolDescription[] {
    return super
      .tools()
      .filter((tool) => this.effects.has(tool.name))
      .map((tool) => ({ ...tool, defaultEffect: this.effects.get(tool.name)! }));
  }
}

const runner = () =>
  new ChangingRunner({
    tools: ["look_up_order", "check_stock"].map((name) => ({
      name,
      description: name,
      parameters: { id: "string" },
      execute: (args) => `${name} ${String(args.id)} ok`,
    })),
  });

describe("a definition's tools", () => {
  it("follow the runner's list: a tool added later runs with its declared effect", async () => {
    const scripted = runner();
    const definition = defineSession({ name: "changing", runner: scripted });
    const config = machineConfig(definition);
    expect(definition.tools.map((t) => t.name)).toEqual(["look_up_order"]);
    scripted.effects.set("check_stock", "read");
    expect(definition.tools.map((t) => t.name)).toEqual(["look_up_order", "check_stock"]);
    expect(config.tools.map((t) => t.name)).toEqual(["look_up_order", "check_stock"]);

    const store = new MemoryStore();
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20 }).start();
    const client = new SessionClient({ store });
    try {
      const { sessionId } = await client.startSession({ agent: "changing", message: 'call check_stock {"id":"7"}' });
      const done = await client.waitUntilIdle(sessionId);
      expect(done.turn?.calls.map((c) => [c.name, c.effect, c.status])).toEqual([["check_stock", "read", "succeeded"]]);
      expect((await client.steps(sessionId)).map((s) => s.step)).toEqual([
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
      ]);

      // Once the runner no longer lists it, a call to it is refused like any unknown tool.
      scripted.effects.delete("check_stock");
      await client.sendMessage(sessionId, 'call check_stock {"id":"8"}');
      const next = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
      expect(next.turn?.calls[0]?.status).toBe("failed");
      expect(next.turn?.calls[0]?.message).toMatch(/the agent has no tool named "check_stock"/);
    } finally {
      await worker.stop();
    }
  });
});

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent } from "@openai/agents";
import { durableTool, OpenAIAgentsRunner } from "../src/index.js";
import { ScriptedModel } from "../src/testing/index.js";
import { runTurn } from "./harness.js";

describe("smoke", () => {
  it("runs", async () => {
    let runs = 0;
    const add = durableTool({ name: "add", description: "add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => { runs++; return String(a + b); } });
    const model = new ScriptedModel({ reportUsage: true });
    const runner = new OpenAIAgentsRunner(new Agent({ name: "A", instructions: "x", tools: [add] }), { model });
    const history: any[] = [];
    const t1 = await runTurn(runner, history, "call add {\"a\":1,\"b\":2}\ncall add {\"a\":3,\"b\":4}\nthen\ncall add {\"a\":5,\"b\":6}");
    console.log(JSON.stringify(t1.steps.map(s => [s.result.kind, s.runStateBytes, s.result.usage]), null, 0), t1.text, model.calls, runs);
    const t2 = await runTurn(runner, history, "hello again");
    console.log(t2.text, JSON.stringify(history.map(h => h.display)));
    expect(runs).toBe(3);
  });
});

import { runnerConformance, sessionConformance, storeConformance } from "@durable-agents/core/conformance";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterEach, describe, it } from "vitest";
import { MemoryStore, memoryRawReader } from "../src/index.js";

storeConformance({ describe, it, afterEach }, async () => {
  const store = new MemoryStore();
  return { store, raw: memoryRawReader(store) };
});

const made: ScriptedRunner[] = [];
// The runners (and their model-call counts) of the test that is running only: each test starts empty.
afterEach(() => {
  made.length = 0;
});
runnerConformance(
  { describe, it },
  {
    makeRunner: (tools) => {
      const runner = new ScriptedRunner({ tools });
      made.push(runner);
      return runner;
    },
    modelCalls: () => made.reduce((sum, runner) => sum + runner.modelCalls, 0),
  },
);

sessionConformance(
  { describe, it, afterEach },
  {
    makeRunner: (tools) => new ScriptedRunner({ tools }),
    makeStore: async () => ({ store: new MemoryStore() }),
  },
);

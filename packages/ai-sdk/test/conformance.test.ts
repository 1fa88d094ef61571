/** Core's runner and session suites, run with this package's runner and the in-memory store. */
import { runnerConformance, sessionConformance } from "@durable-agents/core/conformance";
import { MemoryStore } from "@durable-agents/store-memory";
import { afterEach, describe, it } from "vitest";
import { conformanceRunner, type ScriptedLanguageModel } from "../src/testing/index.js";

const models: ScriptedLanguageModel[] = [];
// The runners (and their model-call counts) of the test that is running only: each test starts empty.
afterEach(() => {
  models.length = 0;
});
const makeRunner = (tools: Parameters<typeof conformanceRunner>[0]) => {
  const { runner, model } = conformanceRunner(tools);
  models.push(model);
  return runner;
};

runnerConformance(
  { describe, it },
  { makeRunner, modelCalls: () => models.reduce((sum, model) => sum + model.calls, 0) },
);

sessionConformance({ describe, it, afterEach }, { makeRunner, makeStore: async () => ({ store: new MemoryStore() }) });

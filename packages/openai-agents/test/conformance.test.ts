import { afterAll, afterEach, describe, it } from "vitest";
import { runnerConformance, sessionConformance } from "@durable-agents/core/conformance";
import { MemoryStore } from "@durable-agents/store-memory";
import { conformanceRunner, type ScriptedModel } from "../src/testing/index.js";

const models: ScriptedModel[] = [];
// The runners (and their model-call counts) of the test that is running only: each test starts empty.
afterEach(() => {
  models.length = 0;
});
const makeRunner = (tools: Parameters<typeof conformanceRunner>[0]) => {
  const built = conformanceRunner(tools);
  models.push(built.model);
  return built.runner;
};

runnerConformance(
  { describe, it, afterEach, afterAll },
  { makeRunner, modelCalls: () => models.reduce((sum, model) => sum + model.calls, 0) },
);
sessionConformance(
  { describe, it, afterEach, afterAll },
  { makeRunner, makeStore: async () => ({ store: new MemoryStore() }) },
);

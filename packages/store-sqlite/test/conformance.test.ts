import { runnerConformance, sessionConformance, storeConformance } from "@durable-agents/core/conformance";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterEach, describe, it } from "vitest";
import { openTempSqliteStore } from "../src/testing/index.js";

storeConformance({ describe, it, afterEach }, async () => openTempSqliteStore());

let made: ScriptedRunner[] = [];
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
    makeStore: async () => {
      const { store, cleanup } = openTempSqliteStore();
      return { store, cleanup };
    },
  },
);

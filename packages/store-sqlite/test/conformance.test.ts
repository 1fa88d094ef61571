import { sessionConformance, storeConformance } from "@durable-agents/core/conformance";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterEach, describe, it } from "vitest";
import { openTempSqliteStore } from "../src/testing/index.js";

// The store's promises, then every scenario of the session contract, each test on a new file.
// (The runner suite checks runners, not stores; it runs with the runners' packages.)
storeConformance({ describe, it, afterEach }, async () => openTempSqliteStore());

sessionConformance(
  { describe, it, afterEach },
  {
    makeRunner: (tools) => new ScriptedRunner({ tools }),
    makeStore: async () => openTempSqliteStore(),
  },
);

import { afterEach, describe, it } from "vitest";
import { sessionConformance } from "@durable-agents/core/conformance";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { restatePinningReason, restateConformance, restateFromEnv } from "../src/testing/index.js";

// Core's whole session contract (SessionClient + the engine + the scripted runner) on Restate.
const harness = restateConformance(restateFromEnv());
sessionConformance(
  { describe, it, afterEach },
  {
    makeRunner: (tools) => new ScriptedRunner({ tools }),
    makeStore: harness.makeStore,
    makeWorker: harness.makeWorker,
    pinning: { supported: false, reason: restatePinningReason },
  },
);

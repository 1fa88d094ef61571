import { afterEach, describe, it } from "vitest";
import { sessionConformance } from "@durable-agents/core/conformance";
import { conformanceRunner } from "@durable-agents/ai-sdk/testing";
import { restatePinningReason, restateConformance, restateFromEnv } from "../src/testing/index.js";

// Core's session suite on Restate with the AI SDK runner (its scripted language model).
const harness = restateConformance(restateFromEnv());
sessionConformance(
  { describe, it, afterEach },
  {
    makeRunner: (tools) => conformanceRunner(tools).runner,
    makeStore: harness.makeStore,
    makeWorker: harness.makeWorker,
    pinning: { supported: false, reason: restatePinningReason },
  },
);

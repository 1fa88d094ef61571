import { afterEach, describe, it } from "vitest";
import { sessionConformance } from "@durable-agents/core/conformance";
import { conformanceRunner } from "@durable-agents/openai-agents/testing";
import { restatePinningReason, restateConformance, restateFromEnv } from "../src/testing/index.js";

// Core's session suite on Restate with the OpenAI Agents SDK runner (its scripted model).
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

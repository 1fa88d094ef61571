import { sessionConformance } from "@durable-agents/core/conformance";
import { conformanceRunner } from "@durable-agents/openai-agents/testing";
import { afterEach, describe, it } from "vitest";
import { postgresStores } from "./postgres-store.js";

// The OpenAI Agents SDK runner on store-postgres: every scenario of the session contract.
sessionConformance(
  { describe, it, afterEach },
  { makeRunner: (tools) => conformanceRunner(tools).runner, makeStore: postgresStores("openai") },
);

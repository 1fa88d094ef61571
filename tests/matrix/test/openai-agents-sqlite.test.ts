import { sessionConformance } from "@durable-agents/core/conformance";
import { conformanceRunner } from "@durable-agents/openai-agents/testing";
import { openTempSqliteStore } from "@durable-agents/store-sqlite/testing";
import { afterEach, describe, it } from "vitest";

// The OpenAI Agents SDK runner on store-sqlite: every scenario of the session contract, each test on a new file.
sessionConformance(
  { describe, it, afterEach },
  { makeRunner: (tools) => conformanceRunner(tools).runner, makeStore: async () => openTempSqliteStore() },
);

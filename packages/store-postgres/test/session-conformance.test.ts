import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import { sessionConformance } from "@durable-agents/core/conformance";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { openSchemaStores, type SchemaStores } from "../src/testing/index.js";

// Core's whole session contract (SessionClient + Worker + the scripted runner) on this store.
let stores: SchemaStores;
beforeAll(async () => {
  stores = await openSchemaStores("sessions", { pollIntervalMs: 1000 });
});
afterAll(async () => {
  await stores?.close();
});

sessionConformance(
  { describe, it, afterEach },
  { makeRunner: (tools) => new ScriptedRunner({ tools }), makeStore: () => stores.next() },
);

import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import { storeConformance } from "@durable-agents/core/conformance";
import { openSchemaStores, type SchemaStores } from "../src/testing/index.js";

// Every test of the suite gets a schema of its own on this file's database.
let stores: SchemaStores;
beforeAll(async () => {
  stores = await openSchemaStores("conformance");
});
afterAll(async () => {
  await stores?.close();
});

storeConformance({ describe, it, afterEach }, () => stores.next());

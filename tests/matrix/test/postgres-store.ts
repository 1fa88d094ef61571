import { afterAll, beforeAll } from "vitest";
import type { SessionConformanceOptions } from "@durable-agents/core/conformance";
import { openSchemaStores, type SchemaStores } from "@durable-agents/store-postgres/testing";

/** A `makeStore` for core's session suite: a fresh schema of this file's own database per test. */
export function postgresStores(prefix: string): SessionConformanceOptions["makeStore"] {
  let stores: SchemaStores;
  beforeAll(async () => {
    stores = await openSchemaStores(prefix, { pollIntervalMs: 1000 });
  });
  afterAll(async () => {
    await stores?.close();
  });
  return () => stores.next();
}

/**
 * The in-process session store. Its implementation is core's test store (`@durable-agents/core/testing`),
 * so that core's own engine tests run on the very store this package publishes; this package is its
 * stable name for applications.
 */
export {
  MemoryStore,
  memoryRawReader,
  type MemorySessionRecord,
  type MemoryStoreOptions,
} from "@durable-agents/core/testing";

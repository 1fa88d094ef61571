export { MemoryStore, type MemorySessionRecord, type MemoryStoreOptions } from "./memory-store.js";
export { memoryRawReader } from "./raw-reader.js";

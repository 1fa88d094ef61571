export { storeConformance } from "./store-suite.js";
export { runnerConformance } from "./runner-suite.js";
export { sessionConformance } from "./session-suite.js";
export type {
  ConformanceWorker,
  ConformanceWorkerOptions,
  RawSessionRow,
  RawStoreReader,
  RunnerConformanceOptions,
  RunnerFactory,
  SessionConformanceOptions,
  StoreHarness,
  TestApi,
} from "./types.js";

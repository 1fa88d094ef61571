export type {
  RawSessionRow,
  RawStoreReader,
  RunnerConformanceOptions,
  RunnerFactory,
  SessionConformanceOptions,
  StoreHarness,
  TestApi,
} from "./types.js";

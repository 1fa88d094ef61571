/**
 * What a package hands the conformance suites. The suites take the test functions of the caller's
 * test framework, so core depends on none.
 */
import type { SessionDefinition } from "../definition.js";
import type { Runner } from "../runner.js";
import type { SessionStore } from "../store.js";
import type { ConformanceTool } from "../testing/scripted-rules.js";

type TestBody = () => unknown | Promise<unknown>;

export interface TestApi {
  readonly describe: (name: string, body: () => void) => void;
  readonly it: (name: string, body: TestBody, timeoutMs?: number) => void;
  readonly afterEach?: (body: TestBody) => void;
  readonly afterAll?: (body: TestBody) => void;
}

/** A session row as the backend stored it, read without going through the store's API. */
export interface RawSessionRow {
  readonly sessionId: string;
  readonly agent: string;
  readonly version: number;
  readonly fence: number;
  readonly leaseOwner: string | null;
  /** Epoch milliseconds, or null when no lease was ever granted or it was released. */
  readonly leaseExpiresAt: number | null;
  readonly runnable: boolean;
  readonly inboxCursor: number;
  /** The fingerprint the session is pinned to, as the store keeps it for its lease query; null when not pinned. */
  readonly fingerprint: string | null;
  /** Whether the store keeps the session marked waiting for its definition. */
  readonly definitionWaiting: boolean;
  /** The stored head, as JSON. */
  readonly head: unknown;
}

/** Reads what a backend wrote, directly from its storage (tables, maps), not through `SessionStore`. */
export interface RawStoreReader {
  session(sessionId: string): Promise<RawSessionRow | null>;
  /** Stored history items (JSON), in order. */
  history(sessionId: string): Promise<unknown[]>;
  events(sessionId: string): Promise<{ seq: number; type: string; data: unknown }[]>;
  inbox(sessionId: string): Promise<{ seq: number; dedupeKey: string | null; entry: unknown }[]>;
}

export interface StoreHarness {
  readonly store: SessionStore;
  readonly raw: RawStoreReader;
  /** Called after each test. */
  cleanup?(): Promise<void>;
}

/** Builds a runner whose agent has exactly these tools and whose deterministic model follows `decideScriptedResponse`. */
export type RunnerFactory = (tools: readonly ConformanceTool[]) => Runner | Promise<Runner>;

export interface RunnerConformanceOptions {
  readonly makeRunner: RunnerFactory;
  /** Model calls made so far by the runners this factory built (its deterministic model counts them). */
  readonly modelCalls?: () => number;
}

export interface SessionConformanceOptions {
  readonly makeRunner: RunnerFactory;
  /** A fresh store for one test; `cleanup` runs after it. */
  readonly makeStore: () => Promise<{ store: SessionStore; cleanup?: () => Promise<void> }>;
  /** The engine that drives the sessions (default: core's `Worker`), e.g. another engine over the same state machine. */
  readonly makeWorker?: (options: ConformanceWorkerOptions) => ConformanceWorker;
  /** Runs only the scenarios whose names this accepts (default: every scenario). */
  readonly scenarios?: (name: string) => boolean;
  /**
   * An engine that does not pin sessions to the worker's definition (it drives whatever it is handed,
   * e.g. because its own router picks the process) says so here, with the reason; the pinning
   * scenarios are then not run. Default: pinning is supported.
   */
  readonly pinning?: { readonly supported: false; readonly reason: string };
}

export interface ConformanceWorkerOptions {
  readonly store: SessionStore;
  readonly definition: SessionDefinition;
  readonly pollIntervalMs: number;
  readonly leaseTtlMs: number;
  readonly concurrency: number;
  /** How often a worker that found no work looks for sessions whose definition nobody serves (ms). */
  readonly definitionCheckIntervalMs?: number;
}

/**
 * What the session suite needs of an engine: what core's `Worker` offers, with its death and drive
 * count reached through `crashWorker` and `workerDrives` (`@durable-agents/core/testing`).
 */
export interface ConformanceWorker {
  /** Starts leasing and driving sessions in the background. */
  start(): unknown;
  /** Graceful stop: steps in flight finish and are committed, leases are released. */
  stop(options?: { timeoutMs?: number }): Promise<void>;
  /** Dies at once, as its process would: writes, renews and releases nothing more. */
  crash(): void;
  /** Drives ended so far. */
  readonly drives: number;
}

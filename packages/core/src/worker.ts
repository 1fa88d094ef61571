/**
 * A worker leases runnable sessions from a store and drives them, up to a concurrency limit. It
 * renews each lease while the session's steps run; a graceful stop finishes the steps in flight
 * and hands the leases back.
 */
import { randomUUID } from "node:crypto";
import type { CoalescerOptions } from "./coalescer.js";
import type { SessionDefinition } from "./definition.js";
import { ConfigurationError } from "./errors.js";
import { HistoryCache } from "./history-cache.js";
import { driveSession, type DriveEnd } from "./session-driver.js";
import type { Lease, SessionStore } from "./store.js";
import { loadStoredSession } from "./stored-session.js";

export interface WorkerOptions {
  readonly store: SessionStore;
  readonly sessions: readonly SessionDefinition[];
  readonly workerId?: string;
  /** Sessions driven at once. Default 16. */
  readonly concurrency?: number;
  /** Lease time to live; renewed every third of it. Default 15 s. */
  readonly leaseTtlMs?: number;
  /** Fallback poll for work when no notification arrives. Default 1 s. */
  readonly pollIntervalMs?: number;
  readonly coalescing?: CoalescerOptions;
  /**
   * Every unexpected error: one that ends a drive (a store that fails, stored state it cannot read,
   * a store or runner breaking its contract) and one of leasing or renewing (store unreachable).
   * Default: console.error.
   */
  readonly onError?: (error: unknown) => void;
}

/**
 * What `@durable-agents/core/testing` reaches inside a worker (`crashWorker`, `workerDrives`). No
 * entry point exports it: the worker's public surface has no test seam.
 */
export interface WorkerTestAccess {
  /** The worker dies at once: it writes, renews and releases nothing more. */
  crash(worker: Worker): void;
  /** Drives ended so far. */
  drives(worker: Worker): number;
}
let testAccess: WorkerTestAccess;
export const workerTestAccess = (): WorkerTestAccess => testAccess;

interface Held {
  lease: Lease;
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

export class Worker {
  readonly workerId: string;
  private readonly store: SessionStore;
  private readonly definitions: ReadonlyMap<string, SessionDefinition>;
  private readonly concurrency: number;
  private readonly leaseTtlMs: number;
  private readonly pollIntervalMs: number;
  private readonly held = new Map<string, Held>();
  private readonly historyCache = new HistoryCache();
  private loop: Promise<void> | null = null;
  private stopping = false;
  private dead = false;
  private wakeUp: (() => void) | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Sessions driven to the end of a drive. */
  private drivesEnded = 0;

  static {
    testAccess = { crash: (worker) => worker.die(), drives: (worker) => worker.drivesEnded };
  }

  constructor(private readonly options: WorkerOptions) {
    if (options.sessions.length === 0) throw new ConfigurationError("a worker needs at least one session definition");
    this.store = options.store;
    this.workerId = options.workerId ?? `worker-${randomUUID()}`;
    this.definitions = new Map(options.sessions.map((d) => [d.name, d]));
    this.concurrency = options.concurrency ?? 16;
    this.leaseTtlMs = options.leaseTtlMs ?? 15_000;
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
  }

  /** Starts leasing and driving sessions in the background. */
  start(): this {
    if (this.loop) return this;
    this.unsubscribe = this.store.subscribe((n) => {
      if (n.kind === "work" || n.kind === "inbox") this.poke();
    });
    this.loop = this.run();
    return this;
  }

  get activeSessions(): number {
    return this.held.size;
  }

  /**
   * Graceful stop: takes no new session and starts no new step; steps in flight finish and are
   * committed, then every lease is released. After `timeoutMs` the rest are abandoned (their leases
   * expire and another worker recovers them).
   */
  async stop(options: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping = true;
    this.poke();
    const all = Promise.all([...this.held.values()].map((h) => h.done));
    const timeout = options.timeoutMs ?? 30_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, timeout)))]);
    clearTimeout(timer);
    for (const h of this.held.values()) h.controller.abort();
    await this.loop;
    this.unsubscribe?.();
  }

  /**
   * The death of this worker's process, as tests simulate it (`crashWorker`): from now on it writes
   * nothing, renews nothing and releases nothing. Steps in flight go on running, but their results
   * are discarded.
   */
  private die(): void {
    this.dead = true;
    this.stopping = true;
    for (const h of this.held.values()) h.controller.abort();
    this.unsubscribe?.();
    this.poke();
  }

  /** Set by every wake-up, so that one arriving while the loop is busy (not waiting) is not lost. */
  private woken = false;

  private poke(): void {
    this.woken = true;
    const wake = this.wakeUp;
    this.wakeUp = null;
    wake?.();
  }

  private wait(ms: number): Promise<void> {
    if (this.woken) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.wakeUp === done) self.wakeUp = null;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      if (this.held.size >= this.concurrency) {
        // A freed slot pokes; the loop then leases whatever is runnable.
        this.woken = false;
        await this.wait(this.pollIntervalMs);
        continue;
      }
      let lease: Lease | null = null;
      this.woken = false;
      try {
        lease = await this.store.acquireLease({
          workerId: this.workerId,
          ttlMs: this.leaseTtlMs,
          agents: [...this.definitions.keys()],
        });
      } catch (error) {
        this.report(error);
      }
      if (this.stopping) {
        if (lease && !this.dead) await this.store.releaseLease(lease).catch((e) => this.report(e));
        break;
      }
      if (lease) {
        this.hold(lease);
        continue;
      }
      await this.wait(this.pollIntervalMs);
    }
  }

  private hold(lease: Lease): void {
    const controller = new AbortController();
    const entry: Held = { lease, controller, done: Promise.resolve() };
    const renew = setInterval(() => void this.renew(entry), Math.max(10, Math.floor(this.leaseTtlMs / 3)));
    const drive = async (): Promise<DriveEnd> => {
      const stored = await loadStoredSession(this.store, lease.sessionId);
      const def = stored ? this.definitions.get(stored.head.agent) : undefined;
      if (!stored || !def) return "missing";
      return driveSession({
        store: this.store,
        definition: def,
        lease,
        signal: controller.signal,
        stopping: () => this.stopping,
        pollIntervalMs: this.pollIntervalMs,
        historyCache: this.historyCache,
        ...(this.options.coalescing ? { coalescing: this.options.coalescing } : {}),
      });
    };
    let failed = false;
    (entry as { done: Promise<void> }).done = drive()
      .catch((error) => {
        failed = true;
        if (!this.dead) this.report(error);
      })
      .then(async () => {
        clearInterval(renew);
        this.drivesEnded += 1;
        // A drive that failed keeps its lease until it expires: the session is tried again after
        // the lease's time to live, not at once in a loop.
        if (!this.dead && !failed && !controller.signal.aborted) {
          await this.store.releaseLease(entry.lease).catch((e) => this.report(e));
        }
      })
      .finally(() => {
        if (this.held.get(lease.sessionId) === entry) this.held.delete(lease.sessionId);
        this.poke();
      });
    this.held.set(lease.sessionId, entry);
  }

  private async renew(entry: Held): Promise<void> {
    if (this.dead || entry.controller.signal.aborted) return;
    try {
      const renewed = await this.store.renewLease(entry.lease, this.leaseTtlMs);
      if (renewed) entry.lease = renewed;
      else entry.controller.abort();
    } catch (error) {
      if (Date.now() >= entry.lease.expiresAt) entry.controller.abort();
      this.report(error);
    }
  }

  private report(error: unknown): void {
    if (this.options.onError) this.options.onError(error);
    else console.error(`[durable-agents worker ${this.workerId}]`, error);
  }
}

/**
 * A worker leases runnable sessions from a store and drives them, up to a concurrency limit. It
 * renews each lease while the session's steps run; a graceful stop finishes the steps in flight
 * and hands the leases back.
 */
import { randomUUID } from "node:crypto";
import type { CoalescerOptions } from "./coalescer.js";
import type { DefinitionMigration, SessionDefinition } from "./definition.js";
import { ConfigurationError } from "./errors.js";
import { HistoryCache } from "./history-cache.js";
import { driveSession, type DriveEnd } from "./session-driver.js";
import type { AcquireLeaseOptions, AnnouncedDefinition, Lease, SessionStore, StoredSession } from "./store.js";
import type { SessionHead } from "./schemas.js";
import { HeadCache, loadStoredSession } from "./stored-session.js";

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
   * How often a worker that found no work looks for sessions of its agents pinned to a definition
   * that no running worker serves, to mark them waiting (`waiting_for_definition`). Default 5 s.
   */
  readonly definitionCheckIntervalMs?: number;
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

/** How a worker drives a session: on which of its definitions, through which migration. */
interface Plan {
  readonly definition: SessionDefinition;
  readonly migration?: DefinitionMigration;
}

interface Held {
  lease: Lease;
  /** When (this process's clock) a commit of the drive last extended the lease. */
  extendedAt?: number;
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

export class Worker {
  readonly workerId: string;
  private readonly store: SessionStore;
  /** The definitions by fingerprint; the first one of each agent name pins sessions not pinned yet. */
  private readonly served = new Map<string, SessionDefinition>();
  private readonly firstOf = new Map<string, SessionDefinition>();
  /** The migrations by the fingerprint they migrate from (to a definition served here). */
  private readonly migrating = new Map<string, Plan>();
  private readonly announcement: readonly AnnouncedDefinition[];
  private readonly definitionCheckIntervalMs: number;
  private nextDefinitionCheck = 0;
  private announceTimer: ReturnType<typeof setInterval> | null = null;
  private readonly concurrency: number;
  private readonly leaseTtlMs: number;
  private readonly pollIntervalMs: number;
  private readonly held = new Map<string, Held>();
  /** What every lease request of this worker asks for (its definitions do not change). */
  private readonly leaseRequest: AcquireLeaseOptions;
  private readonly historyCache = new HistoryCache();
  private readonly headCache = new HeadCache();
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
    for (const definition of options.sessions) {
      if (!this.served.has(definition.fingerprint)) this.served.set(definition.fingerprint, definition);
      if (!this.firstOf.has(definition.name)) this.firstOf.set(definition.name, definition);
    }
    for (const definition of this.served.values()) {
      for (const migration of definition.migrations) {
        // A fingerprint served here runs on its own definition: a migration from it never applies.
        if (this.served.has(migration.from)) continue;
        const other = this.migrating.get(migration.from);
        if (other && other.definition !== definition) {
          throw new ConfigurationError(
            `two definitions of the worker migrate from ${migration.from} (${other.definition.fingerprint} and ${definition.fingerprint})`,
          );
        }
        this.migrating.set(migration.from, { definition, migration });
      }
    }
    this.announcement = [
      ...[...this.served.values()].map((d) => ({ agent: d.name, fingerprint: d.fingerprint, role: "serves" as const })),
      ...[...this.migrating].map(([fingerprint, plan]) => ({
        agent: plan.definition.name,
        fingerprint,
        role: "migrates" as const,
      })),
    ];
    this.definitionCheckIntervalMs = options.definitionCheckIntervalMs ?? 5_000;
    this.concurrency = options.concurrency ?? 16;
    this.leaseTtlMs = options.leaseTtlMs ?? 15_000;
    this.leaseRequest = {
      workerId: this.workerId,
      ttlMs: this.leaseTtlMs,
      agents: [...this.firstOf.keys()],
      fingerprints: [...this.served.keys()],
      migrating: [...this.migrating.keys()],
    };
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
  }

  /** Starts leasing and driving sessions in the background. */
  start(): this {
    if (this.loop) return this;
    this.unsubscribe = this.store.subscribe((n) => {
      // An inbox entry of a session this worker drives is its drive's (the drive listens itself).
      if (n.kind === "work" || (n.kind === "inbox" && !this.held.has(n.sessionId))) this.poke();
    });
    void this.announce();
    this.announceTimer = setInterval(() => void this.announce(), Math.max(10, Math.floor(this.leaseTtlMs / 3)));
    this.loop = this.run();
    return this;
  }

  /** Tells the store which definitions this worker takes (renewed every third of the lease TTL). */
  private async announce(withdraw = false): Promise<void> {
    if (this.dead || !this.store.announceDefinitions) return;
    try {
      await this.store.announceDefinitions({
        workerId: this.workerId,
        definitions: withdraw ? [] : this.announcement,
        ttlMs: this.leaseTtlMs,
      });
    } catch (error) {
      this.report(error);
    }
  }

  /** Which definition drives this session: the one it is pinned to, one that migrates from it, or (unpinned) the agent's first. */
  private planFor(head: SessionHead): Plan | null {
    const pinned = head.definition?.fingerprint;
    if (pinned === undefined) {
      const first = this.firstOf.get(head.agent);
      return first ? { definition: first } : null;
    }
    const served = this.served.get(pinned);
    if (served) return { definition: served };
    const migration = this.migrating.get(pinned);
    if (migration && migration.definition.name === head.agent) return migration;
    // Not ours to drive: the driver only marks it waiting for its definition.
    const first = this.firstOf.get(head.agent);
    return first ? { definition: first } : null;
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
    if (this.announceTimer) clearInterval(this.announceTimer);
    this.announceTimer = null;
    await this.announce(true);
  }

  /**
   * The death of this worker's process, as tests simulate it (`crashWorker`): from now on it writes
   * nothing, renews nothing and releases nothing. Steps in flight go on running, but their results
   * are discarded.
   */
  private die(): void {
    this.dead = true;
    this.stopping = true;
    if (this.announceTimer) clearInterval(this.announceTimer);
    this.announceTimer = null;
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
      /** The leased session, when the store answered it with the lease. */
      let session: StoredSession | undefined;
      this.woken = false;
      const request = this.leaseRequest;
      try {
        if (this.store.acquireLeaseWithSession) {
          const got = await this.store.acquireLeaseWithSession(request);
          if (got) ({ lease, session } = got);
        } else {
          lease = await this.store.acquireLease(request);
        }
        // Found no work: now and then, a session whose definition nobody serves, to mark it waiting.
        if (!lease && this.store.acquireUnservedLease && Date.now() >= this.nextDefinitionCheck) {
          lease = await this.store.acquireUnservedLease(request);
          if (!lease) this.nextDefinitionCheck = Date.now() + this.definitionCheckIntervalMs;
        }
      } catch (error) {
        this.report(error);
      }
      if (this.stopping) {
        if (lease && !this.dead) await this.store.releaseLease(lease).catch((e) => this.report(e));
        break;
      }
      if (lease) {
        this.hold(lease, session);
        continue;
      }
      await this.wait(this.pollIntervalMs);
    }
  }

  private hold(lease: Lease, session?: StoredSession): void {
    const controller = new AbortController();
    const entry: Held = { lease, controller, done: Promise.resolve() };
    const renew = setInterval(() => void this.renew(entry), Math.max(10, Math.floor(this.leaseTtlMs / 3)));
    const drive = async (): Promise<DriveEnd> => {
      // A head this worker committed and the store answers unchanged is not parsed again.
      const stored = session
        ? this.headCache.parse(session, lease.sessionId, "acquireLeaseWithSession")
        : await loadStoredSession(this.store, lease.sessionId, this.headCache);
      const plan = stored ? this.planFor(stored.head) : null;
      if (!stored || !plan) return "missing";
      return driveSession({
        store: this.store,
        definition: plan.definition,
        ...(plan.migration ? { migration: plan.migration } : {}),
        session: stored,
        releaseWhenIdle: true,
        // Commits extend the lease, so a drive that commits often needs no renewal of its own.
        leaseTtlMs: this.leaseTtlMs,
        onLeaseExtended: (expiresAt) => {
          entry.lease = { ...entry.lease, expiresAt };
          entry.extendedAt = Date.now();
        },
        lease,
        signal: controller.signal,
        stopping: () => this.stopping,
        pollIntervalMs: this.pollIntervalMs,
        historyCache: this.historyCache,
        headCache: this.headCache,
        ...(this.options.coalescing ? { coalescing: this.options.coalescing } : {}),
      });
    };
    let failed = false;
    let released = false;
    (entry as { done: Promise<void> }).done = drive()
      .then((end) => {
        // The drive's last commit released the lease already.
        released = end === "released";
      })
      .catch((error) => {
        failed = true;
        if (!this.dead) this.report(error);
      })
      .then(async () => {
        clearInterval(renew);
        this.drivesEnded += 1;
        // A drive that failed keeps its lease until it expires: the session is tried again after
        // the lease's time to live, not at once in a loop.
        if (!this.dead && !failed && !released && !controller.signal.aborted) {
          await this.store.releaseLease(entry.lease).catch((e) => this.report(e));
        }
      })
      .finally(() => {
        // A slot freed at the concurrency limit: look for work at once. Below the limit the loop
        // is not waiting for a slot, and a release that left work notified `work` already.
        const full = this.held.size >= this.concurrency;
        if (this.held.get(lease.sessionId) === entry) this.held.delete(lease.sessionId);
        if (full || this.stopping) this.poke();
      });
    this.held.set(lease.sessionId, entry);
  }

  private async renew(entry: Held): Promise<void> {
    if (this.dead || entry.controller.signal.aborted) return;
    // A commit extended the lease within the last sixth of its TTL: it has at least half of it left
    // at the next renewal (every third), so this one is skipped.
    if (entry.extendedAt !== undefined && Date.now() - entry.extendedAt < this.leaseTtlMs / 6) return;
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

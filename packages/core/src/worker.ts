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
  /**
   * How long the lease of a session that went idle is kept for its next message or decision, in
   * milliseconds (the drive waits three quarters of it). A message that comes in time is driven at
   * once under the same lease, with no lease grant and no reload; otherwise the lease expires by
   * itself, with nothing written. A graceful stop, or a worker at its concurrency limit with work
   * waiting, gives such leases up at once. The cost: a worker that dies holds its idle sessions for
   * at most this long. 0 releases the lease in the turn's last commit. Default 1000.
   */
  readonly lingerMs?: number;
  /**
   * How long the commit that starts a turn under a lease the worker holds already (a message to a
   * session whose lease it kept, see `lingerMs`) may wait, in milliseconds, to go with the turn's next
   * commit while the turn's first model call runs: a model call that answers in time (or streams its
   * first deltas) takes the turn's start into its own commit, one commit fewer per turn. Else the start
   * is committed alone once this time passed, the call still running. The cost: a worker that dies
   * within this time of a turn's start loses that start (the message is taken again from the inbox by
   * the next worker, which commits the start before its call), so that first model call is not counted
   * among the model step's attempts. A session taken with a new lease commits its start before the
   * call, whatever this says. 0 commits every start before the call. Default 20.
   */
  readonly turnStartHoldMs?: number;
  /**
   * How long the commit of a model step's result that starts nothing but `read` tool calls (no
   * approval, nothing else due) may wait, in milliseconds, to go with the turn's next commit while
   * those calls run: a read call that answers in time takes the model's result into its own commit,
   * one commit fewer per such model step. Else the result is committed alone once this time passed,
   * the calls still running. The cost: a worker that dies within this time loses the model's answer,
   * and the next worker runs that model step and its reads again (an interrupted model call is not
   * counted among the step's attempts, as after any crash during one). A drive that recovered a turn
   * holds nothing, so a read that kills its worker has its attempts counted the next time. Only under
   * a lease the drive holds (after its first commit). 0 commits every model result before its calls
   * run. Default 0: a read's first attempt is counted even when its worker dies during it, as the
   * session suite's scenario "a worker dying inside a read call" requires (with a hold, a worker that
   * dies within it leaves that attempt uncounted).
   */
  readonly readToolHoldMs?: number;
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

/** A kept lease with less time left than this is not driven under: it is left to expire and taken anew. */
const KEPT_LEASE_MARGIN_MS = 25;

/** How a worker drives a session: on which of its definitions, through which migration. */
interface Plan {
  readonly definition: SessionDefinition;
  readonly migration?: DefinitionMigration;
}

interface Lapsed {
  readonly lease: Lease;
  readonly lapsesAt: number;
  readonly timer: ReturnType<typeof setTimeout>;
  /** An inbox entry came in for the session since its drive ended. */
  wanted: boolean;
}

interface Held {
  lease: Lease;
  /** False while the lease is still to be taken by the drive's first commit (`findWork`, `Commit.claim`). */
  claimed: boolean;
  /** When (this process's clock) a commit of the drive last extended the lease. */
  extendedAt?: number;
  /** Since when (this process's clock) the drive waits idle under a kept lease (`lingerMs`), or null. */
  lingeringSince: number | null;
  /** When the drive's latest such wait began (kept once it ends). */
  lingeredAt: number | null;
  readonly controller: AbortController;
  /** Aborted to end the drive's wait under a kept lease (and any later one). */
  readonly linger: AbortController;
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
  private readonly lingerMs: number;
  private readonly turnStartHoldMs: number;
  private readonly readToolHoldMs: number;
  private readonly pollIntervalMs: number;
  private readonly held = new Map<string, Held>();
  /**
   * Sessions whose drive failed before its claim (so it holds no lease), until when (this process's
   * clock): passed over until then, as a failed drive's lease keeps the session off until it expires.
   */
  private readonly failedUnclaimed = new Map<string, number>();
  /**
   * Leases kept for a next message whose drive stopped waiting, until they expire (`lapsesAt`, this
   * process's clock): a message that comes meanwhile is driven under the kept lease (`wanted`), and a
   * graceful stop hands them back.
   */
  private readonly lapsed = new Map<string, Lapsed>();
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
    this.lingerMs = options.lingerMs ?? Math.min(1_000, this.leaseTtlMs / 2);
    if (!Number.isFinite(this.lingerMs) || this.lingerMs < 0 || this.lingerMs > this.leaseTtlMs) {
      throw new ConfigurationError("invalid lingerMs", [
        `lingerMs is a number of milliseconds from 0 to leaseTtlMs (${this.leaseTtlMs})`,
      ]);
    }
    const maxHold = Math.min(1_000, this.leaseTtlMs / 4);
    /** A hold option's value: a number of milliseconds from 0 to `maxHold`, else a `ConfigurationError`. */
    const holdOption = (name: "turnStartHoldMs" | "readToolHoldMs", fallback: number): number => {
      const value = options[name] ?? fallback;
      if (!Number.isFinite(value) || value < 0 || value > maxHold) {
        throw new ConfigurationError(`invalid ${name}`, [
          `${name} is a number of milliseconds from 0 to ${maxHold} (1000 at most, and a quarter of leaseTtlMs)`,
        ]);
      }
      return value;
    };
    this.turnStartHoldMs = holdOption("turnStartHoldMs", 20);
    this.readToolHoldMs = holdOption("readToolHoldMs", 0);
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
      // An inbox entry of a session this worker drives is its drive's (the drive listens itself). One
      // whose lease this worker still keeps is driven under that lease (no other worker can take it).
      // Any other entry wakes no worker by itself: a store says `work` for a session it may lease.
      const kept = n.kind === "inbox" && !this.held.has(n.sessionId) ? this.lapsed.get(n.sessionId) : undefined;
      if (kept) kept.wanted = true;
      if (n.kind === "work" || kept) this.poke();
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

  /** Sessions being driven now, not counting idle ones whose lease is kept for their next message (`lingerMs`). */
  get activeSessions(): number {
    return this.held.size - this.lingeringDrives();
  }

  /**
   * Graceful stop: takes no new session and starts no new step; steps in flight finish and are
   * committed, then every lease is released. After `timeoutMs` the rest are abandoned (their leases
   * expire and another worker recovers them).
   */
  async stop(options: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping = true;
    this.poke();
    // Idle sessions kept for their next message are handed back now.
    for (const h of this.held.values()) h.linger.abort();
    const all = Promise.all([...this.held.values()].map((h) => h.done));
    const timeout = options.timeoutMs ?? 30_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, timeout)))]);
    clearTimeout(timer);
    for (const h of this.held.values()) h.controller.abort();
    await this.loop;
    for (const [sessionId, { lease, timer }] of this.lapsed) {
      clearTimeout(timer);
      this.lapsed.delete(sessionId);
      if (!this.dead) await this.store.releaseLease(lease).catch((e) => this.report(e));
    }
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

  /** The loop waits at the concurrency limit: a drive that goes idle (lingers) must wake it. */
  private waitingForSlot = false;

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
      // An idle session kept for its next message holds no slot: a session leased beyond the limit
      // takes the slot of the one idle the longest (below).
      if (this.held.size - this.lingeringDrives() >= this.concurrency) {
        // A freed slot pokes; the loop then leases whatever is runnable.
        this.woken = false;
        this.waitingForSlot = true;
        await this.wait(this.pollIntervalMs);
        this.waitingForSlot = false;
        continue;
      }
      let lease: Lease | null = null;
      /** The leased session, when the store answered it with the lease. */
      let session: StoredSession | undefined;
      /** The lease is to be taken by the drive's first commit. */
      let claim = false;
      this.woken = false;
      // A session whose lease this worker still keeps, and that has a message: no store call finds it.
      const kept = this.wantedKeptLease();
      if (kept) {
        if (this.held.size >= this.concurrency) this.endOneLinger();
        this.hold(kept.lease, undefined, false, kept.lapsesAt);
        continue;
      }
      const request = this.leaseRequest;
      try {
        if (this.store.findWork) {
          // Nothing written to find it: the lease rides in the drive's first commit.
          const found = await this.store.findWork({ ...request, skip: this.skipped() });
          if (found) {
            lease = { sessionId: found.sessionId, workerId: this.workerId, fence: found.fence + 1, expiresAt: 0 };
            session = found.session;
            claim = true;
          }
        } else if (this.store.acquireLeaseWithSession) {
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
        if (lease && !claim && !this.dead) await this.store.releaseLease(lease).catch((e) => this.report(e));
        break;
      }
      if (lease) {
        if (this.held.size >= this.concurrency) this.endOneLinger();
        this.hold(lease, session, claim);
        continue;
      }
      await this.wait(this.pollIntervalMs);
    }
  }

  /** The sessions `findWork` passes over: those driven here, and those whose unclaimed drive failed lately. */
  private skipped(): string[] {
    const now = Date.now();
    for (const [sessionId, until] of this.failedUnclaimed) if (until <= now) this.failedUnclaimed.delete(sessionId);
    return [...this.held.keys(), ...this.failedUnclaimed.keys()];
  }

  /**
   * A kept lease (its drive ended `lapsed`) of a session that got a message since, with time left to
   * commit under it; taken out of `lapsed`. One about to expire is left to the timer at its expiry.
   */
  private wantedKeptLease(): Lapsed | null {
    const now = Date.now();
    for (const [sessionId, kept] of this.lapsed) {
      if (!kept.wanted || kept.lapsesAt - now < KEPT_LEASE_MARGIN_MS) continue;
      clearTimeout(kept.timer);
      this.lapsed.delete(sessionId);
      return kept;
    }
    return null;
  }

  private lingeringDrives(): number {
    let n = 0;
    for (const h of this.held.values()) if (h.lingeringSince !== null) n += 1;
    return n;
  }

  /** Ends the wait of the drive idle the longest under a kept lease, if one is: it frees its slot. */
  private endOneLinger(): void {
    let oldest: Held | null = null;
    for (const h of this.held.values()) {
      if (h.lingeringSince !== null && (oldest === null || h.lingeringSince < oldest.lingeringSince!)) oldest = h;
    }
    oldest?.linger.abort();
  }

  /**
   * Drives a session under `lease`: one granted, one to be claimed by the first commit (`claim`), or
   * one kept from an earlier drive until `keptUntil` (this process's clock).
   */
  private hold(lease: Lease, session?: StoredSession, claim = false, keptUntil?: number): void {
    const kept = this.lapsed.get(lease.sessionId);
    if (kept) {
      clearTimeout(kept.timer);
      this.lapsed.delete(lease.sessionId);
    }
    const controller = new AbortController();
    const entry: Held = {
      lease,
      claimed: !claim,
      controller,
      lingeringSince: null,
      lingeredAt: null,
      linger: new AbortController(),
      done: Promise.resolve(),
    };
    const renew = setInterval(() => void this.renew(entry), Math.max(10, Math.floor(this.leaseTtlMs / 3)));
    const drive = async (): Promise<DriveEnd> => {
      // A head this worker committed and the store answers unchanged is not parsed again.
      const stored = session
        ? this.headCache.parse(session, lease.sessionId, claim ? "findWork" : "acquireLeaseWithSession")
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
          entry.claimed = true;
        },
        ...(claim ? { claim: true } : {}),
        lingerMs: this.lingerMs,
        turnStartHoldMs: this.turnStartHoldMs,
        readToolHoldMs: this.readToolHoldMs,
        lingerSignal: entry.linger.signal,
        onLinger: (lingering) => {
          entry.lingeringSince = lingering ? Date.now() : null;
          if (lingering) entry.lingeredAt = entry.lingeringSince;
          // A loop waiting for a slot may lease other work in this one now. A loop that waits because
          // it found no work is woken by the next `work` notice instead: looking again now would find
          // nothing (a store call per turn once the limit's worth of drives idle under kept leases).
          if (lingering && this.waitingForSlot) this.poke();
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
    /** When (this process's clock) a lease kept for the session's next message expires, if the drive ended so. */
    let lapsesAt: number | null = null;
    (entry as { done: Promise<void> }).done = drive()
      .then((end) => {
        // The drive's last commit released the lease already; a claim never made holds nothing.
        released = end === "released" || !entry.claimed;
        // Another worker's claim came first: look for other work at once.
        if (end === "lost" && !entry.claimed) this.poke();
        // The lease expires by itself (a message that comes meanwhile is driven under it); a graceful
        // stop hands it back at once (below).
        if (end === "lapsed" && !this.stopping) {
          released = true;
          lapsesAt = (entry.lingeredAt ?? Date.now()) + this.lingerMs;
        }
        // A kept lease that expired before the drive's first commit: the session is taken anew once
        // the store sees it expired (the timer below).
        if (end === "lost" && keptUntil !== undefined && entry.extendedAt === undefined && !this.stopping) {
          released = true;
          lapsesAt = keptUntil;
        }
      })
      .catch((error) => {
        failed = true;
        if (!entry.claimed) this.failedUnclaimed.set(lease.sessionId, Date.now() + this.leaseTtlMs);
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
        // A message that came after the drive stopped waiting is taken once the lease has expired.
        if (lapsesAt !== null && !this.stopping) {
          const sessionId = lease.sessionId;
          const timer = setTimeout(
            () => {
              if (this.lapsed.get(sessionId)?.timer === timer) this.lapsed.delete(sessionId);
              this.poke();
            },
            Math.max(0, lapsesAt - Date.now()) + 5,
          );
          timer.unref?.();
          this.lapsed.set(sessionId, { lease: entry.lease, lapsesAt, timer, wanted: false });
        }
      });
    this.held.set(lease.sessionId, entry);
  }

  private async renew(entry: Held): Promise<void> {
    // A lease kept for the next message is left to expire: renewing it would keep it past its time.
    // One still to be claimed is not held yet.
    if (this.dead || entry.controller.signal.aborted || entry.lingeringSince !== null || !entry.claimed) return;
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

import pg, { type Notification, type Pool, type PoolClient } from "pg";
import type { InboxEntry, SessionEvent } from "@durable-agents/core";
import type { StoreNotification } from "@durable-agents/core/engine";

/** The `application_name` of the store's LISTEN connections. */
export const LISTENER_APPLICATION_NAME = "durable_agents_listener";

type Listener = (notification: StoreNotification) => void;

/** The batch a commit's notice carries: session, the batch's last seq, its time (as text), its events. */
interface CarriedBatch {
  readonly s: string;
  readonly l: number;
  readonly a: string;
  readonly e: readonly { readonly type: string; readonly data: unknown }[];
}

/**
 * Turns a NOTIFY payload of this store into a notification; null for anything else. A `batch:`
 * payload carries the commit's events (see the commit statement), which followers then use instead
 * of reading them; an `entry:` payload carries an enqueued inbox entry (see the enqueue statement),
 * which the drive of its session takes instead of reading the inbox.
 */
export function parsePayload(payload: string | undefined): StoreNotification | null {
  if (payload === "work") return { kind: "work" };
  if (payload?.startsWith("batch:")) return batchNotice(carried(payload));
  if (payload?.startsWith("entry:")) return entryNotice(carried(payload));
  const colon = payload?.indexOf(":") ?? -1;
  if (payload === undefined || colon < 0) return null;
  const kind = payload.slice(0, colon);
  const sessionId = payload.slice(colon + 1);
  if (kind === "inbox" || kind === "events") return { kind, sessionId };
  return null;
}

/** The JSON after a carrying payload's prefix (`batch:`, `entry:`); null when it is not JSON. */
function carried(payload: string): unknown {
  try {
    return JSON.parse(payload.slice(payload.indexOf(":") + 1));
  } catch {
    return null;
  }
}

function batchNotice(json: unknown): StoreNotification | null {
  const batch = json as CarriedBatch | null;
  if (typeof batch?.s !== "string" || !Number.isInteger(batch.l) || !Array.isArray(batch.e)) return null;
  // The batch row's time, written in UTC in PostgreSQL's ISO form whatever the writer's DateStyle and
  // TimeZone, read through pg's timestamptz parser as readEvents reads the column; a time it cannot
  // read makes the notice name the session only (the follower reads).
  const time = typeof batch.a === "string" ? (parseTimestamptz(batch.a) as unknown) : null;
  if (!(time instanceof Date) || Number.isNaN(time.getTime())) return { kind: "events", sessionId: batch.s };
  return { kind: "events", sessionId: batch.s, events: batchEvents(batch.l, time.toISOString(), batch.e) };
}

/** The inbox entry an enqueue's notice carries: session, the entry's seq, the entry as enqueued. */
interface CarriedEntry {
  readonly s: string;
  readonly q: number;
  readonly e: InboxEntry;
}

function entryNotice(json: unknown): StoreNotification | null {
  const entry = json as CarriedEntry | null;
  if (typeof entry?.s !== "string") return null;
  // An entry that is not what an enqueue writes makes the notice name the session only (the drive reads).
  if (!Number.isSafeInteger(entry.q) || entry.q < 1 || typeof entry.e !== "object" || entry.e === null)
    return { kind: "inbox", sessionId: entry.s };
  return { kind: "inbox", sessionId: entry.s, entries: [{ seq: entry.q, ...entry.e }] };
}

/**
 * The events of one batch (`event_batches` row, or a notice that carries one): seqs one per event,
 * ending with the batch's last seq, all at the batch's time.
 */
export function batchEvents(
  lastSeq: number,
  at: string,
  events: readonly { readonly type: string; readonly data: unknown }[],
): SessionEvent[] {
  let seq = lastSeq - events.length;
  return events.map((event) => ({ seq: ++seq, at, type: event.type, data: event.data }) as SessionEvent);
}

const parseTimestamptz = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, "text");

/**
 * One LISTEN connection per store, taken from the application's pool while anyone subscribes.
 * When the connection breaks (or a heartbeat query fails) it is dropped and taken again, with a
 * growing delay up to `heartbeatMs`; after every reconnect the subscribers get a `work` wake-up,
 * because notifications sent while the connection was down are gone.
 */
export class NotificationListener {
  private readonly listeners = new Set<Listener>();
  private client: PoolClient | null = null;
  private connecting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private beatInFlight = false;
  private retryDelayMs = 50;
  private closed = false;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly channel: string,
    private readonly heartbeatMs: number,
  ) {}

  subscribe(listener: Listener): () => void {
    if (this.closed) return () => {};
    this.listeners.add(listener);
    if (!this.client && !this.connecting && !this.retryTimer) this.connect(false);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * The attempt to open the LISTEN connection that is under way, if any. The store lets its own
   * statements wait for it, so a write made after `subscribe()` returned always wakes the
   * subscriber when the database is reachable.
   */
  pending(): Promise<void> | null {
    return this.connecting;
  }

  /** Resolves once a LISTEN connection is up (immediately when it is). */
  listening(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.connecting;
    this.drop();
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  private connect(reconnected: boolean): void {
    this.retryTimer = null;
    this.connecting = this.open(reconnected).finally(() => {
      this.connecting = null;
    });
  }

  private async open(reconnected: boolean): Promise<void> {
    let client: PoolClient | undefined;
    try {
      client = await this.pool.connect();
      client.on("error", this.onBroken);
      client.on("end", this.onBroken);
      client.on("notification", this.onNotification);
      // Named so an operator (or a test) can tell the LISTEN connections apart in pg_stat_activity.
      await client.query(`SET application_name = '${LISTENER_APPLICATION_NAME}'`);
      await client.query(`LISTEN ${this.channel}`);
    } catch {
      if (client) this.discard(client);
      this.scheduleRetry(true);
      return;
    }
    if (this.closed) {
      this.discard(client);
      return;
    }
    this.client = client;
    this.retryDelayMs = 50;
    this.heartbeat = setInterval(() => this.beat(), this.heartbeatMs);
    this.heartbeat.unref();
    for (const resolve of this.waiters.splice(0)) resolve();
    if (reconnected) this.emit({ kind: "work" });
  }

  /**
   * A connection can die without an error reaching us (a machine or a network gone): a heartbeat
   * that failed, or that is still unanswered when the next one is due, counts as a broken one.
   */
  private beat(): void {
    const client = this.client;
    if (!client) return;
    if (this.beatInFlight) {
      this.onBroken();
      return;
    }
    this.beatInFlight = true;
    client.query("SELECT 1").then(
      () => {
        if (this.client === client) this.beatInFlight = false;
      },
      () => {
        if (this.client === client) this.onBroken();
      },
    );
  }

  private readonly onNotification = (message: Notification): void => {
    if (message.channel !== this.channel) return;
    const notification = parsePayload(message.payload);
    if (notification) this.emit(notification);
  };

  private readonly onBroken = (): void => {
    if (!this.client) return;
    this.drop();
    this.scheduleRetry(false);
  };

  private scheduleRetry(grow: boolean): void {
    // After the application ended its pool there is nothing to reconnect with.
    if (this.closed || this.retryTimer || this.pool.ended) return;
    const delay = this.retryDelayMs;
    if (grow) this.retryDelayMs = Math.min(this.retryDelayMs * 2, this.heartbeatMs);
    this.retryTimer = setTimeout(() => this.connect(true), delay);
    this.retryTimer.unref();
  }

  private drop(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    this.beatInFlight = false;
    const client = this.client;
    this.client = null;
    if (client) this.discard(client);
  }

  /**
   * Closes the connection instead of returning it to the pool: a broken one is useless, and a
   * healthy one still LISTENs. Late errors of the closing connection are expected and ignored.
   */
  private discard(client: PoolClient): void {
    client.off("error", this.onBroken);
    client.off("end", this.onBroken);
    client.off("notification", this.onNotification);
    client.on("error", () => {});
    client.release(true);
  }

  private emit(notification: StoreNotification): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(notification);
      } catch {
        // A subscriber's failure is its own; the others still get the wake-up.
      }
    }
  }
}

/**
 * Wake-ups from other processes. A connection's `PRAGMA data_version` changes when any other
 * connection commits to the file, and costs no disk read: the watcher asks it every
 * `intervalMs` and, only when it moved, reads which sessions got new events or inbox entries (by
 * rowid, which only grows), whether a live lease holds those, and whether the work counter moved.
 * A notification lost to a crash is covered by the worker's own poll, as the store interface allows.
 */
import type { StoreNotification } from "@durable-agents/core/engine";
import type { Statements } from "./statements.js";

interface LastIds {
  events: number;
  inbox: number;
  work: number;
}

export class ChangeWatcher {
  private timer: NodeJS.Timeout | null = null;
  private dataVersion = -1;
  private last: LastIds = { events: 0, inbox: 0, work: 0 };

  constructor(
    private readonly statements: Statements,
    private readonly intervalMs: number,
    private readonly emit: (notification: StoreNotification) => void,
    /** Called when a look fails (the file is busy or closing); the next tick tries again. */
    private readonly onError: (error: unknown) => void,
    /** The store's clock (ms), against which a lease is live. */
    private readonly now: () => number,
  ) {}

  start(): void {
    if (this.timer) return;
    this.dataVersion = this.readDataVersion();
    this.last = this.statements.lastIds.get() as unknown as LastIds;
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One look; public so a test can make one without waiting for the timer. */
  tick(): void {
    try {
      const version = this.readDataVersion();
      if (version === this.dataVersion) return;
      this.dataVersion = version;
      const events = this.statements.newEvents.all(this.last.events) as { session_id: string; last: number }[];
      const inbox = this.statements.newInbox.all({ after: this.last.inbox, now: this.now() }) as {
        session_id: string;
        last: number;
        leased: number | null;
      }[];
      const work = (this.statements.lastIds.get() as unknown as LastIds).work;
      for (const row of events) this.emit({ kind: "events", sessionId: row.session_id });
      for (const row of inbox) this.emit({ kind: "inbox", sessionId: row.session_id });
      // `work` for an entry of a session no live lease holds (one that is held is its holder's: the
      // inbox notice), or when released work was counted.
      if (inbox.some((row) => row.leased !== 1) || work !== this.last.work) this.emit({ kind: "work" });
      // Only as far as what was read: a commit that lands between these reads also moves
      // data_version, so the next look reads it.
      this.last = {
        events: Math.max(this.last.events, ...events.map((row) => row.last)),
        inbox: Math.max(this.last.inbox, ...inbox.map((row) => row.last)),
        work,
      };
    } catch (error) {
      this.dataVersion = -1;
      this.onError(error);
    }
  }

  private readDataVersion(): number {
    return Number((this.statements.dataVersion.get() as { data_version: number }).data_version);
  }
}

/**
 * The histories of the sessions this process drove, kept between model steps. A drive records the
 * items each transition appends (by index, so that a replay that records them again changes
 * nothing), and a model step reads only what this process has not seen: after a restart, the
 * items from before the drive started, once, from the session object through the ingress. That
 * read is never journaled, so no step's journal holds the history.
 *
 * The server applies a drive's state writes as it receives them, a moment after the drive made
 * them: a read that finds fewer items than the head counts waits and reads again (`lagMs`).
 */
import { ContractViolationError, type HistoryItem } from "@durable-agents/core";

export type HistoryReader = (sessionId: string, offset: number) => Promise<HistoryItem[]>;

export interface SessionHistoriesOptions {
  /** Items kept in all; least recently used sessions are dropped first (default 50,000). */
  readonly maxItems?: number;
  /** How long a read waits for the session object to hold every item the head counts (ms, default 10,000). */
  readonly lagMs?: number;
}

export class SessionHistories {
  /** Each session's items by index (a hole is an item not read yet), with the length counted in `items`. */
  private readonly entries = new Map<string, { history: (HistoryItem | undefined)[]; counted: number }>();
  private items = 0;
  private readonly maxItems: number;
  private readonly lagMs: number;

  constructor(
    private readonly read: HistoryReader,
    options: SessionHistoriesOptions = {},
  ) {
    this.maxItems = options.maxItems ?? 50_000;
    this.lagMs = options.lagMs ?? 10_000;
  }

  /** Records `items` at `index` onwards (what a transition appended). */
  put(sessionId: string, index: number, items: readonly HistoryItem[]): void {
    if (items.length === 0) return;
    const history = this.history(sessionId);
    items.forEach((item, i) => {
      history[index + i] = item;
    });
    this.remember(sessionId, history);
  }

  /** The session's first `length` items, reading the ones this process does not have. */
  async load(sessionId: string, length: number, signal?: AbortSignal): Promise<HistoryItem[]> {
    const history = this.history(sessionId);
    const deadline = Date.now() + this.lagMs;
    for (let missing = firstMissing(history, length); missing < length; ) {
      const read = await this.read(sessionId, missing);
      read.forEach((item, i) => {
        history[missing + i] ??= item;
      });
      const next = firstMissing(history, length);
      if (next < length && next === missing) {
        if (Date.now() > deadline) {
          throw new ContractViolationError(
            "engine",
            `session "${sessionId}" counts ${length} history items, but its session object holds ${missing}`,
          );
        }
        if (signal?.aborted) throw signal.reason;
        // The session object has not applied the drive's last commit yet.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      missing = next;
    }
    this.remember(sessionId, history);
    return history.slice(0, length) as HistoryItem[];
  }

  private history(sessionId: string): (HistoryItem | undefined)[] {
    const entry = this.entries.get(sessionId);
    if (entry) return entry.history;
    const history: (HistoryItem | undefined)[] = [];
    this.entries.set(sessionId, { history, counted: 0 });
    return history;
  }

  private remember(sessionId: string, history: (HistoryItem | undefined)[]): void {
    const old = this.entries.get(sessionId);
    if (old) this.items -= old.counted;
    this.entries.delete(sessionId);
    this.entries.set(sessionId, { history, counted: history.length });
    this.items += history.length;
    for (const [id, entry] of this.entries) {
      if (this.items <= this.maxItems || id === sessionId) break;
      this.entries.delete(id);
      this.items -= entry.counted;
    }
  }
}

function firstMissing(history: readonly (HistoryItem | undefined)[], length: number): number {
  for (let i = 0; i < length; i++) if (history[i] === undefined) return i;
  return length;
}

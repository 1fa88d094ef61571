/**
 * A worker's cache of session histories. History is append-only and an item never changes once
 * stored, so a cached prefix stays valid: loading a session again reads only the items past it.
 * Least recently used sessions are dropped beyond `maxItems` items in all.
 */
import { ContractViolationError } from "./errors.js";
import type { HistoryItem } from "./schemas.js";
import type { SessionStore } from "./store.js";

export class HistoryCache {
  /** Each session's history with the length counted in `items` (the array may have grown since). */
  private readonly entries = new Map<string, { history: HistoryItem[]; counted: number }>();
  private items = 0;

  constructor(private readonly maxItems = 50_000) {}

  /**
   * The session's history of `length` items: the cached prefix plus what the store holds past it,
   * up to `length` (items a commit stored past it while the read was in flight are left to the
   * commit's caller, which appends them once the commit answers it). The returned array is the
   * cache's own: append to it only what a successful commit stored.
   * Throws `ContractViolationError` when the store holds fewer items than the head counts.
   */
  async load(store: SessionStore, sessionId: string, length: number): Promise<HistoryItem[]> {
    let history = this.entries.get(sessionId)?.history;
    if (history && history.length > length) history = undefined;
    if (!history) history = [];
    if (history.length < length) {
      const offset = history.length;
      const read = await store.readHistory(sessionId, offset);
      if (offset + read.length < length) {
        throw new ContractViolationError(
          "store",
          `session "${sessionId}" counts ${length} history items, but the store holds ${offset + read.length}`,
        );
      }
      // Another load of this array may have added some of these items while the read was in flight.
      if (history.length >= offset && history.length < length)
        history.push(...read.slice(history.length - offset, length - offset));
    }
    this.remember(sessionId, history);
    return history;
  }

  /**
   * The cached history when it holds exactly `length` items (the whole history), else null; reads
   * nothing. The returned array is the cache's own, as `load`'s.
   */
  whole(sessionId: string, length: number): HistoryItem[] | null {
    const history = this.entries.get(sessionId)?.history;
    if (!history || history.length !== length) return null;
    this.remember(sessionId, history);
    return history;
  }

  /** Drops the session's history (its array may hold items no commit stored). */
  forget(sessionId: string): void {
    const old = this.entries.get(sessionId);
    if (!old) return;
    this.entries.delete(sessionId);
    this.items -= old.counted;
  }

  private remember(sessionId: string, history: HistoryItem[]): void {
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

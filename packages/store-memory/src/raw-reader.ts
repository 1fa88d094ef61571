import type { RawStoreReader } from "@durable-agents/core/conformance";
import type { MemoryStore } from "./memory-store.js";

/** Reads a MemoryStore's records directly, for core's store conformance suite. */
export function memoryRawReader(store: MemoryStore): RawStoreReader {
  return {
    async session(sessionId) {
      const r = store.records.get(sessionId);
      if (!r) return null;
      return {
        sessionId: r.sessionId,
        agent: r.agent,
        version: r.version,
        fence: r.fence,
        leaseOwner: r.leaseOwner,
        leaseExpiresAt: r.leaseExpiresAt,
        runnable: r.runnable,
        inboxCursor: r.inboxCursor,
        head: JSON.parse(r.head),
      };
    },
    async history(sessionId) {
      return (store.records.get(sessionId)?.history ?? []).map((item) => JSON.parse(item));
    },
    async events(sessionId) {
      return (store.records.get(sessionId)?.events ?? []).map((e) => {
        const body = JSON.parse(e.body) as { type: string; data: unknown };
        return { seq: e.seq, type: body.type, data: body.data };
      });
    },
    async inbox(sessionId) {
      return (store.records.get(sessionId)?.inbox ?? []).map((i) => ({ seq: i.seq, dedupeKey: i.dedupeKey, entry: JSON.parse(i.entry) }));
    },
  };
}

/**
 * A drive and a store whose inbox notices carry their entry (`StoreNotification.entries`): the drive
 * that holds the session (its lease kept for the next message) takes the entry without reading the
 * inbox, and reads when a notice carries nothing or leaves a gap after its cursor. Either way every
 * entry is applied once, in order.
 */
import { describe, expect, it } from "vitest";
import { defineSession, type InboxItem, SessionClient, Worker } from "../src/index.js";
import type { StoreNotification } from "../src/engine.js";
import { MemoryStore, memoryRawReader, ScriptedRunner } from "../src/testing/index.js";
import { until } from "./support/until.js";

/** "own": the memory store's notices as they are (they carry their entry); "none": bare notices; "gap": every odd entry's notice lost. */
type Carry = "own" | "none" | "gap";

class InboxCountingStore extends MemoryStore {
  reads = 0;
  constructor(private readonly carry: Carry) {
    super();
  }
  override async readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]> {
    this.reads += 1;
    return super.readInbox(sessionId, afterSeq);
  }
  override subscribe(listener: (n: StoreNotification) => void): () => void {
    return super.subscribe((n) => {
      if (n.kind !== "inbox" || this.carry === "own") return listener(n);
      if (this.carry === "none") return listener({ kind: "inbox", sessionId: n.sessionId });
      const seq = n.entries?.[0]?.seq;
      if (seq !== undefined && seq % 2 === 0) listener(n);
    });
  }
}

/** Four messages: the first starts the session, the second comes alone, the last two back to back. */
async function fourMessages(carry: Carry) {
  const store = new InboxCountingStore(carry);
  const raw = memoryRawReader(store);
  const definition = defineSession({ name: "carry", runner: new ScriptedRunner({ tools: [] }) });
  // A poll far away: an entry whose notice is lost is found by the next notice's read, not by a poll.
  const worker = new Worker({
    store,
    sessions: [definition],
    lingerMs: 20_000,
    leaseTtlMs: 60_000,
    pollIntervalMs: 30_000,
  });
  worker.start();
  // Idle with every entry up to `cursor` applied (read from the records: the client's checks read the inbox too).
  const settled = (sessionId: string, cursor: number) =>
    until(async () => {
      const row = await raw.session(sessionId);
      return row?.inboxCursor === cursor && (row.head as { status: string }).status === "idle";
    });
  try {
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "carry", message: "say one" });
    await settled(sessionId, 1);
    const readsAfterFirst = store.reads;
    await client.sendMessage(sessionId, "say two");
    await settled(sessionId, 2);
    await client.sendMessage(sessionId, "say three");
    await client.sendMessage(sessionId, "say four");
    await settled(sessionId, 4);
    const history = await raw.history(sessionId);
    const user = (history as { display: { role: string; text: string } }[])
      .filter((h) => h.display.role === "user")
      .map((h) => h.display.text);
    const finals = (await raw.events(sessionId)).filter((e) => e.type === "turn_completed");
    return { user, turns: finals.length, reads: store.reads - readsAfterFirst };
  } finally {
    await worker.stop();
  }
}

describe("a drive and inbox notices that carry their entry", () => {
  it("takes carried entries without reading the inbox", async () => {
    const { user, turns, reads } = await fourMessages("own");
    expect(user).toEqual(["say one", "say two", "say three", "say four"]);
    expect(turns).toBe(4);
    expect(reads).toBe(0);
  });

  it("reads when notices carry nothing, and applies the same entries", async () => {
    const { user, turns, reads } = await fourMessages("none");
    expect(user).toEqual(["say one", "say two", "say three", "say four"]);
    expect(turns).toBe(4);
    expect(reads).toBeGreaterThanOrEqual(2);
  });

  it("reads when a notice leaves a gap after its cursor, and loses nothing", async () => {
    const { user, turns, reads } = await fourMessages("gap");
    expect(user).toEqual(["say one", "say two", "say three", "say four"]);
    expect(turns).toBe(4);
    // Entry 3's notice was lost; entry 4's carries only 4, so the drive read and found 3 too.
    expect(reads).toBe(1);
  });
});

/**
 * An enqueue's `inbox` notice, in the process that made it, carries the entry as `readInbox` reads
 * it: a worker of that process holding the session (its lease kept for the next message) takes each
 * message from its notice without reading the inbox, and every message is applied once, in order.
 */
import { defineSession, type InboxItem, SessionClient, Worker } from "@durable-agents/core";
import type { StoreNotification } from "@durable-agents/core/engine";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/index.js";
import { tempStoreDir } from "../src/testing/index.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("inbox notices in the writing process", () => {
  it("carry the entry as readInbox reads it, and spare the worker holding the session its inbox reads", async () => {
    const dir = tempStoreDir();
    const path = dir.file("carried-inbox.db");
    // The worker's store and the client's are two stores of this process on one file.
    const workerStore = new SqliteStore({ path });
    const clientStore = new SqliteStore({ path });
    cleanups.push(
      () => dir.remove(),
      () => workerStore.close(),
      () => clientStore.close(),
    );
    let reads = 0;
    const readInbox = workerStore.readInbox.bind(workerStore);
    workerStore.readInbox = (...args: Parameters<SqliteStore["readInbox"]>) => {
      reads += 1;
      return readInbox(...args);
    };
    const notices: StoreNotification[] = [];
    workerStore.subscribe((n) => notices.push(n));
    const definition = defineSession({ name: "carry", runner: new ScriptedRunner({ tools: [] }) });
    // A poll far away: each message is driven from its notice.
    const worker = new Worker({
      store: workerStore,
      sessions: [definition],
      lingerMs: 20_000,
      leaseTtlMs: 60_000,
      pollIntervalMs: 30_000,
    }).start();
    cleanups.push(() => worker.stop());
    const client = new SessionClient({ store: clientStore });
    const { sessionId } = await client.startSession({ agent: "carry", message: "say one" });
    await client.waitUntilIdle(sessionId);
    const before = reads;
    for (const text of ["say two", "say three", "say four"]) {
      await client.sendMessage(sessionId, text);
      await client.waitUntilIdle(sessionId);
    }
    expect(reads - before).toBe(0);
    const user = (await client.snapshot(sessionId)).messages.filter((item) => item.role === "user");
    expect(user.map((item) => item.text)).toEqual(["say one", "say two", "say three", "say four"]);
    // What a notice carried is what the inbox holds.
    const carried = notices.flatMap((n) =>
      n.kind === "inbox" && n.sessionId === sessionId && n.entries ? [...n.entries] : [],
    );
    const stored: InboxItem[] = await clientStore.readInbox(sessionId, 1);
    expect(carried).toEqual(stored);
  });
});

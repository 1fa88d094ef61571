/**
 * A commit's cost does not grow with the history: it appends rows and rewrites none. Measured in
 * pages, not time: with a reader holding the write-ahead log open (so no checkpoint resets it), the
 * log's growth per commit is exactly the pages that commit wrote.
 */
import { statSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import type { HistoryItem } from "@durable-agents/core";
import { newSessionHead } from "@durable-agents/core/engine";
import { afterEach, expect, it } from "vitest";
import { openTempSqliteStore, type TempSqliteStore } from "../src/testing/index.js";

let harness: TempSqliteStore | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

const item = (n: number): HistoryItem => ({
  item: { role: "user", content: `message ${n}: ${"lorem ipsum ".repeat(25)}` },
  display: { role: "user", text: `message ${n}` },
});

it("writes as many pages per commit at 1,000 history items as at 10", async () => {
  harness = openTempSqliteStore();
  const { store, path } = harness;
  const head = newSessionHead("s-grow", "agent", new Date().toISOString());
  await store.createSession({
    head,
    events: [],
    inbox: { entry: { kind: "message", text: "go", messageId: null }, dedupeKey: null },
  });
  const lease = (await store.acquireLease({ workerId: "w", ttlMs: 60_000, agents: ["agent"] }))!;
  let version = 1;
  let length = 0;
  const commitOne = async () => {
    length += 1;
    const result = await store.commit({
      sessionId: "s-grow",
      fence: lease.fence,
      expectedVersion: version,
      head: { ...head, inboxCursor: 1, historyLength: length },
      runnable: true,
      appendHistory: [item(length)],
      events: [
        { type: "step_started", data: { turnId: "turn-1", step: "RunModel", attempt: 1 } },
        { type: "message_queued", data: { text: `step ${length}`, position: 1 } },
      ],
    });
    version = result.version;
  };

  // Hold a read transaction open in another connection: the log can then only grow.
  const reader = new DatabaseSync(path, { readOnly: true });
  reader.exec("BEGIN");
  reader.prepare("SELECT count(*) FROM sessions").get();
  const pageSize = Number((reader.prepare("PRAGMA page_size").get() as { page_size: number }).page_size);
  const walBytes = () => statSync(`${path}-wal`).size;
  const pagesPerCommit = async (commits: number) => {
    const before = walBytes();
    for (let i = 0; i < commits; i++) await commitOne();
    return (walBytes() - before) / (pageSize + 24) / commits;
  };
  try {
    while (length < 10) await commitOne();
    const atTen = await pagesPerCommit(20);
    while (length < 1_000) await commitOne();
    const atThousand = await pagesPerCommit(20);
    console.log(`WAL pages per commit: ${atTen} at 10 history items, ${atThousand} at 1,000`);
    expect(atTen).toBeGreaterThan(0);
    expect(atThousand, `pages per commit: ${atTen} at 10 items, ${atThousand} at 1,000`).toBeLessThanOrEqual(
      atTen * 1.25 + 1,
    );
  } finally {
    reader.exec("COMMIT");
    reader.close();
  }
  expect(await store.readHistory("s-grow", length - 2)).toEqual([item(length - 1), item(length)]);
});

// A second process on the same store file, for the tests in ../processes.test.ts. It runs the
// built package (dist), reads one JSON command per line on stdin and writes one JSON line per
// result or notification on stdout.
import { existsSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { DatabaseSync } from "node:sqlite";

const { SqliteStore } = await import(new URL("../../dist/index.js", import.meta.url).href);
const [path] = process.argv.slice(2);
const store = new SqliteStore({ path, watchIntervalMs: 5 });
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

const commands = {
  subscribe: () => {
    store.subscribe((n) => send({ notification: n }));
    return "subscribed";
  },
  acquire: ({ workerId, ttlMs, agents }) => store.acquireLease({ workerId, ttlMs, agents }),
  commit: (commit) => store.commit(commit),
  release: (lease) => store.releaseLease(lease),
  readEvents: ({ sessionId }) => store.readEvents(sessionId, 0),
  // Holds the file's write lock for `ms` through a connection of its own, then commits.
  holdWriteLock: async ({ ms }) => {
    const db = new DatabaseSync(path);
    db.exec("BEGIN IMMEDIATE");
    send({ id: "lock", result: "locked" });
    await new Promise((resolve) => setTimeout(resolve, ms));
    db.exec("COMMIT");
    db.close();
    return "unlocked";
  },
  // Leases, consumes one inbox entry and releases, until no session of `agent` has work; reports
  // what it took, and when it started and ended (epoch milliseconds). With `meet`, a rendezvous
  // with another process draining the same sessions: after its first entry it writes the file
  // `meet.mine` and waits (at most 10 s) for the other process's `meet.theirs`, so both are
  // draining at the same moment before either takes a second entry.
  drain: async ({ workerId, agent, meet }) => {
    const startedAt = Date.now();
    const taken = [];
    for (;;) {
      const lease = await store.acquireLease({ workerId, ttlMs: 10_000, agents: [agent] });
      if (!lease) return { taken, startedAt, endedAt: Date.now() };
      const stored = await store.loadSession(lease.sessionId);
      const cursor = stored.head.inboxCursor;
      const [entry] = await store.readInbox(lease.sessionId, cursor);
      await store.commit({
        sessionId: lease.sessionId,
        fence: lease.fence,
        expectedVersion: stored.version,
        head: { ...stored.head, inboxCursor: entry.seq },
        runnable: false,
        events: [{ type: "message_queued", data: { text: `${workerId} took ${entry.seq}`, position: 1 } }],
      });
      await store.releaseLease(lease);
      taken.push(`${lease.sessionId}#${entry.seq}`);
      if (meet && taken.length === 1) {
        writeFileSync(meet.mine, workerId);
        const deadline = Date.now() + 10_000;
        while (!existsSync(meet.theirs)) {
          if (Date.now() > deadline) throw new Error(`${workerId}: the other process never took an entry`);
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      }
    }
  },
};

for await (const line of createInterface({ input: process.stdin })) {
  const { id, command, args } = JSON.parse(line);
  try {
    send({ id, result: (await commands[command](args)) ?? null });
  } catch (error) {
    send({ id, error: { code: error.code, message: error.message } });
  }
}
await store.close();

// Probe: how long after a store-postgres commit (or enqueue) answers its caller the same process
// hears the commit's NOTIFY through the store's LISTEN connection: the time a follower (or a worker)
// in the committing process waits for the echo of a write it has already seen succeed.
// usage: node probe/notice-lag.mjs [commits=300]
import { performance } from "node:perf_hooks";
import { newSessionHead } from "@durable-agents/core/engine";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import pg from "pg";

const n = Number(process.argv[2] ?? 300);
const server = await startPostgres({ fsync: true });
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
await migrate(pool, { schema: "probe" });
const store = new PostgresStore({ pool, schema: "probe" });
let waiting = null;
store.subscribe((notice) => {
  if (waiting && notice.kind === waiting.kind) {
    const w = waiting;
    waiting = null;
    w.resolve(performance.now());
  }
});
await store.listening();
await new Promise((r) => setTimeout(r, 300));
await store.createSession({
  head: newSessionHead("s", "a", new Date(0).toISOString()),
  events: [],
  inbox: { entry: { kind: "message", text: "hi", messageId: null }, dedupeKey: null },
});
const found = await store.acquireLease({ workerId: "w", ttlMs: 600_000, agents: ["a"] });
if (!found) throw new Error("no lease");
const lags = { events: [], inbox: [] };
const answers = { events: [], inbox: [] };
const version = 1;
for (let i = 0; i < n; i++) {
  for (const kind of ["events", "inbox"]) {
    const heard = new Promise((resolve) => {
      waiting = { kind, resolve };
    });
    const t0 = performance.now();
    if (kind === "events") {
      await store.commit({
        sessionId: "s",
        fence: found.fence,
        expectedVersion: version,
        events: [{ type: "text_delta", data: { turnId: "t", text: `delta ${i}` } }],
      });
    } else {
      await store.enqueue("s", { kind: "message", text: `m${i}`, messageId: null }, null);
    }
    const answered = performance.now();
    const at = await Promise.race([heard, new Promise((r) => setTimeout(() => r(null), 1000))]);
    if (at !== null) {
      lags[kind].push(at - answered);
      answers[kind].push(answered - t0);
    }
  }
}
const q = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(3);
};
for (const kind of ["events", "inbox"])
  console.log(
    `${kind}: ${lags[kind].length} heard; the write answered in p50 ${q(answers[kind], 0.5)} ms; its notice came p50 ${q(lags[kind], 0.5)} ms later (p90 ${q(lags[kind], 0.9)}, p99 ${q(lags[kind], 0.99)})`,
  );
await store.close();
await pool.end();
await server.stop();

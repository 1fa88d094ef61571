import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import pg from "pg";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";
const server = await startPostgres({ fsync: true });
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
await migrate(pool, { schema: "probe" });
const store = new PostgresStore({ pool, schema: "probe" });
let t = [];
let on = false;
for (const m of ["commit", "readInbox", "acquireLeaseWithSession", "enqueue"]) {
  const f = store[m].bind(store);
  store[m] = async (...a) => {
    const s = performance.now();
    try {
      return await f(...a);
    } finally {
      if (on) t.push([m + ">", s, performance.now()]);
    }
  };
}
const sub = store.subscribe.bind(store);
store.subscribe = (l) =>
  sub((n) => {
    if (on && n.kind !== "events") t.push(["notice " + n.kind, performance.now(), performance.now()]);
    l(n);
  });
const marks = new StepMarks();
const definition = defineSession({
  name: "peers",
  runner: markedScriptedRunner(marks),
  policies: { look_up: { effect: "read" } },
});
const worker = new Worker({ store, sessions: [definition] }).start();
const client = new SessionClient({ store, agents: ["peers"] });
await client.startSession({ agent: "peers", sessionId: "s" });
const rows = new Map();
async function turn(tag) {
  const after = (await store.loadSession("s")).lastEventSeq;
  const abort = new AbortController();
  marks.reset();
  t = [];
  const t0 = performance.now();
  await client.sendMessage("s", `call look_up {"key":"a${tag}"}\nthen\ncall look_up {"key":"b${tag}"}`);
  for await (const event of client.followEvents("s", { after, signal: abort.signal }))
    if (event.type === "turn_completed") break;
  abort.abort();
  const firstMark = marks.ends[0];
  const seen = new Map();
  for (const [name, s, e] of t) {
    if (s > firstMark) continue;
    const k = name + "#" + ((seen.get(name) ?? 0) + 1);
    seen.set(name, (seen.get(name) ?? 0) + 1);
    const v = rows.get(k) ?? [];
    v.push([s - t0, e - t0]);
    rows.set(k, v);
  }
  const v = rows.get("model step 1 end") ?? [];
  v.push([firstMark - t0, firstMark - t0]);
  rows.set("model step 1 end", v);
  await waitForIdleWorker(worker);
}
for (let i = 0; i < 10; i++) await turn("w" + i);
rows.clear();
on = true;
for (let i = 0; i < 40; i++) await turn("m" + i);
const med = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
for (const [k, v] of [...rows].sort((a, b) => med(a[1].map((x) => x[0])) - med(b[1].map((x) => x[0]))))
  console.log(
    k.padEnd(34),
    `n ${String(v.length).padStart(3)}  start ${med(v.map((x) => x[0])).toFixed(3)}  end ${med(v.map((x) => x[1])).toFixed(3)}`,
  );
await worker.stop();
await store.close();
await pool.end();
await server.stop();

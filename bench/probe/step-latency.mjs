// Probe: the peers row's session turn on store-postgres (ScriptedRunner: model, tool, model, tool,
// model; a follower as the peers row has), 60 turns: each store call's median latency (at the store
// and at pool.query), and each step's median time by its position in the turn. ASYNC=1 runs every
// connection with synchronous_commit = off, to see what the WAL flush costs a commit. The pool.query
// lines count every named statement per turn (the worker's findWork and the bench's reads included).
// usage: [HOLD=0] node probe/step-latency.mjs
import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import pg from "pg";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";
const server = await startPostgres({ fsync: true });
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
await migrate(pool, { schema: "probe" });
if (process.env.ASYNC) pool.on("connect", (c) => c.query("SET synchronous_commit = off"));
const qlat = new Map();
const q = pool.query.bind(pool);
pool.query = (cfg, ...rest) => {
  const t = performance.now();
  const r = q(cfg, ...rest);
  if (on && cfg?.name)
    r.then(
      () => {
        const v = qlat.get(cfg.name) ?? [];
        v.push(performance.now() - t);
        qlat.set(cfg.name, v);
      },
      () => {},
    );
  return r;
};
const store = new PostgresStore({ pool, schema: "probe" });
const lat = new Map();
let on = false;
for (const m of ["commit", "readInbox", "acquireLeaseWithSession", "enqueue", "loadSession", "readEvents"]) {
  const f = store[m].bind(store);
  store[m] = async (...a) => {
    const t = performance.now();
    try {
      return await f(...a);
    } finally {
      if (on) {
        const v = lat.get(m) ?? [];
        v.push(performance.now() - t);
        lat.set(m, v);
      }
    }
  };
}
const marks = new StepMarks();
const definition = defineSession({
  name: "peers",
  runner: markedScriptedRunner(marks),
  policies: { look_up: { effect: "read" } },
});
// HOLD sets the worker's turnStartHoldMs (0: every turn's start committed before its first model call).
const worker = new Worker({
  store,
  sessions: [definition],
  ...(process.env.HOLD === undefined ? {} : { turnStartHoldMs: Number(process.env.HOLD) }),
}).start();
const client = new SessionClient({ store, agents: ["peers"] });
await client.startSession({ agent: "peers", sessionId: "s" });
const stepTimes = [];
async function turn(tag) {
  const after = (await store.loadSession("s")).lastEventSeq;
  const abort = new AbortController();
  marks.reset();
  const t0 = performance.now();
  await client.sendMessage("s", `call look_up {"key":"a${tag}"}\nthen\ncall look_up {"key":"b${tag}"}`);
  for await (const event of client.followEvents("s", { after, signal: abort.signal }))
    if (event.type === "turn_completed") break;
  const t1 = performance.now();
  abort.abort();
  const ends = marks.ends;
  let prev = t0;
  for (let i = 0; i < ends.length; i++) {
    stepTimes.push([i, (i === ends.length - 1 ? t1 : ends[i]) - prev]);
    prev = ends[i];
  }
  await waitForIdleWorker(worker);
}
for (let i = 0; i < 10; i++) await turn(`w${i}`);
on = true;
for (let i = 0; i < 60; i++) await turn(`m${i}`);
on = false;
const med = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
for (const [m, v] of lat)
  console.log(m.padEnd(26), "n/turn", (v.length / 60).toFixed(2), "median ms", med(v).toFixed(3));
for (const [m, v] of qlat)
  console.log(
    "  pool.query",
    m.replace("durable_agents_probe_", "").padEnd(26),
    "n/turn",
    (v.length / 60).toFixed(2),
    "median ms",
    med(v).toFixed(3),
  );
for (let p = 0; p < 5; p++)
  console.log("step", p + 1, "median ms", med(stepTimes.filter(([i]) => i === p).map(([, t]) => t)).toFixed(3));
console.log("all steps median", med(stepTimes.map(([, t]) => t)).toFixed(3));
await worker.stop();
await store.close();
await pool.end();
await server.stop();

// Probe: the peers row's session turn (ScriptedRunner: model, tool, model, tool, model), 60 turns
// on store-postgres or store-memory: the median gap between consecutive marks from the first model
// call's end on (commit start and end, tool and model call start and end), so a step's time splits
// into the transition, the commit's round trip and the runner.
// usage: node probe/step-gaps.mjs [postgres|memory]
import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import pg from "pg";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";
const kind = process.argv[2] ?? "postgres";
let server, pool, store;
if (kind === "postgres") {
  server = await startPostgres({ fsync: true });
  pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
  await migrate(pool, { schema: "probe" });
  store = new PostgresStore({ pool, schema: "probe" });
} else store = new MemoryStore();
let ev = [];
const f = store.commit.bind(store);
store.commit = async (c) => {
  ev.push(["commit>", performance.now()]);
  try {
    return await f(c);
  } finally {
    ev.push(["commit<", performance.now()]);
  }
};
const marks = new StepMarks();
const inner = markedScriptedRunner(marks);
const runner = {
  ...inner,
  tools: inner.tools,
  describe: inner.describe,
  userItem: inner.userItem,
  runModel: async (i) => {
    ev.push(["model>", performance.now()]);
    try {
      return await inner.runModel(i);
    } finally {
      ev.push(["model<", performance.now()]);
    }
  },
  callTool: async (i) => {
    ev.push(["tool>", performance.now()]);
    try {
      return await inner.callTool(i);
    } finally {
      ev.push(["tool<", performance.now()]);
    }
  },
};
const definition = defineSession({ name: "peers", runner, policies: { look_up: { effect: "read" } } });
const worker = new Worker({ store, sessions: [definition] }).start();
const client = new SessionClient({ store, agents: ["peers"] });
await client.startSession({ agent: "peers", sessionId: "s" });
const gaps = new Map();
async function turn(tag, keep) {
  const after = (await store.loadSession("s")).lastEventSeq;
  const abort = new AbortController();
  ev = [];
  await client.sendMessage("s", `call look_up {"key":"a${tag}"}\nthen\ncall look_up {"key":"b${tag}"}`);
  for await (const event of client.followEvents("s", { after, signal: abort.signal }))
    if (event.type === "turn_completed") break;
  abort.abort();
  await waitForIdleWorker(worker);
  if (!keep) return;
  // from the first model's end on: each gap between consecutive marks, named by the pair
  const i0 = ev.findIndex(([n]) => n === "model<");
  const seen = new Map();
  for (let i = i0 + 1; i < ev.length; i++) {
    const k0 = `${ev[i - 1][0]} -> ${ev[i][0]}`;
    const n = (seen.get(k0) ?? 0) + 1;
    seen.set(k0, n);
    const k = `${k0} #${n}`;
    const v = gaps.get(k) ?? [];
    v.push(ev[i][1] - ev[i - 1][1]);
    gaps.set(k, v);
  }
}
for (let i = 0; i < 10; i++) await turn(`w${i}`, false);
for (let i = 0; i < 60; i++) await turn(`m${i}`, true);
const med = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
for (const [k, v] of gaps) if (v.length > 30) console.log(k.padEnd(28), med(v).toFixed(3));
await worker.stop();
await store.close?.();
await pool?.end();
await server?.stop();

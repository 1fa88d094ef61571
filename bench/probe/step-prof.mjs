// Probe: this process's CPU per step in the peers row's session turn (ScriptedRunner: model, tool,
// model, tool, model; a client following the events as the peers row does), on store-memory and
// store-postgres in turns, from one CPU profile: self time by package and the top functions, in ms
// per step. Where the PostgreSQL path's extra CPU goes.
// usage: node probe/step-prof.mjs [turns=40] [top=25]
import { Session } from "node:inspector/promises";
import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import pg from "pg";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";

const [turnsArg = "40", topArg = "25"] = process.argv.slice(2);
const turns = Number(turnsArg);
const server = await startPostgres({ fsync: true });
const pool = new pg.Pool(
  process.env.SOCKET
    ? { host: server.dir, port: server.port, user: "postgres", database: "postgres", max: 10 }
    : { connectionString: server.connectionString, max: 10 },
);
pool.on("error", () => {});
await migrate(pool, { schema: "probe" });
const setups = {
  memory: new MemoryStore(),
  postgres: new PostgresStore({ pool, schema: "probe" }),
};
const rigs = {};
for (const [name, store] of Object.entries(setups)) {
  const definition = defineSession({
    name: "peers",
    runner: markedScriptedRunner(new StepMarks()),
    policies: { look_up: { effect: "read" } },
  });
  const worker = new Worker({ store, sessions: [definition] }).start();
  const client = new SessionClient({ store, agents: ["peers"] });
  await client.startSession({ agent: "peers", sessionId: "s" });
  rigs[name] = { worker, client, store };
}
async function turn(name, tag) {
  const { client, store } = rigs[name];
  const after = (await store.loadSession("s")).lastEventSeq;
  const abort = new AbortController();
  await client.sendMessage("s", `call look_up {"key":"a${tag}"}\nthen\ncall look_up {"key":"b${tag}"}`);
  for await (const event of client.followEvents("s", { after, signal: abort.signal }))
    if (event.type === "turn_completed") break;
  abort.abort();
  await waitForIdleWorker(rigs[name].worker);
}
for (let i = 0; i < 10; i++) for (const name of Object.keys(rigs)) await turn(name, `w${i}`);
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.setSamplingInterval", { interval: 100 });
const short = (url) =>
  url
    .replace(
      /^.*node_modules\/\.pnpm\/([^/]+)\/node_modules\/(.*)$/,
      (_, p, rest) => `${p.replace(/@[0-9][^_]*.*$/, "")}:${rest.split("/").slice(-1)[0]}`,
    )
    .replace(/^.*\/packages\/([^/]+)\/dist\/(.*)$/, "pkg:$1/$2")
    .replace(/^file:\/\/\/work\/[^/]+\//, "");
const pkgOf = (url) => {
  const s = short(url);
  if (s.startsWith("pkg:")) return s.split("/")[0];
  if (s === "") return "(native)";
  if (s.startsWith("node:")) return "node";
  return s.split(":")[0];
};
const agg = {};
// Blocks of 5 turns per store, in turns, each block its own profile (all of its samples but idle).
for (let block = 0; block < turns / 5; block++)
  for (const name of Object.keys(rigs)) {
    agg[name] ??= { pkg: new Map(), fn: new Map(), cpu: 0, turns: 0 };
    const a = agg[name];
    await session.post("Profiler.start");
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < 5; i++) await turn(name, `m${block}-${i}`);
    const cpu = process.cpuUsage(cpu0);
    const { profile } = await session.post("Profiler.stop");
    a.cpu += (cpu.user + cpu.system) / 1000;
    a.turns += 5;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    for (let i = 0; i < profile.samples.length; i++) {
      const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000;
      const node = nodes.get(profile.samples[i]);
      const fn = node.callFrame.functionName || "(anon)";
      if (fn === "(idle)") continue;
      const pkg = fn === "(garbage collector)" ? "(gc)" : fn === "(program)" ? "(program)" : pkgOf(node.callFrame.url);
      a.pkg.set(pkg, (a.pkg.get(pkg) ?? 0) + dt);
      const key = `${fn} ${short(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
      a.fn.set(key, (a.fn.get(key) ?? 0) + dt);
    }
  }
for (const { worker } of Object.values(rigs)) await worker.stop?.();
await setups.postgres.close?.();
await pool.end();
await server.stop();
const top = Number(topArg);
for (const [name, a] of Object.entries(agg)) {
  const steps = a.turns * 5;
  const total = [...a.pkg.values()].reduce((x, y) => x + y, 0);
  console.log(
    `== ${name}: ${a.turns} turns, process CPU ${(a.cpu / steps).toFixed(3)} ms/step, sampled non-idle ${(total / steps).toFixed(3)} ms/step`,
  );
  for (const [k, v] of [...a.pkg].sort((x, y) => y[1] - x[1]))
    console.log(`  ${(v / steps).toFixed(3).padStart(7)}  ${k}`);
  console.log("  -- functions (self)");
  for (const [k, v] of [...a.fn].sort((x, y) => y[1] - x[1]).slice(0, top))
    console.log(`  ${(v / steps).toFixed(3).padStart(7)}  ${k}`);
}

// Probe: the growth phase's turn (openai-agents adapter, bench workload) at the given history levels,
// with the time outside the runner per step split into: GC pauses outside the runner, time awaiting
// the store (union of intervals of store calls made outside the runner), and the rest.
// usage: node probe/growth-breakdown.mjs <memory|postgres|sqlite> [levels=10,100,1000] [sessions=10] [rounds=1]
// Its last line: the median time outside the runner per level, and its growth from the first to the last.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { PerformanceObserver } from "node:perf_hooks";
import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";
import { MemoryStore } from "@durable-agents/store-memory";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import pg from "pg";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { seedTurnSizes } from "../dist/growth-phase.js";
import { StepClock } from "../dist/step-clock.js";
import { TurnFollower } from "../dist/turn-follower.js";
import { AGENT_NAME, makeDefinition, seedScript, turnScript } from "../dist/workload.js";

const [kind = "memory", levelsArg = "10,100,1000", sessionsArg = "10", roundsArg = "1"] = process.argv.slice(2);
const levels = levelsArg.split(",").map(Number);
const sessions = Number(sessionsArg);
const rounds = Number(roundsArg);
let inner;
let serverTicks = async () => null;
let cleanup = async () => {};
if (kind === "memory") inner = new MemoryStore();
else if (kind === "postgres") {
  const server = await startPostgres({ fsync: true });
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
  pool.on("error", () => {});
  await migrate(pool, { schema: "probe" });
  inner = new PostgresStore({ pool, schema: "probe" });
  const { postgresCpuTicks } = await import("../dist/throughput-phase.js");
  // Ticks split: the client backends (our pool's connections) and the server's own processes.
  serverTicks = async () => {
    const all = await postgresCpuTicks(pool);
    const kinds = await pool.query("SELECT pid, backend_type FROM pg_stat_activity");
    const type = new Map(kinds.rows.map((r) => [r.pid, r.backend_type]));
    if (all) for (const pid of all.keys()) all.set(pid, { ticks: all.get(pid), type: type.get(pid) ?? "other" });
    return all;
  };
  cleanup = async () => {
    await inner.close();
    await pool.end();
    await server.stop();
  };
} else {
  const dir = tempStoreDir("probe-sqlite-");
  inner = new SqliteStore({ path: dir.file("growth.db") });
  cleanup = async () => inner.close();
}

// Intervals: runner calls, store calls (by method), GC pauses.
let recording = false;
const runnerIv = [];
const storeIv = new Map();
const gcIv = [];
const counts = new Map();
const store = new Proxy(inner, {
  get(target, prop) {
    const value = target[prop];
    if (typeof value !== "function") return value;
    if (prop === "subscribe" || prop === "close") return value.bind(target);
    return (...args) => {
      const start = performance.now();
      const result = value.apply(target, args);
      if (recording) counts.set(prop, (counts.get(prop) ?? 0) + 1);
      if (result && typeof result.then === "function")
        return result.finally(() => {
          if (!recording) return;
          if (!storeIv.has(prop)) storeIv.set(prop, []);
          storeIv.get(prop).push([start, performance.now()]);
        });
      return result;
    };
  },
});
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcIv.push([e.startTime, e.startTime + e.duration]);
}).observe({ entryTypes: ["gc"] });

const clock = new StepClock();
// RUNNER=scripted: core's ScriptedRunner (cheap, flat) instead of the openai-agents adapter.
const base =
  process.env.RUNNER === "scripted"
    ? defineSession({
        name: AGENT_NAME,
        runner: markedScriptedRunner(new StepMarks()),
        policies: { look_up: { effect: "read" } },
      })
    : makeDefinition(clock).definition;
const timed = (work) => async () => {
  const start = performance.now();
  try {
    return await work();
  } finally {
    if (recording) runnerIv.push([start, performance.now()]);
  }
};
// SPIN_MS / IDLE_MS: the runner's model call also spins the CPU / waits this long (no allocation).
const spinMs = Number(process.env.SPIN_MS ?? 0);
const idleMs = Number(process.env.IDLE_MS ?? 0);
// SPIN_FROM: spin / wait only in sessions with at least this many history items. CLONES: the model
// call also makes this many structured clones of the history it got (garbage, as the SDK makes).
const spinFrom = Number(process.env.SPIN_FROM ?? 0);
const clones = Number(process.env.CLONES ?? 0);
/** Keeps the last clone reachable, so the clones are not optimised away. */
export let sink = null;
// TOUCH_MB: the model call also writes this many MB of one preallocated buffer (memory traffic, no garbage).
const touchMb = Number(process.env.TOUCH_MB ?? 0);
const touched = touchMb > 0 ? new Float64Array((touchMb * 1024 * 1024) / 8) : null;
const padded = async (result, input) => {
  if (input.history.length < spinFrom) return result;
  for (let c = 0; c < clones; c++) sink = structuredClone(input.history);
  if (touched) for (let i = 0; i < touched.length; i += 8) touched[i] += 1;
  if (spinMs > 0) {
    const until = performance.now() + spinMs;
    while (performance.now() < until);
  }
  if (idleMs > 0) await new Promise((resolve) => setTimeout(resolve, idleMs));
  return result;
};
const definition = {
  ...base,
  runner: {
    tools: () => base.runner.tools(),
    userItem: (k, t) => base.runner.userItem(k, t),
    runModel: (input) => timed(async () => padded(await base.runner.runModel(input), input))(),
    callTool: (input) => timed(() => base.runner.callTool(input))(),
  },
};
const worker = new Worker({ store, sessions: [definition] }).start();
const client = new SessionClient({ store, agents: [AGENT_NAME] });

/** Length of the union of `ivs` clipped to [a, b], minus the parts inside `minus` intervals. */
function covered(ivs, a, b, minus = []) {
  const step = 0.005; // ms resolution by sampling (simple and robust)
  let total = 0;
  const clip = ivs.filter(([s, e]) => e > a && s < b).sort((x, y) => x[0] - y[0]);
  const out = minus.filter(([s, e]) => e > a && s < b);
  for (let t = a; t < b; t += step) {
    if (out.some(([s, e]) => t >= s && t < e)) continue;
    if (clip.some(([s, e]) => t >= s && t < e)) total += step;
  }
  return total;
}

const results = [];
try {
  // Seed every level's sessions first; then the measured turns take turns level by level (session i
  // of every level, then session i + 1, ...), so a change in the machine's load hits every level alike.
  clock.enabled = false;
  const byLevel = [];
  for (const [li, items] of levels.entries()) {
    const ids = Array.from({ length: sessions + 1 }, (_, s) => `b${li}-h${items}-s${s}`);
    const seeds = seedTurnSizes(items);
    const followers = new Map();
    for (const id of ids) {
      await client.startSession({ agent: AGENT_NAME, sessionId: id, message: seedScript(`${id}-p1`, seeds[0]) });
      for (let p = 1; p < seeds.length; p++) await client.sendMessage(id, seedScript(`${id}-p${p + 1}`, seeds[p]));
      followers.set(id, new TurnFollower(client, id));
    }
    await Promise.all(ids.map((id) => followers.get(id).turnEnd(`turn-${seeds.length}`, 300_000)));
    byLevel.push({ items, ids, seeds, followers, acc: [] });
  }
  await waitForIdleWorker(worker);
  clock.enabled = true;
  // PROBE_PROF=<file>: a CPU profile of the measured rounds, with every measured turn's window and
  // runner calls (in the profile's clock, µs) so that samples outside the runner can be told apart.
  const profFile = process.env.PROBE_PROF;
  const inspector = profFile ? new Session() : null;
  const windows = [];
  const toProfUs = (() => {
    const hr = Number(process.hrtime.bigint() / 1000n);
    const pn = performance.now();
    return (t) => hr + (t - pn) * 1000;
  })();
  if (inspector) {
    inspector.connect();
    await inspector.post("Profiler.enable");
    await inspector.post("Profiler.setSamplingInterval", { interval: 50 });
    await inspector.post("Profiler.start");
  }
  for (let r = 0; r < rounds; r++) {
    for (const level of byLevel)
      level.acc[r] = {
        serverMs: 0,
        nodeCpuMs: 0,
        steps: 0,
        outside: 0,
        gcOutside: 0,
        storeOutside: 0,
        byMethod: {},
        gcAll: 0,
      };
    for (let index = 0; index < sessions + 1; index++) {
      for (const { items, ids, seeds, followers, acc: accs } of byLevel) {
        const acc = accs[r];
        const id = ids[index];
        runnerIv.length = 0;
        storeIv.clear();
        clock.reset();
        const ticks0 = await serverTicks();
        const cpu0 = process.cpuUsage();
        recording = true;
        const start = performance.now();
        await client.sendMessage(id, turnScript(id, seeds.length + 1 + r, 2));
        const end = await followers.get(id).turnEnd(`turn-${seeds.length + 1 + r}`);
        recording = false;
        await waitForIdleWorker(worker);
        const cpu1 = process.cpuUsage(cpu0);
        const ticks1 = await serverTicks();
        if (ticks0 && ticks1)
          for (const [pid, v] of ticks1) {
            const d = (v.ticks - (ticks0.get(pid)?.ticks ?? v.ticks)) * 10;
            acc.serverMs += d;
            acc.serverBy ??= {};
            acc.serverBy[v.type] = (acc.serverBy[v.type] ?? 0) + d;
          }
        acc.nodeCpuMs += (cpu1.user + cpu1.system) / 1000;
        await new Promise((resolve) => setTimeout(resolve, 5)); // let GC entries arrive
        if (index === 0) {
          gcIv.length = 0;
          continue; // warm-up
        }
        if (process.env.TIMELINE && index === ids.length - 1 && r === rounds - 1) {
          const rows = [
            ...runnerIv.map((iv) => ["RUNNER", iv]),
            ...gcIv.map((iv) => ["gc", iv]),
            ...[...storeIv].flatMap(([m, ivs]) => ivs.map((iv) => [m, iv])),
          ]
            .filter(([, [a, b]]) => b > start && a < end)
            .sort((x, y) => x[1][0] - y[1][0]);
          console.log(`timeline ${items} items, turn ${(end - start).toFixed(2)} ms`);
          for (const [what, [a, b]] of rows)
            console.log(
              `  ${(a - start).toFixed(3).padStart(8)} ${(b - start).toFixed(3).padStart(8)} ${(b - a).toFixed(3).padStart(7)} ${what}`,
            );
        }
        if (inspector)
          windows.push({
            items,
            start: toProfUs(start),
            end: toProfUs(end),
            runner: runnerIv.map(([a, b]) => [toProfUs(a), toProfUs(b)]),
          });
        const runnerMs = covered(runnerIv, start, end);
        acc.steps += 5;
        acc.outside += end - start - runnerMs;
        acc.gcOutside += covered(gcIv, start, end, runnerIv);
        acc.gcAll += covered(gcIv, start, end);
        gcIv.length = 0;
        const allStore = [...storeIv.values()].flat();
        acc.storeOutside += covered(allStore, start, end, runnerIv);
        for (const [m, ivs] of storeIv) acc.byMethod[m] = (acc.byMethod[m] ?? 0) + covered(ivs, start, end, runnerIv);
      }
    }
    for (const { items, acc: accs } of byLevel) {
      const acc = accs[r];
      const per = (x) => +(x / acc.steps).toFixed(3);
      results.push({
        items,
        round: r,
        outsideMs: per(acc.outside),
        serverCpuMs: per(acc.serverMs),
        nodeCpuMs: per(acc.nodeCpuMs),
        serverBy: Object.fromEntries(Object.entries(acc.serverBy ?? {}).map(([k, v]) => [k, per(v)])),
        gcOutsideMs: per(acc.gcOutside),
        gcAllMs: per(acc.gcAll),
        storeOutsideMs: per(acc.storeOutside),
        restMs: per(acc.outside - acc.gcOutside - acc.storeOutside),
        byMethod: Object.fromEntries(Object.entries(acc.byMethod).map(([k, v]) => [k, per(v)])),
      });
    }
  }
  if (inspector) {
    const { profile } = await inspector.post("Profiler.stop");
    writeFileSync(profFile, JSON.stringify({ profile, windows }));
  }
  for (const { followers } of byLevel) await Promise.all([...followers.values()].map((f) => f.stop()));
} finally {
  await worker.stop();
  await cleanup();
}
console.log(JSON.stringify({ store: kind, sessions, rounds, callsPerTurn: Object.fromEntries(counts) }));
for (const r of results) console.log(JSON.stringify(r));
// The summary: per level, the median over the rounds of the time outside the runner per step, and its
// growth from the first level to the last (the target's "flat" figure). With an even number of rounds the
// median is the upper of the two middle values.
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const outside = levels.map((items) => median(results.filter((r) => r.items === items).map((r) => r.outsideMs)));
const growth = ((outside.at(-1) / outside[0] - 1) * 100).toFixed(1);
console.log(
  `outside the runner, ms per step (median of ${rounds} rounds): ${levels.map((l, i) => `${l} items ${outside[i]}`).join(", ")}; growth ${growth} %`,
);

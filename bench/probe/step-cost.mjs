// Probe (not part of the bench run): where the CPU of a model step goes, store-memory through the
// OpenAI Agents adapter next to the raw `@openai/agents` SDK, in one process. It runs the overhead
// phase's workload (bench/src/durable-phase.ts on a MemoryStore and bench/src/raw-sdk-phase.ts, one
// session each in turns, as `pnpm bench` does) and prints:
//   - the model-step median of each phase, their ratio (the issue-17 target: <= 1.3) and this
//     process's CPU per step of each (over the measured sessions), as the bench computes them;
//   - with a CPU profile (PROF=1, the default; it slows everything, so its timings are not the
//     bench's): CPU per model step and per step by owner (the first frame, up the stack, that is in
//     the SDK, the adapter, core's driver / machine / client / schemas, the store, the bench's model
//     and follower; node built-ins, zod and other libraries count for the frame that called them),
//     split by the kind of leaf (JS of the owner itself, JSON, zlib, crypto, zod, ...), with GC on
//     its own line; then the top functions by self and by inclusive time.
// A model step is the bench's: from the end of the previous step (the tool's execute, or the turn's
// message being sent) to the end of the model call (the last one: until the follower saw the turn end).
//
// usage (build first: `pnpm build`):
//   cd bench && ../node_modules/.bin/node probe/step-cost.mjs [sessions=20] [turns=5] [warmup=3]
//   PROF=0 ...        timings only (no profiler), for A/B runs
//   PROF_US=100 ...   sampling interval in µs (default 100)
//   TOP=25 ...        functions listed per table
//   PROF_OUT=<file>   also writes the profile and the turns' step bounds (profile clock, µs) as JSON
//   OUTSIDE=1 ...     the memory phase's tables count only the samples outside runner calls
//   POS=2 ...         the model-step tables count only that step of the turn (0, 2, 4: first, middle, last)
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { MemoryStore } from "@durable-agents/store-memory";
import { DurablePhase } from "../dist/durable-phase.js";
import { RawSdkPhase } from "../dist/raw-sdk-phase.js";
import { summarize } from "../dist/stats.js";
import { stepsPerTurn } from "../dist/workload.js";

const [sessionsArg = "20", turnsArg = "5", warmupArg = "3"] = process.argv.slice(2);
const size = {
  sessions: Number(sessionsArg),
  turns: Number(turnsArg),
  toolCalls: 2,
  warmupSessions: Number(warmupArg),
};
const profiling = process.env.PROF !== "0";
const top = Number(process.env.TOP ?? 25);
const perTurn = stepsPerTurn(size.toolCalls);
// POS=0|2|4: the model-step tables count only that step of the turn (0: the first, from the message).
const onlyPos = process.env.POS === undefined ? null : Number(process.env.POS);

// The profile's clock is hrtime in µs; performance.now() is mapped onto it.
const toProfUs = (() => {
  const hr = Number(process.hrtime.bigint() / 1000n);
  const pn = performance.now();
  return (t) => hr + (t - pn) * 1000;
})();

/** Records every measured turn's step bounds (turn start, the step marks, turn end) of a phase. */
function recordTurns(phase, name, windows) {
  const clock = phase.clock;
  const stepTimes = clock.stepTimes.bind(clock);
  clock.stepTimes = (start, end, steps) => {
    if (recordTurns.measuring)
      windows.push({ phase: name, bounds: [start, ...clock.marks.slice(0, -1), end].map(toProfUs) });
    return stepTimes(start, end, steps);
  };
}
recordTurns.measuring = false;

const raw = new RawSdkPhase(size);
const memory = new DurablePhase(new MemoryStore(), size, "mem");
const windows = [];
recordTurns(raw, "raw", windows);
recordTurns(memory, "memory", windows);

// The memory phase's runner calls (runModel, callTool), timed: a model step's time splits into the
// part inside the runner (adapter, SDK, model) and the part outside it (core, store, client).
const runnerCalls = [];
for (const definition of memory.worker.served.values()) {
  const runner = definition.runner;
  for (const name of ["runModel", "callTool"]) {
    const call = runner[name].bind(runner);
    runner[name] = async (input) => {
      const start = performance.now();
      try {
        return await call(input);
      } finally {
        if (recordTurns.measuring) runnerCalls.push([start, performance.now()]);
      }
    };
  }
}

const inspector = profiling ? new Session() : null;
try {
  for (let s = 0; s < size.warmupSessions + size.sessions; s++) {
    const measured = s >= size.warmupSessions;
    if (measured && s === size.warmupSessions && inspector) {
      inspector.connect();
      await inspector.post("Profiler.enable");
      await inspector.post("Profiler.setSamplingInterval", { interval: Number(process.env.PROF_US ?? 100) });
      await inspector.post("Profiler.start");
    }
    recordTurns.measuring = measured;
    await raw.session(s, measured);
    await memory.session(s, measured);
  }
} finally {
  await memory.stop();
}
const profile = inspector ? (await inspector.post("Profiler.stop")).profile : null;

const figures = (result) => {
  const model = summarize(result.stepMs.filter((_, i) => (i % perTurn) % 2 === 0));
  const at = (pos) => summarize(result.stepMs.filter((_, i) => i % perTurn === pos)).median;
  const positions = Array.from({ length: perTurn }, (_, pos) => at(pos));
  return { modelMedian: model.median, positions, cpuPerStep: result.cpuMs / result.steps };
};
const r = figures(raw.result());
const m = figures(memory.result());
const f = (x, d = 3) => x.toFixed(d);
console.log(
  `${size.sessions} sessions x ${size.turns} turns x ${size.toolCalls} tool calls (${size.warmupSessions} warm-up), profiler ${profiling ? "on" : "off"}`,
);
console.log(
  `model step median ms: raw ${f(r.modelMedian)}  memory ${f(m.modelMedian)}  ratio ${f(m.modelMedian / r.modelMedian, 2)}`,
);
console.log(
  `CPU ms per step:      raw ${f(r.cpuPerStep)}  memory ${f(m.cpuPerStep)}  ratio ${f(m.cpuPerStep / r.cpuPerStep, 2)}`,
);
console.log(
  `median ms by step of the turn (model, tool, model, ...): raw ${r.positions.map((x) => f(x)).join(" ")}  memory ${m.positions.map((x) => f(x)).join(" ")}`,
);
// Per model step of the memory phase: the time inside runner calls and outside them.
const split = {};
{
  const turns = windows.filter((w) => w.phase === "memory");
  const calls = runnerCalls.map(([a, b]) => [toProfUs(a), toProfUs(b)]);
  const inside = [[], [], []];
  const outside = [[], [], []];
  for (const w of turns) {
    for (let pos = 0; pos < perTurn; pos += 2) {
      const a = w.bounds[pos];
      const b = w.bounds[pos + 1];
      let ins = 0;
      for (const [s0, e0] of calls) if (e0 > a && s0 < b) ins += Math.min(b, e0) - Math.max(a, s0);
      inside[pos / 2].push(ins / 1000);
      outside[pos / 2].push((b - a - ins) / 1000);
    }
  }
  const med = (xs) => summarize(xs).median;
  split.inside = inside.map(med);
  split.outside = outside.map(med);
  console.log(
    `memory model steps 1, 2, 3 of the turn, median ms inside the runner: ${inside.map((x) => f(med(x))).join(" ")}; outside it (core, store, client): ${outside.map((x) => f(med(x))).join(" ")}`,
  );
}
console.log(
  `RESULT ${JSON.stringify({ rawModel: r.modelMedian, memModel: m.modelMedian, modelRatio: m.modelMedian / r.modelMedian, rawCpu: r.cpuPerStep, memCpu: m.cpuPerStep, cpuRatio: m.cpuPerStep / r.cpuPerStep, rawPos: r.positions, memPos: m.positions, ...split })}`,
);
if (!profile) process.exit(0);
if (process.env.PROF_OUT) writeFileSync(process.env.PROF_OUT, JSON.stringify({ profile, windows }));

// ---- attribution ----
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const CORE_DRIVER =
  /\/(session-driver|tool-step|coalescer|worker|history-cache|turn-signals|stored-session|reconcile-step|engine|runner|tool-context|retry)\.js$/;
/** The owner category of a frame's URL, or null for frames that count for their caller. */
function ownerOf(url) {
  if (url.includes("/node_modules/.pnpm/@openai+agents")) return "sdk";
  if (url.includes("/packages/openai-agents/dist/testing/")) return "model (ScriptedModel)";
  if (url.includes("/packages/openai-agents/dist/")) return "adapter";
  // store-memory re-exports core's test store; the ScriptedModel uses core's scripted rules.
  if (url.includes("/packages/core/dist/testing/memory-store")) return "store";
  if (url.includes("/packages/core/dist/testing/")) return "model (ScriptedModel)";
  if (url.includes("/packages/core/dist/")) {
    if (/\/machine(\/|\.js)/.test(url)) return "core machine";
    if (CORE_DRIVER.test(url)) return "core driver";
    if (/\/client\.js$/.test(url)) return "core client";
    if (/\/(schemas|store-input|policy|fingerprint|definition)\.js$/.test(url)) return "core schemas/policy";
    return "core other";
  }
  if (url.includes("/packages/store-memory/dist/")) return "store";
  if (/\/bench\/dist\//.test(url)) return "bench (model/follower)";
  return null;
}
function leafKind(node) {
  const { functionName: name, url } = node.callFrame;
  if (ownerOf(url)) return "own JS";
  if (url.includes("/zod@") || url.includes("/zod/")) return "zod";
  if (url.startsWith("node:zlib") || name.toLowerCase().includes("zlib") || name === "gzipSync") return "zlib";
  if (url.startsWith("node:internal/crypto") || url.startsWith("node:crypto")) return "crypto";
  if (url === "" && /stringify|parse|JSON/.test(name)) return "JSON";
  if (url === "" && /structuredClone/.test(name)) return "structuredClone";
  if (url === "") return `builtin`;
  if (url.startsWith("node:")) return "node lib";
  return "other lib";
}
const frameKey = (n) =>
  `${n.callFrame.functionName || "(anon)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
function short(url) {
  return url
    .replace(
      /^.*node_modules\/\.pnpm\/([^/]+)\/node_modules\/(.*)$/,
      (_, p, rest) => `${p.split("_")[0].replace(/@[0-9][^@]*$/, "")}/${rest.split("/").slice(-2).join("/")}`,
    )
    .replace(/^.*\/packages\/([^/]+)\/dist\/(.*)$/, "$1/$2")
    .replace(/^.*\/bench\/dist\//, "bench/");
}

windows.sort((a, b) => a.bounds[0] - b.bounds[0]);
// OUTSIDE=1: the memory phase's samples inside runner calls are left out (what core, the store and the client cost).
const outsideOnly = process.env.OUTSIDE === "1";
const callIvs = runnerCalls.map(([a, b]) => [toProfUs(a), toProfUs(b)]).sort((x, y) => x[0] - y[0]);
let ci = 0;
function insideRunner(t) {
  while (ci < callIvs.length && callIvs[ci][1] < t) ci++;
  for (let j = ci; j < callIvs.length && callIvs[j][0] <= t; j++) if (t < callIvs[j][1]) return true;
  return false;
}
const acc = new Map(); // phase -> { kind: { owner|leaf: us }, self, incl }
const bucket = (phase) => {
  if (!acc.has(phase))
    acc.set(phase, { model: new Map(), all: new Map(), self: new Map(), incl: new Map(), modelUs: 0, allUs: 0 });
  return acc.get(phase);
};
const add = (map, k, v) => map.set(k, (map.get(k) ?? 0) + v);
let t = profile.startTime;
let wi = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  const dt = profile.timeDeltas[i + 1] ?? 0; // a sample stands for the time until the next one
  while (wi < windows.length && windows[wi].bounds.at(-1) < t) wi++;
  const w = windows[wi];
  if (!w || t < w.bounds[0]) continue;
  const node = byId.get(profile.samples[i]);
  const name = node.callFrame.functionName;
  if (name === "(idle)") continue;
  // which step of the turn: 0, 2, 4 are model steps
  let step = 0;
  while (step < w.bounds.length - 2 && t >= w.bounds[step + 1]) step++;
  const isModel = step % 2 === 0 && (onlyPos === null || step === onlyPos);
  if (outsideOnly && w.phase === "memory" && insideRunner(t)) continue;
  let owner;
  let leaf;
  if (name === "(garbage collector)") {
    owner = "GC";
    leaf = "";
  } else if (name === "(program)") {
    owner = "(program)";
    leaf = "";
  } else {
    leaf = leafKind(node);
    let id = node.id;
    owner = "node (no owner on the stack)";
    while (id !== undefined) {
      const o = ownerOf(byId.get(id).callFrame.url);
      if (o) {
        owner = o;
        break;
      }
      id = parent.get(id);
    }
  }
  const b = bucket(w.phase);
  const key = leaf ? `${owner} | ${leaf}` : owner;
  add(b.all, owner, dt);
  add(b.all, key, 0);
  b.allUs += dt;
  if (isModel) {
    add(b.model, owner, dt);
    add(b.model, `  ${key}`, dt);
    b.modelUs += dt;
    add(b.self, frameKey(node), dt);
    const seen = new Set();
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const n = byId.get(id);
      if (!ownerOf(n.callFrame.url)) continue;
      const k = frameKey(n);
      if (seen.has(k)) continue;
      seen.add(k);
      add(b.incl, k, dt);
    }
  }
}
const modelSteps = (phase) =>
  windows.filter((w) => w.phase === phase).length * (onlyPos === null ? Math.ceil(perTurn / 2) : 1);
const allSteps = (phase) => windows.filter((w) => w.phase === phase).length * perTurn;
for (const [phase, b] of acc) {
  const ms = modelSteps(phase);
  const per = (us, n) => (us / 1000 / n).toFixed(4);
  console.log(
    `\n== ${phase}: sampled CPU ${per(b.modelUs, ms)} ms per model step (${ms} model steps), ${per(b.allUs, allSteps(phase))} ms per step (all ${allSteps(phase)} steps)`,
  );
  console.log("  per model step, by owner (and leaf kind):");
  const owners = [...b.model].filter(([k]) => !k.startsWith("  ")).sort((x, y) => y[1] - x[1]);
  for (const [o, us] of owners) {
    console.log(`${per(us, ms).padStart(9)}  ${o}`);
    for (const [k, v] of [...b.model].filter(([k]) => k.startsWith(`  ${o} |`)).sort((x, y) => y[1] - x[1]))
      console.log(`${per(v, ms).padStart(17)}  ${k.slice(o.length + 5)}`);
  }
  console.log("  per step (all steps), by owner:");
  for (const [o, us] of [...b.all].filter(([k]) => !k.includes(" | ")).sort((x, y) => y[1] - x[1]))
    console.log(`${per(us, allSteps(phase)).padStart(9)}  ${o}`);
  console.log(`  model steps, top ${top} functions by self time (ms per model step):`);
  for (const [k, us] of [...b.self].sort((x, y) => y[1] - x[1]).slice(0, top))
    console.log(`${per(us, ms).padStart(9)}  ${k}`);
  console.log(`  model steps, top ${top} functions of ours/the SDK by inclusive time (ms per model step):`);
  for (const [k, us] of [...b.incl].sort((x, y) => y[1] - x[1]).slice(0, top))
    console.log(`${per(us, ms).padStart(9)}  ${k}`);
}
// One line of JSON for scripts: ms per model step by owner, per phase.
console.log(
  `OWNERS ${JSON.stringify(Object.fromEntries([...acc].map(([phase, b]) => [phase, Object.fromEntries([...b.model].filter(([k]) => !k.startsWith("  ")).map(([k, us]) => [k, us / 1000 / modelSteps(phase)]))])))}`,
);
// Where the memory phase's model step spends more than the raw SDK's: the functions whose self and
// inclusive time per model step differ most between the two phases.
const rawB = acc.get("raw");
const memB = acc.get("memory");
if (rawB && memB) {
  for (const what of ["self", "incl"]) {
    const keys = new Set([...rawB[what].keys(), ...memB[what].keys()]);
    const diff = [...keys].map((k) => [
      k,
      (memB[what].get(k) ?? 0) / 1000 / modelSteps("memory") - (rawB[what].get(k) ?? 0) / 1000 / modelSteps("raw"),
    ]);
    console.log(
      `\n== memory minus raw, ${what === "self" ? "self" : "inclusive"} time per model step, top ${top} (ms)`,
    );
    for (const [k, d] of diff.sort((x, y) => Math.abs(y[1]) - Math.abs(x[1])).slice(0, top))
      console.log(`${d.toFixed(4).padStart(9)}  ${k}`);
  }
}

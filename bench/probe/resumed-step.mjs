// Probe (not part of the bench run): the adapter's runModel alone, without core or a store: a turn of
// the bench workload (two tool calls, one per response) on a history of earlier turns, step by step
// through OpenAIAgentsRunner (first step, resumed steps from the live state), timed per step, with an
// optional CPU profile of the resumed steps only (self time per function, top 40).
// usage: cd bench && ../node_modules/.bin/node probe/resumed-step.mjs [rounds=300] [history turns=3]
//   PROF=1 ...   profile the resumed steps (slower; its timings are not the unprofiled ones)
//   PROF_OUT=<file> with PROF=1: also writes the profile and the resumed steps' windows (µs) as JSON
//   CALLERS=<text> with PROF=1: the functions whose key holds <text> are listed with their callers
import { Session } from "node:inspector/promises";
import { OpenAIAgentsRunner } from "@durable-agents/openai-agents";
import { StepClock } from "../dist/step-clock.js";
import { TimedModel } from "../dist/timed-model.js";
import { makeAgent, turnScript } from "../dist/workload.js";

const [roundsArg = "300", turnsArg = "3"] = process.argv.slice(2);
const rounds = Number(roundsArg);
const clock = new StepClock();
clock.enabled = false;
const runner = new OpenAIAgentsRunner(makeAgent(clock, true), { model: new TimedModel(clock) });
const step = (history, turnStart, runState, outcomes) => ({
  sessionId: "p",
  turnId: `t${turnStart}`,
  modelStep: 1,
  history,
  turnStart,
  runState,
  outcomes,
  joined: [],
  signal: new AbortController().signal,
  emit: () => {},
});
async function turn(history, key) {
  const turnStart = history.length;
  history.push(runner.userItem("message", turnScript(key, 1, 2)));
  const times = [];
  let t = performance.now();
  let result = await runner.runModel(step(history, turnStart, null, []));
  times.push(performance.now() - t);
  while (result.kind === "tool_calls") {
    const outcomes = [];
    for (const call of result.calls) {
      const r = await runner.callTool({
        sessionId: "p",
        turnId: "t",
        toolCallId: call.toolCallId,
        name: call.name,
        arguments: call.arguments,
        attempt: 1,
        idempotencyKey: "k",
        signal: new AbortController().signal,
      });
      outcomes.push({
        toolCallId: call.toolCallId,
        name: call.name,
        status: "succeeded",
        text: r.output,
        output: r.output,
      });
    }
    t = performance.now();
    if (resumedHook) resumedHook(true);
    result = await runner.runModel(step(history, turnStart, result.runState, outcomes));
    if (resumedHook) resumedHook(false);
    times.push(performance.now() - t);
  }
  history.push(...result.items);
  return times;
}
let resumedHook = null;
const history = [];
for (let i = 0; i < Number(turnsArg); i++) await turn(history, `seed${i}`);
const base = history.length;
const all = [[], [], []];
for (let r = 0; r < 30; r++) {
  history.length = base;
  await turn(history, `warm${r}`);
}
let inspector = null;
const windows = [];
if (process.env.PROF === "1") {
  inspector = new Session();
  inspector.connect();
  await inspector.post("Profiler.enable");
  await inspector.post("Profiler.setSamplingInterval", { interval: 100 });
  await inspector.post("Profiler.start");
  const hr0 = Number(process.hrtime.bigint() / 1000n);
  const pn0 = performance.now();
  resumedHook = (on) => {
    const us = hr0 + (performance.now() - pn0) * 1000;
    if (on) windows.push([us, Infinity]);
    else windows.at(-1)[1] = us;
  };
}
for (let r = 0; r < rounds; r++) {
  history.length = base;
  const times = await turn(history, `r${r}`);
  times.forEach((x, i) => {
    all[i].push(x);
  });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `history ${base} items; runModel median ms: first ${median(all[0]).toFixed(3)}, resumed (tool calls) ${median(all[1]).toFixed(3)}, resumed (final) ${median(all[2]).toFixed(3)}`,
);
if (inspector) {
  const { profile } = await inspector.post("Profiler.stop");
  if (process.env.PROF_OUT) {
    const { writeFileSync } = await import("node:fs");
    const turns = windows.map(([a, b]) => ({ phase: "resumed", bounds: [a, b] }));
    writeFileSync(process.env.PROF_OUT, JSON.stringify({ profile, windows: turns }));
  }
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  let t = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const dt = profile.timeDeltas[i + 1] ?? 0;
    if (!windows.some(([a, b]) => t >= a && t < b)) continue;
    const n = byId.get(profile.samples[i]);
    if (n.callFrame.functionName === "(idle)") continue;
    let k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`;
    if (process.env.CALLERS && k.includes(process.env.CALLERS)) {
      const chain = [];
      for (let id = parent.get(n.id); id !== undefined && chain.length < 6; id = parent.get(id)) {
        const c = byId.get(id).callFrame;
        chain.push(`${c.functionName || "(anon)"} ${c.url.split("/").slice(-1)[0]}:${c.lineNumber + 1}`);
      }
      k += ` < ${chain.join(" < ")}`;
    }
    self.set(k, (self.get(k) ?? 0) + dt);
    total += dt;
  }
  const per = (us) => (us / 1000 / windows.length).toFixed(4);
  console.log(`resumed steps: ${windows.length}, sampled ${per(total)} ms each; self time per step:`);
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(per(us).padStart(9), k);
}

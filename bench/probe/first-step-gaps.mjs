// Probe (not part of the bench run): where a turn's model steps spend their time, the overhead
// phase's workload through the OpenAI Agents adapter (one session at a time, a follower), next to
// the raw SDK's sessions of the same workload in turns with them in one process. Every store call and
// runner call is stamped (start and end), and the model call's start (`model>`); for every model step
// of the turn it prints the median time from the step's start (the message sent, or the previous
// tool body's end) to each mark that follows it, up to the model call's end (the last model step:
// up to the turn's end, `TURN_END`, as the follower sees it). At the end: the store calls made while
// a measured turn ran (the client's, the follower's and the worker's), per turn, by method.
// usage: cd bench && [STORE=sqlite|postgres] ../node_modules/.bin/node probe/first-step-gaps.mjs [sessions=40] [turns=5]
//   STORE=sqlite: a SqliteStore (synchronous FULL) in a temporary folder instead of the MemoryStore
//   STORE=postgres: a PostgresStore on a private PostgreSQL (startPostgres, fsync on)
import { Runner } from "@openai/agents";
import { SessionClient, Worker } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import pg from "pg";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { StepClock } from "../dist/step-clock.js";
import { TurnFollower } from "../dist/turn-follower.js";
import { TimedModel } from "../dist/timed-model.js";
import { AGENT_NAME, makeAgent, makeDefinition, turnScript } from "../dist/workload.js";

const [sessionsArg = "40", turnsArg = "5"] = process.argv.slice(2);
let log = null;
const stamp = (what) => log?.push([what, performance.now()]);
const kind = process.env.STORE ?? "memory";
const dir = kind === "sqlite" ? tempStoreDir("first-step-gaps-") : null;
let server;
let pool;
let inner;
if (kind === "postgres") {
  server = await startPostgres({ fsync: true });
  pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
  await migrate(pool, { schema: "probe" });
  inner = new PostgresStore({ pool, schema: "probe" });
} else inner = dir ? new SqliteStore({ path: dir.file("probe.db"), synchronous: "full" }) : new MemoryStore();
const store = new Proxy(inner, {
  get(target, key) {
    const value = Reflect.get(target, key);
    if (typeof value !== "function" || typeof key !== "string" || key === "constructor") return value;
    return (...args) => {
      stamp(`${key}>`);
      const r = value.apply(target, args);
      if (r && typeof r.then === "function") return r.finally(() => stamp(`${key}<`));
      stamp(`${key}<`);
      return r;
    };
  },
});
const clock = new StepClock();
const { definition, model } = makeDefinition(clock);
const gsr = model.getStreamedResponse.bind(model);
model.getStreamedResponse = (request) => {
  stamp("model>");
  return gsr(request);
};
const runner = definition.runner;
for (const name of ["runModel", "callTool"]) {
  const f = runner[name].bind(runner);
  runner[name] = async (input) => {
    stamp(`${name}>`);
    try {
      let given = input;
      if (name === "runModel" && process.env.X_SIGNAL) given = { ...given, signal: new AbortController().signal };
      if (name === "runModel" && process.env.X_CLONE)
        given = { ...given, history: given.history.map((entry) => JSON.parse(JSON.stringify(entry))) };
      return await f(given);
    } finally {
      stamp(`${name}<`);
    }
  };
}
const origMark = clock.mark.bind(clock);
clock.mark = () => {
  stamp("STEP_END");
  origMark();
};
const worker = new Worker({ store, sessions: [definition] }).start();
const client = new SessionClient({ store, agents: [AGENT_NAME] });
const perStep = [new Map(), new Map(), new Map()];
// The raw SDK (no durability) on the same workload, a session of it before each durable session:
// its step starts are the message and the tool bodies' ends, as for the durable steps.
const rawClock = new StepClock();
const rawModel = new TimedModel(rawClock);
const rawGsr = rawModel.getStreamedResponse.bind(rawModel);
rawModel.getStreamedResponse = (request) => {
  stamp("model>");
  return rawGsr(request);
};
const rawRunner = new Runner({ model: rawModel, tracingDisabled: true });
const rawAgent = makeAgent(rawClock, false);
rawClock.mark = () => stamp("STEP_END");
const rawSteps = [new Map(), new Map(), new Map()];
async function rawSession(s) {
  let history = [];
  for (let t = 1; t <= Number(turnsArg); t++) {
    log = [];
    const start = performance.now();
    const message = { role: "user", content: turnScript(`r-s${s}`, t, 2), type: "message" };
    const result = await rawRunner.run(rawAgent, [...history, message], { stream: true });
    for await (const _ of result) {
    }
    await result.completed;
    log.push(["TURN_END", performance.now()]);
    history = result.history;
    const entries = log;
    log = null;
    if (s >= 3) record(rawSteps, entries, start);
  }
}
function record(into, entries, start) {
  const steps = [[]];
  for (const e of entries) {
    steps.at(-1).push(e);
    if (e[0] === "STEP_END") steps.push([]);
  }
  for (const [k, pos] of [0, 2, 4].entries()) {
    // The last model step runs on to the turn's end (the run returned; the follower saw the turn end).
    const step = pos === 4 ? [...steps[4], ...(steps[5] ?? [])] : steps[pos];
    const t0 = pos === 0 ? start : steps[pos - 1].at(-1)[1];
    const counts = new Map();
    for (const [what, at] of step) {
      const n = (counts.get(what) ?? 0) + 1;
      counts.set(what, n);
      const key = n > 1 ? `${what}#${n}` : what;
      const list = into[k].get(key) ?? [];
      list.push(at - t0);
      into[k].set(key, list);
    }
  }
}
/** Store calls made while a measured turn ran (the client's, the follower's and the worker's), by method. */
const storeCalls = { first: { turns: 0, calls: new Map() }, later: { turns: 0, calls: new Map() } };
for (let s = 0; s < Number(sessionsArg) + 3; s++) {
  await rawSession(s);
  const sessionId = `p-s${s}`;
  await waitForIdleWorker(worker);
  await client.startSession({ agent: AGENT_NAME, sessionId });
  const follower = new TurnFollower(client, sessionId);
  for (let t = 1; t <= Number(turnsArg); t++) {
    clock.reset();
    log = [];
    const start = performance.now();
    log.push(["SEND", start]);
    await client.sendMessage(sessionId, turnScript(sessionId, t, 2));
    await follower.turnEnd(`turn-${t}`);
    log.push(["TURN_END", performance.now()]);
    const entries = log;
    log = null;
    if (s >= 3) {
      record(perStep, entries, start);
      const into = t === 1 ? storeCalls.first : storeCalls.later;
      into.turns += 1;
      for (const [what] of entries) {
        if (!what.endsWith(">") || ["runModel>", "callTool>", "model>"].includes(what)) continue;
        into.calls.set(what.slice(0, -1), (into.calls.get(what.slice(0, -1)) ?? 0) + 1);
      }
    }
  }
  await follower.stop();
}
await waitForIdleWorker(worker);
await worker.stop();
await inner.close();
dir?.remove();
await pool?.end();
await server?.stop();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [label, steps] of [
  ["raw SDK", rawSteps],
  [`store-${kind}`, perStep],
])
  for (const [k, m] of steps.entries()) {
    console.log(`${label}, model step ${k + 1}: median ms from the step's start to each mark (n)`);
    const rows = [...m].map(([what, xs]) => [what, median(xs), xs.length]).sort((a, b) => a[1] - b[1]);
    for (const [what, ms, n] of rows) console.log(`  ${ms.toFixed(3).padStart(7)}  ${what} (${n})`);
  }
for (const [which, { turns, calls }] of Object.entries(storeCalls)) {
  const list = [...calls].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${name} ${(n / turns).toFixed(2)}`);
  console.log(
    `store calls per turn, a session's ${which === "first" ? "first turn" : "later turns"} (${turns}): ${list.join(", ")}`,
  );
}

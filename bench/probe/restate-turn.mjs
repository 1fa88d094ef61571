// Probe: one Restate session at 10 history items, a few turns of the Restate row's script
// (model, tool, model, tool, model) with a follower open: the drive's journal entries of a turn by
// type, the invocations a turn makes by handler, and CPU per turn of this process and the server.
// NOFOLLOW=1: no follower (the turn ends at its last step's mark); PROF=1: a CPU profile of this
// process (endpoint and client) over the timed turns, self time by package and top functions.
// usage: node probe/restate-turn.mjs [turns]
import http2 from "node:http2";
import { readFileSync } from "node:fs";
import { defineSession, SessionClient } from "@durable-agents/core";
import { RestateSessionStore, restateSessions } from "@durable-agents/engine-restate";
import {
  freePort,
  queryRestate,
  quietLogger,
  registerDeployment,
  startRestateServer,
} from "@durable-agents/engine-restate/testing";
import * as restate from "@restatedev/restate-sdk";
import { Session } from "node:inspector/promises";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";
import { ownCpuMs } from "../dist/stats.js";

const turns = Number(process.argv[2] ?? 20);
const marks = new StepMarks();
const definition = defineSession({
  name: "bench",
  runner: markedScriptedRunner(marks),
  policies: { look_up: { effect: "read" } },
});
const server = await startRestateServer();
const cpu = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
};
const endpoint = http2.createServer();
try {
  const engine = restateSessions({
    sessions: [definition],
    ingressUrl: server.ingressUrl,
    prefix: "bench",
    ...(process.env.NORET ? {} : { engineOptions: { journalRetention: { hours: 1 } } }),
  });
  const paths = new Map();
  let countPaths = false;
  endpoint.on("stream", (_s, h) => {
    if (!countPaths) return;
    const k = String(h[":path"]).replace(/\?.*$/, "");
    paths.set(k, (paths.get(k) ?? 0) + 1);
  });
  endpoint.on("request", restate.createEndpointHandler({ services: engine.services, logger: quietLogger }));
  const port = await freePort();
  await new Promise((r) => endpoint.listen(port, "127.0.0.1", r));
  await registerDeployment(server.adminUrl, `http://127.0.0.1:${port}`);
  const store = new RestateSessionStore({ url: server.ingressUrl, prefix: "bench" });
  const client = new SessionClient({ store });
  const { sessionId } = await client.startSession({ agent: "bench" });
  for (let i = 0; i < 3; i++) {
    await client.sendMessage(sessionId, `fill ${i}`);
    await client.waitUntilIdle(sessionId);
  }
  const text = (t) => `call look_up {"key":"a${t}"}\nthen\ncall look_up {"key":"b${t}"}`;
  const ends = [];
  let waiter = null;
  const abort = new AbortController();
  const after = (await store.loadSession(sessionId)).lastEventSeq;
  if (!process.env.NOFOLLOW)
    void (async () => {
      for await (const e of client.followEvents(sessionId, { after, signal: abort.signal })) {
        if (e.type === "turn_completed") {
          if (waiter) waiter(performance.now());
          else ends.push(performance.now());
          waiter = null;
        }
      }
    })().catch(() => {});
  const nextEnd = () => (ends.length ? Promise.resolve(ends.shift()) : new Promise((r) => (waiter = r)));
  const count = async () =>
    queryRestate(
      server.adminUrl,
      `SELECT target_service_name AS s, target_handler_name AS h, count(*) AS n FROM sys_invocation GROUP BY target_service_name, target_handler_name`,
    );
  const before = await count();
  const turnMs = [];
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  if (process.env.PROF) await session.post("Profiler.start");
  countPaths = true;
  let own = ownCpuMs();
  let srv = cpu(server.pid);
  const mids = [];
  const lasts = [];
  const firsts = [];
  for (let t = 0; t < turns; t++) {
    marks.reset();
    const started = performance.now();
    await client.sendMessage(sessionId, text(t));
    if (process.env.NOFOLLOW) {
      // No follower: the turn is timed to its last step's end.
      while (marks.ends.length < 5) await new Promise((r) => setTimeout(r, 2));
      turnMs.push(marks.ends[4] - started);
      await new Promise((r) => setTimeout(r, 100));
    } else {
      const ended = await nextEnd();
      turnMs.push(ended - started);
      lasts.push(ended - marks.ends[4]);
      firsts.push(marks.ends[0] - started);
    }
    for (let i = 1; i < 5; i++) mids.push(marks.ends[i] - marks.ends[i - 1]);
  }
  if (lasts.length > 0)
    console.log(
      `first step (message sent -> first mark) median ${[...firsts].sort((a, b) => a - b)[firsts.length >> 1].toFixed(2)} ms; last step (last mark -> turn_completed at the follower) median ${[...lasts].sort((a, b) => a - b)[lasts.length >> 1].toFixed(2)} ms`,
    );
  console.log(`middle steps (mark to mark) median ${[...mids].sort((a, b) => a - b)[mids.length >> 1].toFixed(2)} ms`);
  own = ownCpuMs() - own;
  countPaths = false;
  console.log("endpoint requests per turn:");
  for (const [k, v] of paths) console.log(`  ${k}: ${(v / turns).toFixed(2)}`);
  if (process.env.PROF) {
    const { profile } = await session.post("Profiler.stop");
    const short = (url) =>
      url
        .replace(
          /^.*node_modules\/\.pnpm\/([^/]+)\/node_modules\/(.*)$/,
          (_, p, rest) => `${p.replace(/@[0-9][^_]*.*$/, "")}:${rest.split("/").slice(-1)[0]}`,
        )
        .replace(/^.*\/packages\/([^/]+)\/dist\/(.*)$/, "pkg:$1/$2");
    const pkg = new Map(),
      fn = new Map();
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    for (let i = 0; i < profile.samples.length; i++) {
      const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000;
      const node = nodes.get(profile.samples[i]);
      const f = node.callFrame.functionName || "(anon)";
      if (f === "(idle)") continue;
      const s = short(node.callFrame.url);
      const k =
        f === "(garbage collector)"
          ? "(gc)"
          : f === "(program)"
            ? "(program)"
            : s.startsWith("pkg:")
              ? s.split("/")[0]
              : s === ""
                ? "(native)"
                : s.startsWith("node:")
                  ? "node"
                  : s.split(":")[0];
      pkg.set(k, (pkg.get(k) ?? 0) + dt);
      const key = `${f} ${s}:${node.callFrame.lineNumber + 1}`;
      fn.set(key, (fn.get(key) ?? 0) + dt);
    }
    console.log("self ms per turn by package:");
    for (const [k, v] of [...pkg].sort((x, y) => y[1] - x[1]))
      console.log(`  ${(v / turns).toFixed(2).padStart(6)}  ${k}`);
    console.log("top functions (self ms per turn):");
    for (const [k, v] of [...fn].sort((x, y) => y[1] - x[1]).slice(0, 30))
      console.log(`  ${(v / turns).toFixed(2).padStart(6)}  ${k}`);
  }
  srv = cpu(server.pid) - srv;
  await new Promise((r) => setTimeout(r, 300));
  const afterCount = await count();
  console.log(
    `turn ms median ${turnMs.sort((a, b) => a - b)[turns >> 1].toFixed(1)}; CPU per turn: this process ${(own / turns).toFixed(1)} ms, server ${(srv / turns).toFixed(1)} ms`,
  );
  console.log("invocations per turn (kept in sys_invocation; journalRetention 0 ones are gone):");
  for (const row of afterCount) {
    const was = before.find((b) => b.s === row.s && b.h === row.h)?.n ?? 0;
    console.log(`  ${row.s}.${row.h}: ${((row.n - was) / turns).toFixed(2)}`);
  }
  const drive = await queryRestate(
    server.adminUrl,
    `SELECT id FROM sys_invocation WHERE target_handler_name = 'drive' AND target_service_key = '${sessionId}' ORDER BY created_at DESC LIMIT 1`,
  );
  const rows = await queryRestate(
    server.adminUrl,
    `SELECT entry_type AS t, name, raw_length AS b FROM sys_journal WHERE id = '${drive[0].id}' ORDER BY "index"`,
  );
  const by = new Map();
  for (const r of rows) {
    const k = r.t;
    const v = by.get(k) ?? { n: 0, b: 0 };
    v.n++;
    v.b += Number(r.b);
    by.set(k, v);
  }
  console.log(`the last drive's journal: ${rows.length} entries`);
  for (const [k, v] of by) console.log(`  ${k}: ${v.n} entries, ${v.b} bytes`);
  if (process.env.LIST) for (const r of rows) console.log(`    ${r.t} ${r.name ?? ""} ${r.b}`);
  abort.abort();
  await store.close();
} finally {
  await new Promise((r) => endpoint.close(() => r()));
  await server.stop();
}

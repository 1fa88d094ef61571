// Probe: two builds of engine-restate side by side in one process, on one restate-server and one
// endpoint, turns in alternation (A, B, A, B, ...): the Restate row's session turn (model, tool,
// model, tool, model) with a follower per variant, as the row runs it. A is
// packages/engine-restate/dist-a (copy a build there first), B the current dist.
// usage: node probe/restate-ab.mjs [turns per variant=40] [history items=10]
import http2 from "node:http2";
import { defineSession, SessionClient } from "@durable-agents/core";
import * as B from "@durable-agents/engine-restate";
import { freePort, quietLogger, registerDeployment, startRestateServer } from "@durable-agents/engine-restate/testing";
import * as restate from "@restatedev/restate-sdk";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";

const A = await import(new URL("../../packages/engine-restate/dist-a/index.js", import.meta.url).href);
const [turnsArg = "40", sizeArg = "10"] = process.argv.slice(2);
const turns = Number(turnsArg);
const marks = new StepMarks();
const definition = defineSession({
  name: "bench",
  runner: markedScriptedRunner(marks),
  policies: { look_up: { effect: "read" } },
});
const server = await startRestateServer();
const endpoint = http2.createServer();
const variants = { A: { lib: A, prefix: "va" }, B: { lib: B, prefix: "vb" } };
const services = [];
for (const v of Object.values(variants)) {
  v.engine = v.lib.restateSessions({ sessions: [definition], ingressUrl: server.ingressUrl, prefix: v.prefix });
  services.push(...v.engine.services);
}
endpoint.on("request", restate.createEndpointHandler({ services, logger: quietLogger }));
const port = await freePort();
await new Promise((r) => endpoint.listen(port, "127.0.0.1", r));
await registerDeployment(server.adminUrl, `http://127.0.0.1:${port}`);
const text = (t) => `call look_up {"key":"a${t}"}\nthen\ncall look_up {"key":"b${t}"}`;
for (const [name, v] of Object.entries(variants)) {
  v.store = new v.lib.RestateSessionStore({ url: server.ingressUrl, prefix: v.prefix });
  v.client = new SessionClient({ store: v.store });
  v.sessionId = (await v.client.startSession({ agent: "bench" })).sessionId;
  let history = 0;
  while (history < Number(sizeArg)) {
    await v.client.sendMessage(v.sessionId, `fill ${history}`);
    await v.client.waitUntilIdle(v.sessionId);
    history = (await v.client.snapshot(v.sessionId)).messages.length;
  }
  v.ends = [];
  v.waiter = null;
  v.abort = new AbortController();
  const after = (await v.store.loadSession(v.sessionId)).lastEventSeq;
  void (async () => {
    for await (const e of v.client.followEvents(v.sessionId, { after, signal: v.abort.signal })) {
      if (e.type !== "turn_completed") continue;
      if (v.waiter) v.waiter(performance.now());
      else v.ends.push(performance.now());
      v.waiter = null;
    }
  })().catch(() => {});
  v.steps = [];
  v.turnMs = [];
  console.log(`${name}: session ${v.sessionId} filled to ${history}`);
}
const nextEnd = (v) => (v.ends.length ? Promise.resolve(v.ends.shift()) : new Promise((r) => (v.waiter = r)));
for (let t = 0; t < 2 * turns + 6; t++) {
  const v = Object.values(variants)[t % 2];
  marks.reset();
  const started = performance.now();
  await v.client.sendMessage(v.sessionId, text(t));
  const ended = await nextEnd(v);
  if (t < 6) continue;
  const bounds = [started, ...marks.ends.slice(0, 4), ended];
  v.steps.push(bounds.slice(1).map((e, i) => e - bounds[i]));
  v.turnMs.push(ended - started);
}
const q = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
for (const [name, v] of Object.entries(variants)) {
  const all = v.steps.flat();
  const mid = v.steps.flatMap((s) => s.slice(1, 4));
  console.log(
    `${name}: step median ${q(all, 0.5).toFixed(2)} | middle p50 ${q(mid, 0.5).toFixed(2)} p75 ${q(mid, 0.75).toFixed(2)} p90 ${q(mid, 0.9).toFixed(2)} | by position ${[
      0, 1, 2, 3, 4,
    ]
      .map((i) =>
        q(
          v.steps.map((s) => s[i]),
          0.5,
        ).toFixed(1),
      )
      .join(" ")} | turn ${q(v.turnMs, 0.5).toFixed(1)}`,
  );
  v.abort.abort();
  await v.store.close();
}
await new Promise((r) => endpoint.close(() => r()));
await server.stop();

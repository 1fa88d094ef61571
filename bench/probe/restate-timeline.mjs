// Probe: the timeline of a Restate session turn, the way the bench's Restate row runs it (one
// follower open, a bare handler's turn right after each session turn): when each invocation's
// stream opens (+) and closes (-) at the endpoint, each step's mark (mark1..5, bmark for the bare
// handler's steps) and when the follower sees turn_completed, in ms after the message is sent
// (medians over the timed turns; "(n)": in how many turns it happened).
// usage: node probe/restate-timeline.mjs [turns=20]
import http2 from "node:http2";
import { defineSession, SessionClient } from "@durable-agents/core";
import { RestateSessionStore, restateSessions } from "@durable-agents/engine-restate";
import { freePort, quietLogger, registerDeployment, startRestateServer } from "@durable-agents/engine-restate/testing";
import * as restate from "@restatedev/restate-sdk";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";

const turns = Number(process.argv[2] ?? 20);
const marks = new StepMarks();
const definition = defineSession({
  name: "bench",
  runner: markedScriptedRunner(marks),
  policies: { look_up: { effect: "read" } },
});
const bare = restate.object({
  name: "benchBareSteps",
  handlers: {
    run: async (ctx, req) => {
      for (const s of req.sizes)
        await ctx.run("step", () => {
          log?.push([performance.now(), "bmark"]);
          return "x".repeat(s);
        });
      return 1;
    },
  },
  options: { journalRetention: 0 },
});
const server = await startRestateServer();
const endpoint = http2.createServer();
let log = null;
const t0 = () => performance.now();
endpoint.on("stream", (s, h) => {
  if (!log) return;
  const k = String(h[":path"]).replace(/\?.*$/, "").split("/").slice(-1)[0];
  const l = log;
  l.push([t0(), `+${k}`]);
  s.on("close", () => l.push([t0(), `-${k}`]));
});
const engine = restateSessions({
  sessions: [definition],
  ingressUrl: server.ingressUrl,
  prefix: "bench",
  engineOptions: { journalRetention: { hours: 1 } },
});
endpoint.on("request", restate.createEndpointHandler({ services: [...engine.services, bare], logger: quietLogger }));
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
let waiter = null;
const abort = new AbortController();
const after = (await store.loadSession(sessionId)).lastEventSeq;
void (async () => {
  for await (const e of client.followEvents(sessionId, { after, signal: abort.signal }))
    if (e.type === "turn_completed") {
      log?.push([t0(), "turn_completed"]);
      waiter?.();
      waiter = null;
    }
})();
const text = (t) => `call look_up {"key":"a${t}"}\nthen\ncall look_up {"key":"b${t}"}`;
const all = new Map();
for (let t = 0; t < turns * 2; t++) {
  marks.reset();
  const l = [];
  log = l;
  const s = t0();
  const done = new Promise((r) => (waiter = r));
  await client.sendMessage(sessionId, text(t));
  await done;
  await new Promise((r) => setTimeout(r, 0));
  // the bare turn right after, as in the bench, still logging
  l.push([t0(), "bare-start"]);
  await store.ingress.call("benchBareSteps", "k", "run", { sizes: [400, 900, 400, 900, 400] });
  l.push([t0(), "bare-end"]);
  log = null;
  for (const [i, m] of marks.ends.entries()) l.push([m, `mark${i + 1}`]);
  if (t < turns) continue;
  const seen = new Map();
  for (const [at, k] of l.sort((a, b) => a[0] - b[0])) {
    const n = (seen.get(k) ?? 0) + 1;
    seen.set(k, n);
    const key = n > 1 ? `${k}#${n}` : k;
    if (!all.has(key)) all.set(key, []);
    all.get(key).push(at - s);
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const [k, xs] of [...all].sort((a, b) => med(a[1]) - med(b[1])))
  console.log(`${med(xs).toFixed(1).padStart(7)}  ${k}  (${xs.length})`);
abort.abort();
await store.close();
endpoint.close();
await server.stop();
process.exit(0);

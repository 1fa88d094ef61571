// Probe: what state writes cost a Restate step. A bare virtual-object handler runs 5 `ctx.run`
// steps, and after each writes S state entries of B bytes (lazy state, as the session object);
// variants in turns, median ms per step and server CPU per step.
// usage: node probe/restate-sets.mjs [turns=40]
import http2 from "node:http2";
import { readFileSync } from "node:fs";
import { IngressClient } from "@durable-agents/engine-restate";
import { freePort, quietLogger, registerDeployment, startRestateServer } from "@durable-agents/engine-restate/testing";
import * as restate from "@restatedev/restate-sdk";

const turns = Number(process.argv[2] ?? 40);
let marks = [];
const obj = restate.object({
  name: "probeSets",
  handlers: {
    run: async (ctx, req) => {
      const awk = req.race ? ctx.awakeable() : null;
      for (let i = 0; i < 5; i++) {
        const step = ctx.run("step", () => {
          marks.push(performance.now());
          return req.obj ? { kind: "x", input: { a: "x".repeat(500), b: [1, 2, 3] }, at: Date.now() } : "x".repeat(500);
        });
        if (awk)
          await restate.RestatePromise.race([step, awk.promise, ...(req.race > 1 ? [ctx.awakeable().promise] : [])]);
        else await step;
        for (let j = 0; j < req.sets.length; j++) ctx.set(`k${j}:${i}`, "y".repeat(req.sets[j]));
      }
      return 5;
    },
  },
  options: { journalRetention: 0, enableLazyState: true },
});
const server = await startRestateServer();
const cpu = () => {
  const f = readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
};
const endpoint = http2.createServer();
endpoint.on("request", restate.createEndpointHandler({ services: [obj], logger: quietLogger }));
const port = await freePort();
await new Promise((r) => endpoint.listen(port, "127.0.0.1", r));
await registerDeployment(server.adminUrl, `http://127.0.0.1:${port}`);
const ingress = new IngressClient({ url: server.ingressUrl });
const variants = {
  none: [],
  "1x3000": [3000],
  "2x(3000,100)": [3000, 100],
  "6x(3000,100,200,150,250,800)": [3000, 100, 200, 150, 250, 800],
  "6x100": [100, 100, 100, 100, 100, 100],
  race: { race: 1, sets: [] },
  "race+awk/step": { race: 2, sets: [] },
  "race+awk/step+obj+6sets": { race: 2, obj: true, sets: [3000, 100, 200, 150, 250, 800] },
};
const res = Object.fromEntries(Object.keys(variants).map((k) => [k, { steps: [], cpu: 0 }]));
for (let t = 0; t < 2 * turns; t++)
  for (const [name, sets] of Object.entries(variants)) {
    marks = [];
    const c0 = cpu();
    const started = performance.now();
    await ingress.call("probeSets", name, "run", Array.isArray(sets) ? { sets } : sets);
    const ended = performance.now();
    if (t < turns) continue;
    res[name].cpu += cpu() - c0;
    const b = [started, ...marks.slice(0, 4), ended];
    res[name].steps.push(...b.slice(1).map((e, i) => e - b[i]));
    // the middle steps only
  }
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
for (const [name, r] of Object.entries(res)) {
  const mid = r.steps.filter((_, i) => i % 5 >= 1 && i % 5 <= 3);
  console.log(
    `${name.padEnd(32)} step median ${med(r.steps).toFixed(2)} ms, middle steps ${med(mid).toFixed(2)} ms, server CPU/step ${(r.cpu / (turns * 5)).toFixed(2)} ms`,
  );
}
ingress.close();
await new Promise((r) => endpoint.close(() => r()));
await server.stop();

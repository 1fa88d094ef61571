// Reads a profile written by growth-breakdown.mjs (PROBE_PROF=<file>): the CPU samples inside the measured
// turns and outside the runner calls, per level, by package and by function (self time, or with "owner" the
// first frame of a package), in ms per step.
// usage: node probe/outside-prof.mjs <file> [top=30] [self|owner]
// Samples inside measured turn windows and outside the runner calls, by level: self time per function
// (top N) and per package, in ms per step (5 steps per turn).
import { readFileSync } from "node:fs";
const [file, topArg = "30", mode = "self"] = process.argv.slice(2);
const { profile: prof, windows } = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const short = (url) =>
  url
    .replace(
      /^.*node_modules\/\.pnpm\/([^/]+)\/node_modules\/(.*)$/,
      (_, p, rest) => `${p.split("_")[0]}/${rest.split("/").slice(-1)[0]}`,
    )
    .replace(/^.*\/packages\/([^/]+)\/dist\/(.*)$/, "pkg:$1/$2")
    .replace(/^file:\/\/\/work\/wt-flat\//, "");
const pkgOf = (url) => {
  const s = short(url);
  if (s.startsWith("pkg:")) return s.split("/")[0];
  if (s === "") return "(vm)";
  if (s.startsWith("node:")) return "node";
  return s.split("/")[0];
};
windows.sort((a, b) => a.start - b.start);
const turns = new Map();
for (const w of windows) turns.set(w.items, (turns.get(w.items) ?? 0) + 1);
const agg = new Map(); // items -> {fn: Map, pkg: Map, total}
let t = prof.startTime;
let wi = 0;
for (let i = 0; i < prof.samples.length; i++) {
  t += prof.timeDeltas[i];
  const dt = prof.timeDeltas[i + 1] ?? 0; // a sample stands for the time until the next one
  while (wi < windows.length && windows[wi].end < t) wi++;
  const w = windows[wi];
  if (!w || t < w.start) continue;
  if (w.runner.some(([a, b]) => t >= a && t < b)) continue;
  const node = byId.get(prof.samples[i]);
  const name = node.callFrame.functionName || "(anon)";
  if (name === "(idle)") continue;
  // attribute: the leaf, or in "owner" mode the first frame that is in one of our packages or the SDK
  let owner = node;
  if (mode === "owner") {
    let id = node.id;
    while (id !== undefined) {
      const n = byId.get(id);
      const p = pkgOf(n.callFrame.url);
      if (p !== "node" && p !== "(vm)") {
        owner = n;
        break;
      }
      id = parent.get(id);
    }
  }
  const key = `${owner.callFrame.functionName || "(anon)"} ${short(owner.callFrame.url)}:${owner.callFrame.lineNumber + 1}`;
  const a = agg.get(w.items) ?? { fn: new Map(), pkg: new Map(), total: 0 };
  agg.set(w.items, a);
  a.fn.set(key, (a.fn.get(key) ?? 0) + dt);
  const pk = pkgOf(owner.callFrame.url) + (name.startsWith("(") ? ` ${name}` : "");
  a.pkg.set(pk, (a.pkg.get(pk) ?? 0) + dt);
  a.total += dt;
}
for (const [items, a] of [...agg].sort((x, y) => x[0] - y[0])) {
  const steps = turns.get(items) * 5;
  const per = (us) => (us / 1000 / steps).toFixed(4);
  console.log(`== ${items} items: ${turns.get(items)} turns, CPU outside the runner ${per(a.total)} ms/step`);
  for (const [k, us] of [...a.pkg].sort((x, y) => y[1] - x[1]).slice(0, 15)) console.log(per(us).padStart(9), k);
  console.log("  -- functions");
  for (const [k, us] of [...a.fn].sort((x, y) => y[1] - x[1]).slice(0, Number(topArg)))
    console.log(per(us).padStart(9), k);
}

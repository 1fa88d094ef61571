// Prints the figures of several bench JSON files side by side (for the README's spread table).
import { readFileSync } from "node:fs";
const files = process.argv.slice(2);
const runs = files.map((f) => JSON.parse(readFileSync(f, "utf8")));
const f = (x, d = 2) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(d) : "-");
const row = (name, pick, d) =>
  console.log(
    `| ${name} | ${runs
      .map((r) => {
        try {
          return f(pick(r), d);
        } catch {
          return "-";
        }
      })
      .join(" / ")} |`,
  );
console.log(`| figure | ${runs.map((r) => r.generatedAt.slice(11, 16)).join(" / ")} |`);
console.log("| --- | --- |");
const lv = (levels, n) => levels.find((l) => l.historyItems === n);
for (const n of [10, 100, 1000]) {
  row(`peers ${n}: store-postgres ms/step`, (r) => lv(r.peers.postgres.levels, n).step.median, 3);
  row(`peers ${n}: DBOS ms/step`, (r) => lv(r.peers.dbos.levels, n).step.median, 3);
  row(`peers ${n}: LangGraph ms/step`, (r) => lv(r.peers.langgraph.levels, n).step.median, 3);
  row(
    `peers ${n}: Restate bare ms/step`,
    (r) => r.peers.restateBare.levels.find((l) => l.historyItems === n).step.median,
    3,
  );
  row(
    `peers ${n}: store-postgres / DBOS`,
    (r) => lv(r.peers.postgres.levels, n).step.median / lv(r.peers.dbos.levels, n).step.median,
  );
  row(
    `peers ${n}: same, outside the runner`,
    (r) => lv(r.peers.postgres.levels, n).outsideRunnerStep.median / lv(r.peers.dbos.levels, n).step.median,
  );
  row(
    `peers ${n}: store-postgres / Restate bare`,
    (r) => r.peers.restateBare.levels.find((l) => l.historyItems === n).postgresToBare,
  );
  row(`peers ${n}: write txns/step`, (r) => lv(r.peers.postgres.levels, n).writeTransactionsPerStep);
  row(`peers ${n}: WAL B/step`, (r) => lv(r.peers.postgres.levels, n).walBytesPerStep, 0);
  row(`Restate ${n}: session ms/step`, (r) => lv(r.restate.levels, n).session.median, 3);
  row(`Restate ${n}: bare ms/step`, (r) => lv(r.restate.levels, n).bare.median, 3);
  row(`Restate ${n}: ratio`, (r) => lv(r.restate.levels, n).ratio);
  row(
    `Restate ${n}: CPU/step endpoint+server`,
    (r) => lv(r.restate.levels, n).sessionCpuMsPerStep.endpoint + lv(r.restate.levels, n).sessionCpuMsPerStep.server,
  );
  row(`growth ${n}: memory outside runner ms`, (r) => lv(r.growth.memory, n).outsideRunnerMs, 3);
  row(`growth ${n}: postgres outside runner ms`, (r) => lv(r.growth.postgres, n).outsideRunnerMs, 3);
  row(`growth ${n}: sqlite outside runner ms`, (r) => lv(r.growth.sqlite, n).outsideRunnerMs, 3);
}
row("overhead: store-memory / raw, model steps", (r) => r.overhead.ratios.memoryToRawModelSteps);
row("overhead: CPU/step pg / memory", (r) => r.overhead.ratios.postgresToMemoryCpu);
row("overhead: CPU/step memory", (r) => r.overhead.memory.cpuMsPerStep);
row("overhead: CPU/step postgres", (r) => r.overhead.postgres.cpuMsPerStep);
row("floor: write txns/step", (r) => r.floor.writeTransactionsPerStep);
row("floor: WAL B/step", (r) => r.floor.walBytesPerStep, 0);
for (const [i, p] of ["1", "2", "4"].entries())
  row(`throughput pg ${p} proc steps/s`, (r) => r.throughput.runs[i].stepsPerSecond, 0);
row("throughput 2/1", (r) => r.throughput.speedup2);
for (const t of runs[0].targets)
  row(`target: ${t.name} (${t.limit})`, (r) => r.targets.find((x) => x.name === t.name)?.value);

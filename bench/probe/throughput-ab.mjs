// A/B probe of the throughput phase on PostgreSQL: runs bench/dist/throughput-phase.js of the repo given
// as argv[2] (its own builds of the packages) on a private PostgreSQL, PROCESSES (default 1,2) worker
// processes, ROUNDS rounds (default 5), 64 sessions x 3 turns, 16 at once per process (the full run's sizes before
// 0ea1fb7; the full run queues 12 turns since, TURNS=12; the default stays 3 so earlier commands measure as they did).
// usage: node probe/throughput-ab.mjs <repo> <tag>   (e.g. a git worktree of an older commit, built, in turns with this one)
// BENCH_COMPRESS_HEADS=1: the workers' stores write compressed heads (compressHeads: true).
// TURNS=<n>: queued turns per session (default 3; the full run's is 12). CONCURRENCY=<n>: sessions a worker process drives at once (default 16).
// RUNNER=scripted: core's ScriptedRunner drives the same turns instead of the OpenAI Agents SDK (the durability layer alone).
// BENCH_COMMITS_IN_FLIGHT=<n|Infinity>: the workers' stores' commitsInFlight (Infinity: every commit alone, no group commit).
import { pathToFileURL } from "node:url";
const [repo, tag] = process.argv.slice(2);
const processes = (process.env.PROCESSES ?? "1,2").split(",").map(Number);
const rounds = Number(process.env.ROUNDS ?? 5);
const { runThroughput } = await import(pathToFileURL(`${repo}/bench/dist/throughput-phase.js`).href);
const { startPostgres } = await import(pathToFileURL(`${repo}/packages/store-postgres/dist/testing/index.js`).href);
const server = await startPostgres({ fsync: true });
const target = { kind: "postgres", connectionString: server.connectionString };
for (let round = 1; round <= rounds; round++) {
  for (const p of processes) {
    const r = await runThroughput({
      target,
      processes: p,
      round,
      toolCalls: 2,
      sessions: 64,
      turns: Number(process.env.TURNS ?? 3),
      concurrency: Number(process.env.CONCURRENCY ?? 16),
      ...(process.env.RUNNER ? { runner: process.env.RUNNER } : {}),
    });
    const top = Object.entries(r.queriesPerStepByStatement)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(", ");
    console.log(
      `${tag} r${round} ${p}p: ${r.stepsPerSecond.toFixed(0)} steps/s, workers ${r.workerCpuCores.toFixed(2)} + pg ${r.postgresCpuCores.toFixed(2)} cores, ${r.cpuMsPerStep.toFixed(2)} CPU ms/step, ${r.queriesPerStep.toFixed(2)} queries/step (${top}), other ${r.otherCpuCores.toFixed(2)}`,
    );
  }
}
await server.stop();
process.exit(0);

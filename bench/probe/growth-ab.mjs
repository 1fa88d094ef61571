// A/B of the growth phase (bench/src/growth-phase.ts) on one store: the phase as it was before
// branch `flat` (probe/growth-phase-before.mjs: the old seeding) and as it is now (dist), run in
// alternation, `pairs` times, each run at 10 / 100 / 1,000 items with `sessions` sessions a level
// (the full bench's 6). Prints the time outside the runner per step of every run, and the process's
// CPU per step at each level (process.cpuUsage around each measured turn, the warm-up included).
// usage: node probe/growth-ab.mjs <memory|postgres|sqlite> [pairs=3] [sessions=6]
import { MemoryStore } from "@durable-agents/store-memory";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import pg from "pg";
import { runGrowthPhase as after } from "../dist/growth-phase.js";
import { runGrowthPhase as before } from "./growth-phase-before.mjs";

const [kind = "memory", pairsArg = "3", sessionsArg = "6"] = process.argv.slice(2);
const pairs = Number(pairsArg);
const sessions = Number(sessionsArg);
const LEVELS = [10, 100, 1000];
const stores = {};
let cleanup = async () => {};
if (kind === "memory") {
  stores.before = new MemoryStore();
  stores.after = new MemoryStore();
} else if (kind === "postgres") {
  const server = await startPostgres({ fsync: true });
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
  pool.on("error", () => {});
  for (const v of ["before", "after"]) {
    await migrate(pool, { schema: `ab_${v}` });
    stores[v] = new PostgresStore({ pool, schema: `ab_${v}` });
  }
  cleanup = async () => {
    for (const s of Object.values(stores)) await s.close();
    await pool.end();
    await server.stop();
  };
} else {
  const dir = tempStoreDir("growth-ab-");
  for (const v of ["before", "after"]) stores[v] = new SqliteStore({ path: dir.file(`${v}.db`) });
  cleanup = async () => {
    for (const s of Object.values(stores)) await s.close();
  };
}
const cpu = { before: {}, after: {} };
const runs = [];
try {
  for (let p = 0; p < pairs; p++) {
    for (const [variant, run] of [
      ["before", before],
      ["after", after],
    ]) {
      let started = null;
      const meter = {
        unit: "none",
        start: async () => {
          started = process.cpuUsage();
        },
        stop: async (sessionId) => {
          const d = process.cpuUsage(started);
          const items = Number(/-h(\d+)-/.exec(sessionId)[1]);
          cpu[variant][items] ??= { ms: 0, turns: 0 };
          const c = cpu[variant][items];
          c.ms += (d.user + d.system) / 1000;
          c.turns += 1;
          return { bytes: 0, writes: 0 };
        },
      };
      const levels = await run({
        store: stores[variant],
        meter,
        prefix: `${variant[0]}${p}`,
        levels: LEVELS,
        sessionsPerLevel: sessions,
        toolCalls: 2,
      });
      runs.push({
        variant,
        pair: p,
        outside: levels.map((l) => +l.outsideRunnerMs.toFixed(3)),
        median: levels.map((l) => +l.medianMs.toFixed(3)),
      });
      console.log(JSON.stringify(runs.at(-1)));
    }
  }
} finally {
  await cleanup();
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const variant of ["before", "after"]) {
  const mine = runs.filter((r) => r.variant === variant);
  const m = LEVELS.map((_, i) => mean(mine.map((r) => r.outside[i])));
  console.log(
    `${kind} ${variant}: outside the runner ms/step, mean of ${mine.length} runs: ${m.map((x) => x.toFixed(3)).join(" / ")} (1000 vs 10: ${(((m[2] - m[0]) / m[0]) * 100).toFixed(1)} %); CPU ms/step ${LEVELS.map((l) => (cpu[variant][l].ms / cpu[variant][l].turns / 5).toFixed(3)).join(" / ")}`,
  );
}

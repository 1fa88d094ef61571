// A/B probe of the peers row: runs bench/dist/peers-phase.js of the repo given as argv[2] (its own
// builds of the packages) on a private PostgreSQL, levels from LEVELS (default 10,1000), ROUNDS rounds.
// BENCH_PG_CHECKPOINTS=server: the server's own checkpoint settings, not the bench's.
// ROUNDS_WAL=1: also each round's WAL per step and the tables autovacuum and autoanalyze visited.
// usage: node probe/peers-ab.mjs <repo> <tag>   (e.g. a git worktree of an older commit, built, next to this one, in turns)
import { pathToFileURL } from "node:url";
const [repo, tag] = process.argv.slice(2);
const levels = (process.env.LEVELS ?? "10,1000").split(",").map(Number);
const rounds = Number(process.env.ROUNDS ?? 20);
const { runPeersPhase } = await import(pathToFileURL(`${repo}/bench/dist/peers-phase.js`).href);
const { startPostgres } = await import(pathToFileURL(`${repo}/packages/store-postgres/dist/testing/index.js`).href);
const { createRequire } = await import("node:module");
const pg = createRequire(`${repo}/bench/package.json`)("pg");
// The bench's own checkpoints (BENCH_CHECKPOINTS), where the build has them; BENCH_PG_CHECKPOINTS=server leaves the server's.
const probe = await import(pathToFileURL(`${repo}/bench/dist/postgres-probe.js`).href);
const own = process.env.BENCH_PG_CHECKPOINTS === "server" || !probe.BENCH_CHECKPOINTS;
const server = await startPostgres({ fsync: true, ...(own ? {} : { settings: probe.BENCH_CHECKPOINTS }) });
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
pool.on("error", () => {});
const f = await runPeersPhase({
  url: server.connectionString,
  pool,
  levels,
  rounds,
  warmupRounds: 10,
  floorWritesPerRound: 10,
  log: () => {},
  ...(own ? {} : { checkpoint: () => probe.checkpoint(pool) }),
});
for (const r of f.ratios) {
  const p = f.postgres.levels.find((l) => l.historyItems === r.historyItems);
  const d = f.dbos.levels.find((l) => l.historyItems === r.historyItems);
  // The held-session row, where the build has it (since the turnStartHoldMs change).
  const held = f.postgresHeld?.levels.find((l) => l.historyItems === r.historyItems);
  console.log(
    `${tag} items ${r.historyItems}: ${held ? `held ${held.step.median.toFixed(3)} ratio ${(held.step.median / d.step.median).toFixed(2)} txn ${held.writeTransactionsPerStep.toFixed(2)} wal ${held.walBytesPerStep.toFixed(0)} cpu ${held.cpuMsPerStep.process.toFixed(2)}+${held.cpuMsPerStep.postgres.toFixed(2)} | ` : ""}pg ${p.step.median.toFixed(3)} dbos ${d.step.median.toFixed(3)} ratio ${(p.step.median / d.step.median).toFixed(2)} | pg txn ${p.writeTransactionsPerStep.toFixed(2)} wal ${p.walBytesPerStep.toFixed(0)} cpu ${p.cpuMsPerStep.process.toFixed(2)}+${p.cpuMsPerStep.postgres.toFixed(2)} outside ${p.outsideRunnerMsPerStep?.toFixed(3)} | dbos cpu ${d.cpuMsPerStep.process.toFixed(2)}+${d.cpuMsPerStep.postgres.toFixed(2)}`,
  );
}
// ROUNDS_WAL=1: each round's WAL per step (where the build records it), and the server's own maintenance meanwhile.
if (process.env.ROUNDS_WAL === "1") {
  for (const [name, row] of [
    ["pg", f.postgres],
    ["held", f.postgresHeld],
    ["dbos", f.dbos],
    ["langgraph", f.langgraph],
  ])
    for (const level of row?.levels ?? [])
      console.log(
        `${tag} ${name} ${level.historyItems}: ${(level.walBytesPerStepByRound ?? []).map((w) => w.toFixed(0)).join(" ")}`,
      );
  const maintenance = await pool.query(
    `SELECT schemaname || '.' || relname AS t, autovacuum_count AS v, autoanalyze_count AS a FROM pg_stat_all_tables
      WHERE autovacuum_count + autoanalyze_count > 0 ORDER BY 1`,
  );
  console.log(`${tag} autovacuum / autoanalyze: ${maintenance.rows.map((r) => `${r.t} ${r.v}/${r.a}`).join(", ")}`);
}
await pool.end();
await server.stop();
process.exit(0);

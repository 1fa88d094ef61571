// A/B probe of the peers row: runs bench/dist/peers-phase.js of the repo given as argv[2] (its own
// builds of the packages) on a private PostgreSQL, levels from LEVELS (default 10,1000), ROUNDS rounds.
// BENCH_PG_CHECKPOINTS=server: the server's own checkpoint settings, not the bench's.
// BENCH_READ_TOOL_HOLD_MS=<ms>: both store-postgres rows' readToolHoldMs (core's default 0), for an A/B of the held model result.
// BENCH_COMPRESS_HEADS=1: both store-postgres rows' store writes compressed heads (compressHeads, off by default).
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
// WALDUMP=1 keeps the WAL (wal_keep_size) and reads the records of each store-postgres round that wrote
// 500 B per step more than its level's median round, by relation and record type (pg_waldump).
const waldump = process.env.WALDUMP === "1";
const server = await startPostgres({
  fsync: true,
  ...(own && !waldump
    ? {}
    : { settings: { ...(own ? {} : probe.BENCH_CHECKPOINTS), ...(waldump ? { wal_keep_size: "16GB" } : {}) } }),
});
const roundsWal = [];
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
pool.on("error", () => {});
// ROUNDS_WAL=1 also polls the server's maintenance counters (pg_stat_all_tables) every 250 ms and
// names each autovacuum or autoanalyze with the phase the bench had logged last (a level's fills or rounds).
let phase = "setup";
const visits = [];
const seen = new Map();
const pollMaintenance = async () => {
  const { rows } = await pool.query(
    "SELECT schemaname || '.' || relname AS t, autovacuum_count AS v, autoanalyze_count AS a FROM pg_stat_all_tables",
  );
  for (const r of rows) {
    const was = seen.get(r.t);
    const v = Number(r.v);
    const a = Number(r.a);
    if (was && (v > was.v || a > was.a))
      visits.push(`${r.t} ${v > was.v ? "vacuum" : ""}${a > was.a ? "analyze" : ""} during ${phase}`);
    seen.set(r.t, { v, a });
  }
};
const poller = process.env.ROUNDS_WAL === "1" ? setInterval(() => void pollMaintenance().catch(() => {}), 250) : null;
const f = await runPeersPhase({
  url: server.connectionString,
  pool,
  levels,
  rounds,
  warmupRounds: 10,
  floorWritesPerRound: 10,
  onRound: (round) => roundsWal.push(round),
  log: (line) => {
    phase = line.replace(/^peers: /, "").split(" (")[0];
  },
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
  clearInterval(poller);
  await pollMaintenance();
  console.log(`${tag} maintenance seen by the poll: ${visits.join("; ") || "none"}`);
  const maintenance = await pool.query(
    `SELECT schemaname || '.' || relname AS t, autovacuum_count AS v, autoanalyze_count AS a FROM pg_stat_all_tables
      WHERE autovacuum_count + autoanalyze_count > 0 ORDER BY 1`,
  );
  console.log(`${tag} autovacuum / autoanalyze: ${maintenance.rows.map((r) => `${r.t} ${r.v}/${r.a}`).join(", ")}`);
}
if (waldump) {
  const { execFileSync } = await import("node:child_process");
  const lsn = (bytes) =>
    `${(bytes >> 32n).toString(16).toUpperCase()}/${(bytes & 0xffffffffn).toString(16).toUpperCase()}`;
  const rels = await pool.query(
    `SELECT c.relfilenode::text AS node, coalesce(t.relname, c.relname) || CASE WHEN t.relname IS NULL THEN '' ELSE ' (toast)' END AS name
       FROM pg_class c LEFT JOIN pg_class t ON t.reltoastrelid = c.oid WHERE c.relfilenode <> 0`,
  );
  const names = new Map(rels.rows.map((r) => [r.node, r.name]));
  for (const row of ["store-postgres", "store-postgres held"]) {
    for (const items of levels) {
      const mine = roundsWal.filter((r) => r.row === row && r.items === items);
      const perStep = mine.map((r) => Number(r.walTo - r.walFrom) / r.steps);
      // The nearest-rank median, as the bench's summarize takes it.
      const median = [...perStep].sort((a, b) => a - b)[Math.ceil(perStep.length / 2) - 1];
      const typical = perStep.indexOf(median);
      for (const [i, r] of mine.entries()) {
        if (perStep[i] - median < 500 && i !== typical) continue;
        const out = execFileSync(
          "runuser",
          [
            "-u",
            "postgres",
            "--",
            "/usr/lib/postgresql/15/bin/pg_waldump",
            "-p",
            `${server.dir}/data/pg_wal`,
            "-s",
            lsn(r.walFrom),
            "-e",
            lsn(r.walTo),
          ],
          { maxBuffer: 1 << 28 },
        ).toString();
        const by = new Map();
        for (const line of out.split("\n")) {
          const m = /rmgr: (\S+)\s+len \(rec\/tot\):\s*\d+\/\s*(\d+).*?desc: (\S+)/.exec(line);
          if (!m) continue;
          const rel = /rel \d+\/\d+\/(\d+)/.exec(line);
          const key = `${m[1]}/${m[3]} ${rel ? (names.get(rel[1]) ?? rel[1]) : ""}${/FPW/.test(line) ? " +FPI" : ""}`;
          const was = by.get(key) ?? [0, 0];
          by.set(key, [was[0] + 1, was[1] + Number(m[2])]);
        }
        const top = [...by].sort((a, b) => b[1][1] - a[1][1]).slice(0, 8);
        console.log(
          `${tag} ${row} ${items} round ${r.round}: ${perStep[i].toFixed(0)} B/step (median ${median.toFixed(0)}); ${top.map(([k, [n, b]]) => `${k} x${n} ${b} B`).join("; ")}`,
        );
      }
    }
  }
}
await pool.end();
await server.stop();
process.exit(0);

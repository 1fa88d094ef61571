// A/B probe of the cancellation row on store-postgres: runs bench/dist/cancel-phase.js of the repo given
// as argv[2] (its own builds of the packages) on a private PostgreSQL, SESSIONS sessions (default 20,
// after 2 warm-up sessions) of TURNS cancelled turns (default 10): cancelTurn called while the model
// call is in flight -> turn_cancelled at a follower, and how long cancelTurn took to answer.
// usage: node probe/cancel-ab.mjs <repo> <tag>   (e.g. a git worktree of an older commit, built, in turns with this one)
import { pathToFileURL } from "node:url";
import { createRequire } from "node:module";
const [repo, tag] = process.argv.slice(2);
const sessions = Number(process.env.SESSIONS ?? 20);
const turns = Number(process.env.TURNS ?? 10);
const { CancelPhase } = await import(pathToFileURL(`${repo}/bench/dist/cancel-phase.js`).href);
const { migrate, PostgresStore } = await import(pathToFileURL(`${repo}/packages/store-postgres/dist/index.js`).href);
const { startPostgres } = await import(pathToFileURL(`${repo}/packages/store-postgres/dist/testing/index.js`).href);
const pg = createRequire(`${repo}/bench/package.json`)("pg");
const server = await startPostgres({ fsync: true });
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
pool.on("error", () => {});
await migrate(pool, { schema: "probe" });
const store = new PostgresStore({ pool, schema: "probe" });
const phase = new CancelPhase(store, turns, "ab");
for (let s = 0; s < 2 + sessions; s++) await phase.session(s, s >= 2);
await phase.stop();
const { latencyMs, callMs } = phase.result();
const at = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
console.log(
  `${tag}: ${latencyMs.length} cancels, cancelTurn -> turn_cancelled p50 ${at(latencyMs, 0.5).toFixed(3)} p99 ${at(latencyMs, 0.99).toFixed(3)} ms; cancelTurn answered p50 ${at(callMs, 0.5).toFixed(3)} p99 ${at(callMs, 0.99).toFixed(3)} ms`,
);
await store.close();
await pool.end();
await server.stop();

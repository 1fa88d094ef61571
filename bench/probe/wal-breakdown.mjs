// Probe: where a store-postgres step's WAL goes. Runs the peers row's session turn (ScriptedRunner,
// model, tool, model, tool, model) on a private PostgreSQL, then reads the WAL those turns wrote
// with pg_waldump: bytes per record type, and per relation (heap, index, TOAST), per step.
// usage: node probe/wal-breakdown.mjs [turns=20] [checkpoint=yes|no]
import { execFileSync } from "node:child_process";
import { defineSession, SessionClient, Worker } from "@durable-agents/core";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import pg from "pg";
import { waitForIdleWorker } from "../dist/durable-phase.js";
import { markedScriptedRunner, StepMarks } from "../dist/marked-runner.js";

const [turnsArg = "20", checkpointArg = "yes"] = process.argv.slice(2);
const turns = Number(turnsArg);
const server = await startPostgres({ fsync: true });
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
pool.on("error", () => {});
await migrate(pool, { schema: "probe" });
// TOAST=table:target,... sets toast_tuple_target on those tables (an A/B of a migration not written yet).
// PRE_SQL: statements run after the migrations (schema "probe"), to A/B a migration before writing it.
if (process.env.PRE_SQL) await pool.query(process.env.PRE_SQL);
for (const part of (process.env.TOAST ?? "").split(",").filter(Boolean)) {
  const [table, target] = part.split(":");
  await pool.query(`ALTER TABLE probe.${table} SET (toast_tuple_target = ${Number(target)})`);
}
// COMPRESS_HEADS=1: the heads compressed (compressHeads: true), for an A/B of the compressed head.
const store = new PostgresStore({ pool, schema: "probe", compressHeads: process.env.COMPRESS_HEADS === "1" });
const marks = new StepMarks();
const definition = defineSession({
  name: "peers",
  runner: markedScriptedRunner(marks),
  policies: { look_up: { effect: "read" } },
});
const worker = new Worker({ store, sessions: [definition] }).start();
const client = new SessionClient({ store, agents: ["peers"] });
const sessions = ["s1", "s2"];
for (const id of sessions) await client.startSession({ agent: "peers", sessionId: id });
async function turn(id, tag) {
  await client.sendMessage(id, `call look_up {"key":"a${tag}"}\nthen\ncall look_up {"key":"b${tag}"}`);
  await client.waitUntilIdle(id, { timeoutMs: 60_000 });
}
for (let i = 0; i < 4; i++) for (const id of sessions) await turn(id, `w${i}`);
await waitForIdleWorker(worker);
if (checkpointArg === "yes") await pool.query("CHECKPOINT");
const lsn = async () => (await pool.query("SELECT pg_current_wal_lsn() AS l")).rows[0].l;
const commits = async () =>
  Number(
    (await pool.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")).rows[0]
      .xact_commit,
  );
const from = await lsn();
const c0 = await commits();
for (let i = 0; i < turns; i++) for (const id of sessions) await turn(id, `m${i}`);
await waitForIdleWorker(worker);
const to = await lsn();
const c1 = await commits();
const steps = turns * sessions.length * 5;
const rels = await pool.query(
  `SELECT c.relfilenode::text AS node, c.relname, c.relkind, coalesce(t.relname, '') AS owner
     FROM pg_class c LEFT JOIN pg_class t ON t.reltoastrelid = c.oid
    WHERE c.relfilenode <> 0`,
);
const names = new Map(rels.rows.map((r) => [r.node, r.owner ? `toast(${r.owner})` : r.relname]));
const sample = await pool.query(
  "SELECT pg_column_size(s.*) AS row, pg_column_size(head) AS head, octet_length(head::text) AS head_text, pg_column_size(run_state) AS rs, octet_length(run_state) AS rs_text FROM probe.sessions s",
);
console.log("session rows:", JSON.stringify(sample.rows));
if (process.env.SHOW_EVENTS)
  for (const r of (
    await pool.query(
      "SELECT last_seq, events::text AS e FROM probe.event_batches WHERE session_id = 's1' ORDER BY last_seq DESC LIMIT 7",
    )
  ).rows)
    console.log(r.last_seq, r.e);
if (process.env.SHOW_HEAD)
  console.log((await pool.query("SELECT head::text AS h FROM probe.sessions LIMIT 1")).rows[0].h);
const sampleEv = await pool.query(
  "SELECT avg(pg_column_size(events))::int AS stored, avg(octet_length(events::text))::int AS text FROM probe.event_batches",
);
console.log("event batches:", JSON.stringify(sampleEv.rows));
await worker.stop?.();
await store.close?.();
await pool.end();
const waldump = "/usr/lib/postgresql/15/bin/pg_waldump";
const walDir = `${server.dir}/data/pg_wal`;
const asPg = (args) =>
  execFileSync("runuser", ["-u", "postgres", "--", waldump, ...args], { maxBuffer: 1 << 30 }).toString();
const stats = asPg(["-p", walDir, "-s", from, "-e", to, "--stats=record"]);
const dump = asPg(["-p", walDir, "-s", from, "-e", to]);
// SHOW_RECORDS=<relation>: also print the first 60 records of that relation (type, length, description).
if (process.env.SHOW_RECORDS) {
  const node = [...names].find(([, name]) => name === process.env.SHOW_RECORDS)?.[0];
  const lines = dump.split("\n").filter((line) => node && line.includes(`/${node} `));
  for (const line of lines.slice(0, 60))
    console.log(line.replace(/^rmgr: (\S+)\s+len \(rec\/tot\):\s*(\d+)\/\s*(\d+).*?desc: (.*)$/, "$1 $3 B: $4"));
}
const byRel = new Map();
let total = 0;
for (const line of dump.split("\n")) {
  const m = /len \(rec\/tot\):\s*(\d+)\/\s*(\d+).*?desc: (\S+)/.exec(line);
  if (!m) continue;
  const tot = Number(m[2]);
  total += tot;
  const rel = /rel \d+\/\d+\/(\d+)/.exec(line);
  const key = rel ? (names.get(rel[1]) ?? `rel ${rel[1]}`) : `(${/rmgr: (\S+)/.exec(line)?.[1]} ${m[3]})`;
  const fpi = /FPW|fpw/.test(line) ? " +FPI" : "";
  byRel.set(key + fpi, (byRel.get(key + fpi) ?? 0) + tot);
}
console.log(`${steps} steps, ${((c1 - c0) / steps).toFixed(2)} commits/step (all, incl. reads), WAL ${from}..${to}`);
console.log(`WAL per step (records): ${(total / steps).toFixed(0)} B`);
for (const [k, v] of [...byRel].sort((a, b) => b[1] - a[1]))
  console.log(`${(v / steps).toFixed(0).padStart(6)} B/step  ${k}`);
console.log(stats);
await server.stop();

// Probe: PostgreSQL's planning and execution time of each store statement, as a prepared statement
// run 12 times on one connection (EXPLAIN ANALYZE EXECUTE, each in a transaction rolled back), the
// last two printed: a statement PostgreSQL plans anew on every call shows a planning time well above
// 0.05 ms. GENERIC=1 forces generic plans; FULL=<name> prints that statement's whole plan.
// usage: node probe/plan-times.mjs
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { startPostgres } from "@durable-agents/store-postgres/testing";
import { storeSql } from "../../packages/store-postgres/dist/store-sql.js";
import pg from "pg";
const server = await startPostgres({ fsync: true });
const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
await migrate(pool, { schema: "probe" });
const store = new PostgresStore({ pool, schema: "probe" });
const head = (id) => ({
  schemaVersion: 1,
  sessionId: id,
  agent: "a",
  status: "idle",
  turnCount: 0,
  historyLength: 0,
  turn: null,
  queue: [],
  pendingInterrupts: [],
  usage: { modelCalls: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
  inboxCursor: 0,
  createdAt: new Date().toISOString(),
  definition: { fingerprint: "fp1-x", waiting: null },
});
for (let i = 0; i < 50; i++)
  await store.createSession({ head: head(`s${i}`), events: [{ type: "session_created", data: { agent: "a" } }] });
await store.enqueue("s7", { kind: "message", text: "hi", messageId: null }, null);
const sql = storeSql("probe", "da_probe");
const c = await pool.connect();
const lease = await store.acquireLeaseWithSession({ workerId: "w", ttlMs: 100000, agents: ["a"] });
await store.enqueue("s8", { kind: "message", text: "hi", messageId: null }, null);
const h = JSON.stringify(head("s7"));
const params = {
  acquireLeasePinnedWithSession: [["a"], "w", 10000, ["fp1-x"], []],
  acquireLeaseWithSession: [["a"], "w", 10000],
  commit: [
    "s7",
    lease.lease.fence,
    1,
    h,
    false,
    1,
    JSON.stringify([{ kind: "user", item: {}, display: [] }]),
    1,
    JSON.stringify([{ type: "text_delta", data: { turnId: "t", text: "x" } }]),
    1,
    "fp1-x",
    false,
    null,
    false,
    30000,
  ],
  readInbox: ["s7", 0],
  acquireUnservedLease: [["a"], "w", 10000, ["fp1-y"]],
  announceDefinitions: ["w", JSON.stringify([{ agent: "a", fingerprint: "fp1-x", role: "serves" }]), 10000],
  renewLease: ["s7", lease.lease.fence, 10000, "w"],
  releaseLease: ["s7", lease.lease.fence],
  enqueue: ["s7", JSON.stringify({ kind: "message", text: "x", messageId: null }), null],
  loadSession: ["s7"],
  readEvents: ["s7", 0, 1000],
};
for (const name of Object.keys(params)) {
  const _n = params[name].length;
  await c.query(`PREPARE ${name} AS ${sql[name]}`);
}
if (process.env.GENERIC) await c.query("SET plan_cache_mode = force_generic_plan");
for (let round = 0; round < 12; round++)
  for (const name of Object.keys(params)) {
    await c.query("BEGIN");
    const args = params[name]
      .map((p) =>
        p === null
          ? "NULL"
          : Array.isArray(p)
            ? `'{${p.join(",")}}'`
            : typeof p === "string"
              ? `'${p.replaceAll("'", "''")}'`
              : p,
      )
      .join(", ");
    const r = await c.query(`EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) EXECUTE ${name}(${args})`);
    const lines = r.rows.map((row) => row["QUERY PLAN"]);
    if (round >= 10)
      console.log(
        name.padEnd(32),
        process.env.FULL && name === process.env.FULL
          ? `\n${lines.join("\n")}`
          : lines.filter((l) => /Planning Time|Execution Time|^Update/.test(l)).join(" | "),
      );
    await c.query("ROLLBACK");
  }
c.release();
await store.close();
await pool.end();
await server.stop();

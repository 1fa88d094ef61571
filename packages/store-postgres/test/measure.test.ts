import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore, migrate } from "../src/index.js";
import { startPostgres, type PostgresServer } from "../src/testing/index.js";
import { created, delta, head, item } from "./helpers.js";

// Prints timings; asserts only that the work was done (timings vary by machine and load).
// A private server with fsync on, so a commit pays for a real WAL flush as in production.
let server: PostgresServer;
let pool: pg.Pool;

beforeAll(async () => {
  server = await startPostgres({ fsync: true });
  pool = new pg.Pool({ connectionString: server.connectionString, max: 4 });
  pool.on("error", () => {});
  await migrate(pool);
  await pool.query("CREATE TABLE single_row (id bigserial PRIMARY KEY, body text NOT NULL)");
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await server?.stop();
});

const ROUNDS = 200;

async function time(body: (n: number) => Promise<unknown>): Promise<{ median: number; mean: number }> {
  for (let n = 0; n < 20; n++) await body(-1 - n); // warm up connections and prepared statements
  const samples: number[] = [];
  for (let n = 0; n < ROUNDS; n++) {
    const start = performance.now();
    await body(n);
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[samples.length >> 1]!, mean: samples.reduce((a, b) => a + b, 0) / samples.length };
}

const ms = (value: number) => `${value.toFixed(3)} ms`;

describe("measurement", () => {
  it("prints a commit's latency next to one single-row insert (synchronous_commit on)", async () => {
    const setting = await pool.query(
      "SELECT current_setting('synchronous_commit') AS s, current_setting('fsync') AS f",
    );
    expect(setting.rows[0]).toEqual({ s: "on", f: "on" });
    const store = new PostgresStore({ pool });
    const bigHead = head("measured", {
      agent: "measured",
      queue: Array.from({ length: 10 }, (_, n) => ({ text: `queued ${n} ${"x".repeat(100)}`, inboxSeq: n }) as never),
    });
    await store.createSession({ head: bigHead, events: [created("measured")] });
    await pool.query("UPDATE durable_agents.sessions SET runnable = true WHERE session_id = 'measured'");
    const lease = (await store.acquireLease({ workerId: "w", ttlMs: 600_000, agents: ["measured"] }))!;
    let version = 1;
    let history = 0;
    const commit = async () => {
      history += 1;
      const result = await store.commit({
        sessionId: "measured",
        fence: lease.fence,
        expectedVersion: version,
        head: { ...bigHead, historyLength: history },
        runnable: true,
        appendHistory: [item(`item ${history}`)],
        events: [delta("a"), delta("b")],
      });
      version = result.version;
    };

    const insert = await time((n) => pool.query("INSERT INTO single_row (body) VALUES ($1)", [`row ${n}`]));
    const early = await time(commit);
    // Grow the history by 5,000 items, then measure again: the cost must not follow the length.
    await pool.query(
      `INSERT INTO durable_agents.history (session_id, position, item)
       SELECT 'measured', p, json_build_object('item', 'filler', 'display', json_build_object('role', 'user', 'text', 'filler'))
       FROM generate_series($1::bigint, $1::bigint + 4999) AS p`,
      [history],
    );
    await pool.query(
      "UPDATE durable_agents.sessions SET history_length = history_length + 5000 WHERE session_id = 'measured'",
    );
    history += 5000;
    const late = await time(commit);
    const eventsOnly = await time(() =>
      store.commit({ sessionId: "measured", fence: lease.fence, expectedVersion: version, events: [delta("c")] }),
    );

    console.log(
      [
        `store-postgres measurement (${ROUNDS} sequential calls each, fsync on, synchronous_commit on):`,
        `  single-row INSERT             median ${ms(insert.median)}  mean ${ms(insert.mean)}`,
        `  commit (head+1 item+2 events) median ${ms(early.median)}  mean ${ms(early.mean)}`,
        `  same after 5,000 more items   median ${ms(late.median)}  mean ${ms(late.mean)}`,
        `  commit of 1 event, no head    median ${ms(eventsOnly.median)}  mean ${ms(eventsOnly.mean)}`,
        `  commit / insert (median)      ${(early.median / insert.median).toFixed(2)}x`,
      ].join("\n"),
    );

    expect(version).toBe(1 + 2 * (ROUNDS + 20));
    const counts = await pool.query(
      "SELECT (SELECT count(*)::int FROM durable_agents.history WHERE session_id = 'measured') AS h, (SELECT count(*)::int FROM durable_agents.events WHERE session_id = 'measured') AS e",
    );
    expect(counts.rows[0]).toEqual({ h: history, e: 1 + 2 * 2 * (ROUNDS + 20) + ROUNDS + 20 });
  }, 120_000);
});

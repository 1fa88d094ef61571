/**
 * What the benchmark reads from PostgreSQL itself: the latency of one committed single-row write
 * (the floor), the WAL position, the transaction counter, the server's settings.
 */
import type { Pool } from "pg";
import { summarize, type Summary } from "./stats.js";

export interface Counters {
  /** `pg_current_wal_insert_lsn()` as bytes from 0. */
  readonly walBytes: bigint;
  /** The next transaction ID (`pg_snapshot_xmax(pg_current_snapshot())`): grows by one per transaction that wrote. */
  readonly nextXid: bigint;
  /** `xact_commit` of this database in `pg_stat_database` (read and write transactions, reported with a delay). */
  readonly xactCommit: bigint;
}

export interface CounterDelta {
  readonly walBytes: number;
  readonly writeTransactions: number;
}

export async function readCounters(pool: Pool): Promise<Counters> {
  const result = await pool.query<{ wal: string; xid: string; commits: string }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint::text AS wal,
            pg_snapshot_xmax(pg_current_snapshot())::text AS xid,
            (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits`,
  );
  const row = result.rows[0]!;
  return { walBytes: BigInt(row.wal), nextXid: BigInt(row.xid), xactCommit: BigInt(row.commits) };
}

export function counterDelta(before: Counters, after: Counters): CounterDelta {
  return {
    walBytes: Number(after.walBytes - before.walBytes),
    writeTransactions: Number(after.nextXid - before.nextXid),
  };
}

export interface FloorResult extends Summary {
  /** WAL bytes of one such write. */
  readonly walBytesPerWrite: number;
}

/**
 * The floor: one committed single-row INSERT at a time (autocommit, synchronous_commit on) on its
 * own table, taken in batches between the other phases' sessions.
 */
export class FloorProbe {
  private readonly samples: number[] = [];
  private walBytes = 0;
  private count = 0;

  constructor(private readonly pool: Pool) {}

  private insert(n: number) {
    return this.pool.query({
      name: "bench_floor_insert",
      text: "INSERT INTO bench_floor (body) VALUES ($1)",
      values: [`row ${n}`],
    });
  }

  /** Creates the table and warms the connection and the prepared statement up. */
  async prepare(): Promise<void> {
    await this.pool.query("CREATE TABLE IF NOT EXISTS bench_floor (id bigserial PRIMARY KEY, body text NOT NULL)");
    for (let n = 0; n < 20; n++) await this.insert(-n);
  }

  async batch(rounds: number): Promise<void> {
    const before = await readCounters(this.pool);
    for (let n = 0; n < rounds; n++) {
      const start = performance.now();
      await this.insert(this.count++);
      this.samples.push(performance.now() - start);
    }
    this.walBytes += counterDelta(before, await readCounters(this.pool)).walBytes;
  }

  result(): FloorResult {
    return { ...summarize(this.samples), walBytesPerWrite: this.walBytes / this.samples.length };
  }
}

export interface ServerInfo {
  readonly version: string;
  readonly fsync: string;
  readonly synchronousCommit: string;
  readonly fullPageWrites: string;
  readonly walLevel: string;
}

export async function serverInfo(pool: Pool): Promise<ServerInfo> {
  const result = await pool.query<{ v: string; f: string; s: string; p: string; w: string }>(
    `SELECT current_setting('server_version') AS v, current_setting('fsync') AS f,
            current_setting('synchronous_commit') AS s, current_setting('full_page_writes') AS p,
            current_setting('wal_level') AS w`,
  );
  const row = result.rows[0]!;
  return { version: row.v, fsync: row.f, synchronousCommit: row.s, fullPageWrites: row.p, walLevel: row.w };
}

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
  readonly checkpointTimeout: string;
  readonly maxWalSize: string;
}

export async function serverInfo(pool: Pool): Promise<ServerInfo> {
  const result = await pool.query<{ v: string; f: string; s: string; p: string; w: string; t: string; m: string }>(
    `SELECT current_setting('server_version') AS v, current_setting('fsync') AS f,
            current_setting('synchronous_commit') AS s, current_setting('full_page_writes') AS p,
            current_setting('wal_level') AS w, current_setting('checkpoint_timeout') AS t,
            current_setting('max_wal_size') AS m`,
  );
  const row = result.rows[0]!;
  return {
    version: row.v,
    fsync: row.f,
    synchronousCommit: row.s,
    fullPageWrites: row.p,
    walLevel: row.w,
    checkpointTimeout: row.t,
    maxWalSize: row.m,
  };
}

/**
 * The private server's checkpoints are the bench's own (`BENCH_CHECKPOINTS`): none falls due by time or
 * by WAL volume during a run, and `checkpoint` takes one before each phase that measures PostgreSQL
 * and before each peers level is filled. So the page images a checkpoint makes the next write of each
 * page log (8 KB each) land in the fills, not in a measured round, and no checkpoint's writes and
 * fsyncs run beside one. A checkpoint is on a timer (5 min by default) or after `max_wal_size` of WAL
 * (1 GB), which the peers' fills (LangGraph's checkpoints are a megabyte at 1,000 messages) set off in
 * the middle of the 1,000-item rounds until this was added.
 */
export const BENCH_CHECKPOINTS: Readonly<Record<string, string>> = {
  checkpoint_timeout: "1d",
  max_wal_size: "64GB",
};

/**
 * A checkpoint now (see `BENCH_CHECKPOINTS`): false when the server refuses it (a server given by
 * URL, with a role that may not), and then the server's own checkpoints run as they would.
 */
export async function checkpoint(pool: Pool): Promise<boolean> {
  try {
    await pool.query("CHECKPOINT");
    return true;
  } catch {
    return false;
  }
}

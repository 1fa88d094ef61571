/**
 * What the benchmark reads from a store-sqlite file itself, through a connection of its own: the
 * latency of one committed single-row write to the same file (the floor, with the same
 * `synchronous` setting as the store), and the write-ahead log's frames (bytes and transactions
 * written), read from the `-wal` file's frame headers.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import type { Synchronous } from "@durable-agents/store-sqlite";
import type { BytesMeter } from "./growth-phase.js";
import { summarize, type Summary } from "./stats.js";

/** A connection of the benchmark's own to a store file (the store created its schema first). */
export function openSide(path: string, synchronous: Synchronous): DatabaseSync {
  const db = new DatabaseSync(path, { timeout: 5_000 });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec(`PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
  db.exec("CREATE TABLE IF NOT EXISTS bench_floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
  return db;
}

export interface SqliteFloorResult extends Summary {
  readonly synchronous: Synchronous;
}

/**
 * The floor: one committed single-row INSERT at a time (autocommit, so one transaction each) into
 * a tiny table of the store's own file, with the store's `synchronous` setting; taken in batches
 * between the store's sessions.
 */
export class SqliteFloorProbe {
  private readonly samples: number[] = [];
  private readonly db: DatabaseSync;
  private readonly insert;
  private count = 0;

  constructor(
    path: string,
    readonly synchronous: Synchronous,
  ) {
    this.db = openSide(path, synchronous);
    this.insert = this.db.prepare("INSERT INTO bench_floor (body) VALUES (?)");
    for (let n = 0; n < 20; n++) this.insert.run(`warm-up ${n}`);
  }

  batch(rounds: number): void {
    for (let n = 0; n < rounds; n++) {
      const start = performance.now();
      this.insert.run(`row ${this.count++}`);
      this.samples.push(performance.now() - start);
    }
  }

  result(): SqliteFloorResult {
    return { ...summarize(this.samples), synchronous: this.synchronous };
  }

  close(): void {
    this.db.close();
  }
}

export interface WalPosition {
  readonly salt1: number;
  readonly salt2: number;
  readonly pageSize: number;
  /** Valid frames (matching the header's salts) from the start of the log. */
  readonly frames: number;
  /** Of those, commit frames: one per transaction that wrote. */
  readonly commits: number;
}

const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/** Reads the frame headers of `<db>-wal` (https://sqlite.org/fileformat2.html#walformat). */
export function readWal(walPath: string): WalPosition {
  let fd: number;
  try {
    fd = openSync(walPath, "r");
  } catch {
    return { salt1: 0, salt2: 0, pageSize: 0, frames: 0, commits: 0 };
  }
  try {
    const header = Buffer.alloc(WAL_HEADER);
    if (readSync(fd, header, 0, WAL_HEADER, 0) < WAL_HEADER)
      return { salt1: 0, salt2: 0, pageSize: 0, frames: 0, commits: 0 };
    const pageSize = header.readUInt32BE(8) === 1 ? 65536 : header.readUInt32BE(8);
    const salt1 = header.readUInt32BE(16);
    const salt2 = header.readUInt32BE(20);
    const frame = Buffer.alloc(FRAME_HEADER);
    let frames = 0;
    let commits = 0;
    for (;;) {
      const offset = WAL_HEADER + frames * (FRAME_HEADER + pageSize);
      if (readSync(fd, frame, 0, FRAME_HEADER, offset) < FRAME_HEADER) break;
      if (frame.readUInt32BE(8) !== salt1 || frame.readUInt32BE(12) !== salt2) break;
      frames += 1;
      if (frame.readUInt32BE(4) !== 0) commits += 1;
    }
    return { salt1, salt2, pageSize, frames, commits };
  } finally {
    closeSync(fd);
  }
}

/**
 * Bytes a store writes to its write-ahead log around a measured turn (the worker idle before and
 * after). Before: a checkpoint that lets the next writer start the log over, then one write of its
 * own, so the log's restart (a header written and synced) happens outside the measured turn. After:
 * the frames appended since, each one page plus its 24-byte header, and the commit frames among
 * them. Every page a transaction changes is one frame: this is what the store makes the disk write
 * now (a later checkpoint copies the newest version of each page into the database file).
 */
export class WalMeter implements BytesMeter {
  readonly unit = "WAL bytes (frames appended to the -wal file: page + 24-byte header each)";
  private readonly db: DatabaseSync;
  private readonly mark;
  private startAt: WalPosition | null = null;

  constructor(private readonly path: string) {
    this.db = openSide(path, "full");
    this.mark = this.db.prepare("INSERT INTO bench_floor (body) VALUES ('wal mark')");
  }

  async start(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const row = this.db.prepare("PRAGMA wal_checkpoint(RESTART)").get() as { busy: number };
      if (row.busy === 0) break;
      if (attempt > 100) throw new Error("the WAL checkpoint stayed busy (a reader held the log)");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    this.mark.run();
    this.startAt = readWal(`${this.path}-wal`);
  }

  async stop(): Promise<{ bytes: number; writes: number }> {
    const before = this.startAt!;
    const after = readWal(`${this.path}-wal`);
    if (after.salt1 !== before.salt1 || after.salt2 !== before.salt2 || after.frames < before.frames) {
      throw new Error("the WAL was restarted during a measured turn: its frames cannot be counted");
    }
    return {
      bytes: (after.frames - before.frames) * (FRAME_HEADER + after.pageSize),
      writes: after.commits - before.commits,
    };
  }

  close(): void {
    this.db.close();
  }
}

export interface SqliteInfo {
  /** `sqlite_version()` of the SQLite built into this Node. */
  readonly version: string;
  readonly journalMode: string;
  readonly pageSize: number;
  /** Frames after which a committing connection checkpoints (SQLite's default, 1000). */
  readonly walAutocheckpoint: number;
}

export function sqliteInfo(path: string): SqliteInfo {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const one = (sql: string) => Object.values(db.prepare(sql).get() as Record<string, unknown>)[0];
    return {
      version: String(one("SELECT sqlite_version()")),
      journalMode: String(one("PRAGMA journal_mode")),
      pageSize: Number(one("PRAGMA page_size")),
      walAutocheckpoint: Number(one("PRAGMA wal_autocheckpoint")),
    };
  } finally {
    db.close();
  }
}

/**
 * Real worker processes: `node dist/worker-process.js`, spawned with child_process, killed with
 * SIGKILL. The fleet keeps a number of them alive and remembers each one's life (pid, start, kill,
 * exit), which the invariant checks use as the end of a killed worker's last tool execution.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The built entry; the suites and the soak both run it from dist. */
export const workerEntry = fileURLToPath(new URL("../dist/worker-process.js", import.meta.url));

export interface WorkerLife {
  readonly pid: number;
  readonly startedAt: number;
  readyAt: number | null;
  killedAt: number | null;
  exitedAt: number | null;
  exit: string | null;
}

export interface WorkerFleetOptions {
  /** The worker's store flags: `--store postgres --database-url …` or `--store sqlite --sqlite-path …`. */
  readonly storeArgs: readonly string[];
  readonly leaseTtlMs: number;
  /** The Worker's `lingerMs`; its default when left out. */
  readonly lingerMs?: number;
  /** The Worker's `readToolHoldMs`; its default (0) when left out. */
  readonly readToolHoldMs?: number;
  /** PostgreSQL: the store's `compressHeads: true`. */
  readonly compressHeads?: boolean;
  readonly pollIntervalMs: number;
  readonly failureRate: number;
  readonly concurrency?: number;
  /** Each JSON line a worker writes on stderr (the errors its Worker reported). */
  readonly onWorkerError?: (line: string) => void;
}

interface Running {
  readonly child: ChildProcess;
  readonly life: WorkerLife;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
}

export class WorkerFleet {
  readonly lives: WorkerLife[] = [];
  /** Workers that exited although nobody killed or stopped them (each one was replaced). */
  readonly unexpectedExits: WorkerLife[] = [];
  private readonly running = new Map<number, Running>();
  private stopping = false;

  constructor(private readonly options: WorkerFleetOptions) {
    if (!existsSync(workerEntry)) {
      throw new Error(
        `${workerEntry} is missing: build the package first (pnpm --filter @durable-agents/crash-tests build)`,
      );
    }
  }

  get alive(): number {
    return this.running.size;
  }

  get pids(): number[] {
    return [...this.running.keys()];
  }

  /** Starts `count` workers and waits until every one of them is leasing (bounded). */
  async start(count: number, timeoutMs = 30_000): Promise<void> {
    const started = Array.from({ length: count }, () => this.spawnOne());
    await withTimeout(
      Promise.all(started.map((r) => r.ready)),
      timeoutMs,
      `${count} worker processes did not get ready`,
    );
  }

  /**
   * SIGKILLs one live worker, chosen at random among `prefer` (e.g. those with a tool call running)
   * when any of them is alive, else among all, and starts its replacement at once.
   */
  async killRandom(prefer: readonly number[] = []): Promise<WorkerLife> {
    const all = [...this.running.values()];
    if (all.length === 0) throw new Error("no worker process is alive to kill");
    const preferred = all.filter((r) => prefer.includes(r.life.pid));
    const pool = preferred.length > 0 ? preferred : all;
    return this.kill(pool[Math.floor(Math.random() * pool.length)]!.life.pid);
  }

  /** SIGKILLs the live worker `pid` at once, starts its replacement, and waits for both. */
  async kill(pid: number): Promise<WorkerLife> {
    const victim = this.running.get(pid);
    if (!victim) throw new Error(`worker ${pid} is not alive`);
    victim.life.killedAt = Date.now();
    victim.child.kill("SIGKILL");
    const replacement = this.spawnOne();
    await withTimeout(victim.exited, 10_000, `worker ${victim.life.pid} did not exit after SIGKILL`);
    await withTimeout(replacement.ready, 30_000, `the replacement of worker ${victim.life.pid} did not get ready`);
    return victim.life;
  }

  /** Writes one line to a live worker's stdin (a request the worker process understands). */
  tell(pid: number, line: string): void {
    this.running.get(pid)?.child.stdin?.write(`${line}\n`);
  }

  /** SIGTERM (graceful stop), then SIGKILL for any worker still running after `graceMs`. */
  async stop(graceMs = 8000): Promise<void> {
    this.stopping = true;
    const all = [...this.running.values()];
    for (const r of all) r.child.kill("SIGTERM");
    const timer = setTimeout(() => {
      for (const r of all) if (r.life.exitedAt === null) r.child.kill("SIGKILL");
    }, graceMs);
    await Promise.all(all.map((r) => r.exited));
    clearTimeout(timer);
  }

  /** Kills every worker hard (cleanup after a failure). */
  killAll(): void {
    this.stopping = true;
    for (const r of this.running.values()) r.child.kill("SIGKILL");
  }

  private spawnOne(): Running {
    const o = this.options;
    const args = [
      workerEntry,
      ...o.storeArgs,
      "--lease-ttl-ms",
      String(o.leaseTtlMs),
      ...(o.lingerMs === undefined ? [] : ["--linger-ms", String(o.lingerMs)]),
      ...(o.readToolHoldMs === undefined ? [] : ["--read-tool-hold-ms", String(o.readToolHoldMs)]),
      ...(o.compressHeads === true ? ["--compress-heads", "true"] : []),
      "--poll-interval-ms",
      String(o.pollIntervalMs),
      "--failure-rate",
      String(o.failureRate),
      "--concurrency",
      String(o.concurrency ?? 16),
    ];
    // stdin is a pipe the worker watches: if this process dies, the worker ends too (no orphans).
    const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] });
    if (child.pid === undefined) throw new Error("could not start a worker process");
    // A request written to a worker that just died must not end this process.
    child.stdin!.on("error", () => {});
    const life: WorkerLife = {
      pid: child.pid,
      startedAt: Date.now(),
      readyAt: null,
      killedAt: null,
      exitedAt: null,
      exit: null,
    };
    this.lives.push(life);
    let stdout = "";
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        if (life.readyAt === null && stdout.includes(`{"ready":${life.pid}}`)) {
          life.readyAt = Date.now();
          resolve();
        }
      });
      child.once("exit", () => {
        if (life.readyAt === null) reject(new Error(`worker ${life.pid} exited before it was ready (${life.exit})`));
      });
    });
    ready.catch(() => {});
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      for (let newline = stderr.indexOf("\n"); newline >= 0; newline = stderr.indexOf("\n")) {
        const line = stderr.slice(0, newline);
        stderr = stderr.slice(newline + 1);
        if (line.trim()) o.onWorkerError?.(line);
      }
    });
    const exited = new Promise<void>((resolve) => {
      child.once("exit", (code, signal) => {
        life.exitedAt = Date.now();
        life.exit = signal ?? `code ${code}`;
        this.running.delete(life.pid);
        if (!this.stopping && life.killedAt === null) {
          this.unexpectedExits.push(life);
          this.spawnOne();
        }
        resolve();
      });
    });
    const running: Running = { child, life, ready, exited };
    this.running.set(life.pid, running);
    return running;
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

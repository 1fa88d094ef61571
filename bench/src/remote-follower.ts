/**
 * The parent's side of a follower process (follower-process.ts): asks it to follow a session,
 * and turns the arrivals it reports into latencies against the chunks' production (StepClock,
 * this process's `performance.now()`, moved onto the shared monotonic clock).
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FollowerReport, FollowerRequest } from "./follower-process.js";
import { monotonicMs, type StepClock } from "./step-clock.js";
import { chunkLatencies, type TurnText } from "./turn-follower.js";

const followerPath = fileURLToPath(new URL("./follower-process.js", import.meta.url));

/** The monotonic clock minus `performance.now()` in this process (a constant; the smallest of a few reads). */
function clockOffset(): number {
  let best = Number.POSITIVE_INFINITY;
  let offset = 0;
  for (let i = 0; i < 50; i++) {
    const a = performance.now();
    const m = monotonicMs();
    const b = performance.now();
    if (b - a < best) {
      best = b - a;
      offset = m - (a + b) / 2;
    }
  }
  return offset;
}

export class RemoteFollower {
  private readonly child: ChildProcess;
  private readonly offsetMs = clockOffset();
  private readonly turns = new Map<string, TurnText>();
  private readonly waiters = new Map<string, () => void>();
  private error: Error | null = null;
  private readonly ready: Promise<void>;

  private constructor(path: string, watchIntervalMs: number) {
    this.child = fork(followerPath, [path, String(watchIntervalMs)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.once("exit", (code) => {
        this.error ??= new Error(`the follower process exited (${code})`);
        reject(this.error);
        for (const wake of this.waiters.values()) wake();
      });
      this.child.on("message", (report: FollowerReport) => {
        if (report.type === "ready") resolve();
        else if (report.type === "error") this.error = new Error(`follower process: ${report.message}`);
        else {
          const key =
            report.type === "following" ? `${report.sessionId} following` : `${report.sessionId} ${report.turnId}`;
          if (report.type === "turn") this.turns.set(key, { text: report.text, arrivals: report.arrivals });
          else this.turns.set(key, { text: "", arrivals: [] });
          this.waiters.get(key)?.();
          this.waiters.delete(key);
        }
      });
    });
    this.ready.catch(() => undefined);
  }

  /** Starts a follower process on the store file and waits until its store is open. */
  static async start(path: string, watchIntervalMs: number): Promise<RemoteFollower> {
    const follower = new RemoteFollower(path, watchIntervalMs);
    await follower.ready;
    return follower;
  }

  private send(request: FollowerRequest): void {
    this.child.send(request);
  }

  private async waitFor(key: string, timeoutMs: number): Promise<TurnText> {
    const deadline = Date.now() + timeoutMs;
    while (!this.turns.has(key)) {
      if (this.error) throw this.error;
      if (Date.now() > deadline) throw new Error(`the follower process did not report ${key} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.set(key, () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    const entry = this.turns.get(key)!;
    this.turns.delete(key);
    return entry;
  }

  /** Follows an existing session; resolves once the follower has read its first event. */
  async follow(sessionId: string): Promise<void> {
    this.send({ type: "follow", sessionId });
    await this.waitFor(`${sessionId} following`, 30_000);
  }

  unfollow(sessionId: string): void {
    this.send({ type: "unfollow", sessionId });
  }

  /** The latency of every chunk of the turn's answer at the follower process (waits for its report). */
  async textLatencies(sessionId: string, turnId: string, clock: StepClock): Promise<number[]> {
    const entry = await this.waitFor(`${sessionId} ${turnId}`, 30_000);
    return chunkLatencies(entry, clock, `${sessionId} ${turnId} (follower process)`, this.offsetMs);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.send({ type: "stop" });
    const timer = setTimeout(() => this.child.kill(), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

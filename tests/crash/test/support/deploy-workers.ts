/**
 * Worker processes of the rolling-deploy suite (`node dist/deploy-worker.js`), each serving one
 * version of the agents over the suite's store. Every tool execution a process reports on stdout is
 * collected, with the pid of the process that ran it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { DeployExecution } from "../../src/index.js";

const entry = fileURLToPath(new URL("../../dist/deploy-worker.js", import.meta.url));

export interface DeployWorker {
  readonly pid: number;
  readonly version: string;
  /** SIGTERM (graceful: steps in flight finish, leases and the definition announcement are given back), then waits for the exit. */
  stop(): Promise<void>;
  kill(): Promise<void>;
}

export class DeployFleet {
  readonly executions: (DeployExecution & { pid: number })[] = [];
  readonly errors: string[] = [];
  private readonly children = new Set<ChildProcess>();

  constructor(private readonly storeArgs: readonly string[]) {}

  async start(version: "v1" | "v2", options: { migrate?: boolean } = {}): Promise<DeployWorker> {
    const args = [entry, "--version", version, "--migrate", String(options.migrate ?? false), ...this.storeArgs];
    const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] });
    const pid = child.pid;
    if (pid === undefined) throw new Error("could not start a deploy worker");
    this.children.add(child);
    child.stdin!.on("error", () => {});
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    void exited.then(() => this.children.delete(child));
    let resolveReady!: () => void;
    const ready = new Promise<void>((resolve) => (resolveReady = resolve));
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      for (let nl = out.indexOf("\n"); nl >= 0; nl = out.indexOf("\n")) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        const message = JSON.parse(line) as { ready?: number; executed?: DeployExecution };
        if (message.ready) resolveReady();
        if (message.executed) this.executions.push({ ...message.executed, pid });
      }
    });
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => this.errors.push(chunk.trim()));
    await Promise.race([
      ready,
      exited.then(() => {
        throw new Error(`deploy worker ${version} exited before it was ready: ${this.errors.join("\n")}`);
      }),
    ]);
    return {
      pid,
      version,
      stop: async () => {
        child.kill("SIGTERM");
        await exited;
      },
      kill: async () => {
        child.kill("SIGKILL");
        await exited;
      },
    };
  }

  /** Kills every process still running (cleanup). */
  killAll(): void {
    for (const child of this.children) child.kill("SIGKILL");
  }
}

/** The crash tests' endpoint process (a real `node` child) and its executions file. */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, type RestateServer, registerDeployment, startRestateServer } from "../../src/testing/index.js";

export interface Execution {
  readonly kind: "tool" | "model";
  readonly tool?: string;
  readonly key?: string;
  readonly attempt?: number;
  readonly event: "start" | "end";
  readonly pid: number;
  readonly at: number;
}

const script = fileURLToPath(new URL("./crash-endpoint.mjs", import.meta.url));

export function readExecutions(file: string): Execution[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Execution);
}

/**
 * The idempotency keys of single-attempt calls that started more than once (with how often): the
 * crash tests' first invariant, as a pure function so that it can be shown to catch a violation.
 */
export function singleAttemptRepeats(executions: readonly Execution[], tools: readonly string[]): Map<string, number> {
  const starts = new Map<string, number>();
  for (const e of executions) {
    if (e.kind === "tool" && e.tool !== undefined && tools.includes(e.tool) && e.event === "start" && e.key)
      starts.set(e.key, (starts.get(e.key) ?? 0) + 1);
  }
  return new Map([...starts].filter(([, count]) => count > 1));
}

/** Calls that started in a process and never ended there: what a kill interrupted. */
export function interruptedCalls(executions: readonly Execution[], pid: number): Execution[] {
  const ended = new Set(executions.filter((e) => e.event === "end" && e.pid === pid).map((e) => e.key));
  return executions.filter((e) => e.event === "start" && e.pid === pid && !ended.has(e.key));
}

export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface EndpointProcessOptions {
  readonly port: number;
  readonly ingressUrl: string;
  readonly prefix: string;
  readonly executions: string;
  readonly holdMs?: number;
}

/** Endpoint processes still running, killed if the test process exits first. */
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

export class EndpointProcess {
  private child: ChildProcess | null = null;
  readonly url: string;
  readonly executions: string;

  constructor(private readonly options: EndpointProcessOptions) {
    this.url = `http://127.0.0.1:${options.port}`;
    this.executions = options.executions;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process and waits until it listens. */
  async start(): Promise<void> {
    const child = spawn(process.execPath, [script], {
      env: {
        ...process.env,
        PORT: String(this.options.port),
        INGRESS_URL: this.options.ingressUrl,
        PREFIX: this.options.prefix,
        EXECUTIONS: this.options.executions,
        HOLD_MS: String(this.options.holdMs ?? 600),
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    this.child = child;
    live.add(child);
    child.once("exit", () => live.delete(child));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the endpoint process did not start in time")), 30_000);
      child.stdout!.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("ready")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the endpoint process exited (${code ?? signal}) before it listened`));
      });
    });
  }

  /** SIGKILL, and waits until the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await gone;
  }

  async stop(): Promise<void> {
    await this.kill();
  }
}

/** A private restate-server with one endpoint process registered on it, and a temp folder for its executions file. */
export interface EndpointRig {
  readonly server: RestateServer;
  readonly endpoint: EndpointProcess;
  readonly dir: string;
  /** Stops the endpoint process and the server, and removes the folder. */
  close(): Promise<void>;
}

export async function startEndpointRig(name: string, prefix: string, holdMs?: number): Promise<EndpointRig> {
  const dir = mkdtempSync(join(tmpdir(), `engine-restate-${name}-`));
  const server = await startRestateServer();
  const endpoint = new EndpointProcess({
    port: await freePort(),
    ingressUrl: server.ingressUrl,
    prefix,
    executions: join(dir, "executions.jsonl"),
    ...(holdMs === undefined ? {} : { holdMs }),
  });
  await endpoint.start();
  await registerDeployment(server.adminUrl, endpoint.url);
  return {
    server,
    endpoint,
    dir,
    async close() {
      await endpoint.stop();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

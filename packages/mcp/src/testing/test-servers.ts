/**
 * Real MCP server processes for tests: `McpTestServer` writes a spec for `test-server` (the SDK's
 * own server classes, in a child process) and starts it over stdio (the toolset spawns it) or over
 * Streamable HTTP on a loopback port (the test spawns it, and can SIGKILL and restart it).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { McpHttpServer, McpStdioServer } from "../server-config.js";

/** What a test tool does when called (see `test-server.ts`). */
export type TestBehaviour =
  | { readonly kind: "echo" }
  | { readonly kind: "content"; readonly text?: string; readonly content?: unknown[]; readonly structured?: unknown }
  | { readonly kind: "is_error"; readonly text: string }
  | { readonly kind: "rpc_error"; readonly message: string; readonly code?: number; readonly times?: number }
  | { readonly kind: "hang"; readonly attempts?: readonly number[] }
  | { readonly kind: "relay"; readonly url: string };

export interface TestTool {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema?: Record<string, unknown>;
  readonly outputSchema?: Record<string, unknown>;
  readonly annotations?: Record<string, unknown>;
  readonly behaviour: TestBehaviour;
}

/** One line of the server's call log. */
export interface TestCallEvent {
  readonly event: "start" | "end" | "cancelled";
  readonly tool: string;
  readonly args?: Record<string, unknown>;
  readonly meta?: Record<string, unknown>;
  readonly error?: string;
  readonly pid: number;
  readonly at: number;
}

/** The server script: the source when this module runs from source (Node strips its types), else the build. */
export const testServerScript: string = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./test-server.ts" : "./test-server.js", import.meta.url),
);

/** An MCP server started over Streamable HTTP by the test: a real process on a loopback port. */
export interface HttpTestProcess {
  readonly url: string;
  readonly port: number;
  readonly process: ChildProcess;
  /** SIGKILL, then waits for the process to be gone. */
  kill(): Promise<void>;
}

export class McpTestServer {
  readonly dir: string;
  readonly specPath: string;
  readonly logPath: string;
  readonly #processes = new Set<ChildProcess>();

  constructor(tools: readonly TestTool[]) {
    this.dir = mkdtempSync(join(tmpdir(), "durable-agents-mcp-"));
    this.specPath = join(this.dir, "spec.json");
    this.logPath = join(this.dir, "calls.jsonl");
    this.setTools(tools);
  }

  /** Rewrites the spec: the running servers read it again and send `notifications/tools/list_changed`. */
  setTools(tools: readonly TestTool[]): void {
    const next = join(this.dir, `spec-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(next, JSON.stringify({ tools, log: this.logPath }));
    // Written whole, then put in place, so the server never reads half a file.
    renameSync(next, this.specPath);
  }

  /** A stdio server config for `McpToolset.connect`: the toolset starts (and restarts) the process. */
  stdio(name: string, extra: Partial<McpStdioServer> = {}): McpStdioServer {
    return {
      name,
      command: process.execPath,
      args: ["--no-warnings", testServerScript],
      env: { MCP_TEST_SPEC: this.specPath },
      stderr: "inherit",
      ...extra,
    };
  }

  /** Starts the server over Streamable HTTP on 127.0.0.1 (`port` 0: a free one) and waits until it listens. */
  async startHttp(port = 0): Promise<HttpTestProcess> {
    const child = spawn(process.execPath, ["--no-warnings", testServerScript, "--http", String(port)], {
      env: { ...process.env, MCP_TEST_SPEC: this.specPath },
      stdio: ["ignore", "pipe", "inherit"],
    });
    this.#processes.add(child);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    void exited.then(() => this.#processes.delete(child));
    const listening = await new Promise<number>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error("the MCP test server did not start within 15 s")), 15_000);
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8");
        const match = /listening (\d+)/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the MCP test server exited with ${code} before it listened`));
      });
    });
    return {
      url: `http://127.0.0.1:${listening}/mcp`,
      port: listening,
      process: child,
      kill: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await exited;
      },
    };
  }

  /** An HTTP server config for `McpToolset.connect`. */
  static http(name: string, url: string, extra: Partial<McpHttpServer> = {}): McpHttpServer {
    return { name, url, ...extra };
  }

  /** Every call event logged so far, in order (by every process this server ran as). */
  events(): TestCallEvent[] {
    if (!existsSync(this.logPath)) return [];
    return readFileSync(this.logPath, "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as TestCallEvent);
  }

  /** The calls of one tool (or of every tool) that started, in order. */
  starts(tool: string | undefined): TestCallEvent[] {
    return this.events().filter((e) => e.event === "start" && (tool === undefined || e.tool === tool));
  }

  /** Stops the HTTP processes it started and removes its files. */
  async dispose(): Promise<void> {
    await Promise.all(
      [...this.#processes].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGKILL");
          }),
      ),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Waits until `check` holds (polling every 10 ms), or fails naming `what`. */
export async function waitUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A private `restate-server` for tests: the binary of the `@restatedev/restate-server` npm package
 * (its platform package), a new temporary data folder, free ports on 127.0.0.1, and a short retry
 * policy so that an invocation whose endpoint died is tried again within a fraction of a second.
 * `kill` and `start` restart it on the same folder and ports (what a crash test of the server needs).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { arch, platform, tmpdir } from "node:os";
import { join } from "node:path";

export interface StartRestateServerOptions {
  /** Partitions of the new cluster (default 4: fewer than the server's 24, for a 2-core machine). */
  readonly partitions?: number;
  /** Longest wait between two attempts of a failed invocation (ms, default 250). */
  readonly maxRetryIntervalMs?: number;
}

export interface RestateServer {
  readonly ingressUrl: string;
  readonly adminUrl: string;
  /** The temporary folder: the data, the config file and `server.log`. */
  readonly dir: string;
  /** The server process's pid, or null while it is not running. */
  readonly pid: number | null;
  /** Kills the process (SIGKILL by default) and waits for it to exit; the data stays. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same data and ports, and waits until it answers. */
  start(): Promise<void>;
  /** Stops the server and removes its folder. Safe to call twice. */
  stop(): Promise<void>;
}

const running = new Set<{ child: ChildProcess | null; dir: string }>();
let exitHookInstalled = false;

/** The restate-server binary shipped in the platform package that `@restatedev/restate-server` depends on. */
export function restateServerBinary(): string {
  const require = createRequire(import.meta.url);
  const wrapper = require.resolve("@restatedev/restate-server/package.json");
  const binary = `@restatedev/restate-server-${platform()}-${arch()}/bin/restate-server`;
  try {
    return createRequire(wrapper).resolve(binary);
  } catch {
    throw new Error(`no restate-server binary for ${platform()}-${arch()} (${binary} is not installed)`);
  }
}

export async function startRestateServer(options: StartRestateServerOptions = {}): Promise<RestateServer> {
  const binary = restateServerBinary();
  const dir = mkdtempSync(join(tmpdir(), "durable-agents-restate-"));
  const [ingress, admin, node] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, "restate.toml");
  writeFileSync(
    config,
    [
      'cluster-name = "durable-agents-test"',
      'node-name = "node-1"',
      `default-num-partitions = ${options.partitions ?? 4}`,
      'rocksdb-total-memory-size = "256 MiB"',
      "disable-telemetry = true",
      'listen-mode = "tcp"',
      'log-filter = "warn"',
      "log-disable-ansi-codes = true",
      `bind-address = "127.0.0.1:${node}"`,
      `advertised-address = "http://127.0.0.1:${node}/"`,
      "[ingress]",
      `bind-address = "127.0.0.1:${ingress}"`,
      "[admin]",
      `bind-address = "127.0.0.1:${admin}"`,
      "disable-web-ui = true",
      "[admin.query-engine]",
      'memory-size = "128 MiB"',
      "[default-retry-policy]",
      'initial-interval = "20ms"',
      "exponentiation-factor = 1.5",
      `max-interval = "${options.maxRetryIntervalMs ?? 250}ms"`,
      "max-attempts = 1000000",
      "",
    ].join("\n"),
  );
  const entry: { child: ChildProcess | null; dir: string } = { child: null, dir };
  running.add(entry);
  installExitHook();
  const ingressUrl = `http://127.0.0.1:${ingress}`;
  const adminUrl = `http://127.0.0.1:${admin}`;

  const launch = async () => {
    const log = openSync(join(dir, "server.log"), "a");
    const child = spawn(binary, ["--config-file", config, "--base-dir", join(dir, "data"), "--no-logo"], {
      stdio: ["ignore", log, log],
      env: { ...process.env, RESTATE_LOG_FORMAT: "compact" },
    });
    entry.child = child;
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code, signal) =>
        reject(
          new Error(`restate-server exited (${code ?? signal}) before it answered; see ${join(dir, "server.log")}`),
        ),
      ),
    );
    exited.catch(() => {});
    await Promise.race([waitUntilUp(adminUrl, ingressUrl), exited]);
  };

  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    const child = entry.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      entry.child = null;
      return;
    }
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill(signal);
    await gone;
    entry.child = null;
  };

  try {
    await launch();
  } catch (error) {
    await kill();
    running.delete(entry);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  return {
    ingressUrl,
    adminUrl,
    dir,
    get pid() {
      return entry.child?.pid ?? null;
    },
    kill,
    start: launch,
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill("SIGTERM");
      running.delete(entry);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitUntilUp(adminUrl: string, ingressUrl: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const [a, i] = await Promise.all([fetch(`${adminUrl}/health`), fetch(`${ingressUrl}/restate/health`)]);
      await Promise.all([a.arrayBuffer(), i.arrayBuffer()]);
      if (a.ok && i.ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`restate-server did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const entry of running) {
      try {
        entry.child?.kill("SIGKILL");
      } catch {
        // Gone already.
      }
      rmSync(entry.dir, { recursive: true, force: true });
    }
  });
}

/** A port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

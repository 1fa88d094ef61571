import { spawn, spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface StartPostgresOptions {
  /** `fsync` of the server; default false (tests), `synchronous_commit` stays on either way. */
  readonly fsync?: boolean;
  /** Default 200. */
  readonly maxConnections?: number;
  /**
   * More server settings, written to `postgresql.auto.conf` after the ones above (a later line wins),
   * e.g. `{ checkpoint_timeout: "1d" }`. A name that is not a setting's name, or a value that is not a
   * one-line string, is a `TypeError` before anything is created, and the server does not start with a
   * value it does not take.
   */
  readonly settings?: Readonly<Record<string, string>>;
}

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust authentication. */
  readonly connectionString: string;
  readonly port: number;
  /** The temporary folder of the data directory, the log and the socket. */
  readonly dir: string;
  /** `pg_ctl restart`: every connection is dropped, the data stays. */
  restart(options?: { mode?: "fast" | "immediate" }): Promise<void>;
  /** Stops the server and removes its folder. Safe to call twice. */
  stop(): Promise<void>;
}

interface Running {
  readonly dir: string;
  readonly asPostgres: boolean;
}

/** Servers this process started and has not stopped, stopped hard if the process exits first. */
const running = new Set<Running>();
let exitHookInstalled = false;

/**
 * Starts a private PostgreSQL (the `initdb`, `pg_ctl` and `postgres` on the PATH) in a new temporary
 * folder, on a free port of 127.0.0.1. PostgreSQL refuses to run as root, so under root the folder
 * is given to the `postgres` user and the binaries run through `runuser -u postgres`.
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  for (const [name, value] of Object.entries(options.settings ?? {})) {
    if (!/^[a-z][a-z0-9_.]*$/.test(name)) throw new TypeError(`startPostgres: "${name}" is not a setting's name`);
    // A value is one quoted string on its line of the configuration file.
    if (typeof value !== "string" || /[\n\r\0]/.test(value)) {
      throw new TypeError(`startPostgres: the value of "${name}" is not a one-line string`);
    }
  }
  const asPostgres = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "durable-agents-pg-"));
  const server: Running = { dir, asPostgres };
  const data = join(dir, "data");
  if (asPostgres) {
    const { uid, gid } = postgresUser();
    chownSync(dir, uid, gid);
  }
  installExitHook();
  running.add(server);
  try {
    await run(server, ["initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"]);
    const settings = [
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      `fsync = ${options.fsync === true ? "on" : "off"}`,
      "synchronous_commit = on",
      `max_connections = ${options.maxConnections ?? 200}`,
      "shared_buffers = 32MB",
      ...Object.entries(options.settings ?? {}).map(([name, value]) => `${name} = '${value.replaceAll("'", "''")}'`),
    ];
    writeFileSync(join(data, "postgresql.auto.conf"), `${settings.join("\n")}\n`);
    let port = 0;
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await run(server, [
          "pg_ctl",
          "start",
          "-w",
          "-t",
          "60",
          "-D",
          data,
          "-l",
          join(dir, "log"),
          "-o",
          `-p ${port}`,
        ]);
        break;
      } catch (error) {
        // Another process may have taken the port between the probe and the start.
        if (attempt >= 3) throw error;
      }
    }
    let stopped = false;
    return {
      connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dir,
      async restart({ mode = "fast" } = {}) {
        await run(server, [
          "pg_ctl",
          "restart",
          "-w",
          "-t",
          "60",
          "-D",
          data,
          "-m",
          mode,
          "-l",
          join(dir, "log"),
          "-o",
          `-p ${port}`,
        ]);
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        try {
          await run(server, ["pg_ctl", "stop", "-w", "-t", "60", "-D", data, "-m", "fast"]);
        } finally {
          running.delete(server);
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    stopHard(server);
    throw error;
  }
}

function postgresUser(): { uid: number; gid: number } {
  const result = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
  const group = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
  if (result.status !== 0 || group.status !== 0) {
    throw new Error("running as root needs a 'postgres' user to run PostgreSQL (it refuses root)");
  }
  return { uid: Number(result.stdout.trim()), gid: Number(group.stdout.trim()) };
}

function command(server: Running, args: string[]): [string, string[]] {
  return server.asPostgres ? ["runuser", ["-u", "postgres", "--", ...args]] : [args[0]!, args.slice(1)];
}

function run(server: Running, args: string[]): Promise<void> {
  const [file, argv] = command(server, args);
  return new Promise((resolve, reject) => {
    // stdout is not piped: the server that `pg_ctl start` leaves behind must not hold our pipe.
    const child = spawn(file, argv, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code === 0) resolve();
      else reject(new Error(`${args.join(" ")} failed (exit ${code}): ${stderr.trim()}`));
    });
  });
}

function stopHard(server: Running): void {
  const [file, argv] = command(server, ["pg_ctl", "stop", "-D", join(server.dir, "data"), "-m", "immediate", "-w"]);
  spawnSync(file, argv, { stdio: "ignore" });
  running.delete(server);
  rmSync(server.dir, { recursive: true, force: true });
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const server of [...running]) stopHard(server);
  });
}

function freePort(): Promise<number> {
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

/**
 * A built entry point (dist/demo.js, dist/server-main.js) as a real child process, for tests: its
 * output as it arrives, a wait for a line to appear, stdin to answer questions, and its exit.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";

export const exampleRoot = fileURLToPath(new URL("../..", import.meta.url));
export const demoScript = fileURLToPath(new URL("../../dist/demo.js", import.meta.url));
export const serverScript = fileURLToPath(new URL("../../dist/server-main.js", import.meta.url));

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Child {
  readonly process: ChildProcessWithoutNullStreams;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: Promise<Exit>;
  /**
   * Resolves with the first match of `pattern` in stdout, once it is there; rejects when the
   * process exits first, or after `timeoutMs` (a guard against a hang, not a measurement).
   */
  waitFor(pattern: string | RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Writes one line to its stdin. */
  answer(line: string): void;
  kill(signal: NodeJS.Signals): Promise<Exit>;
}

export function startChild(script: string, args: readonly string[], env: Record<string, string | undefined>): Child {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: exampleRoot,
    // The demo model whatever the environment says; no colours, so the text can be matched.
    env: { ...process.env, ORDER_SUPPORT_MODEL: "demo", NO_COLOR: "1", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    for (const listener of [...listeners]) listener();
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<Exit>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal }));
  });
  let ended = false;
  void exited.then(() => {
    ended = true;
    for (const listener of [...listeners]) listener();
  });

  return {
    process: child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitFor(pattern, timeoutMs = 60_000) {
      const regex = typeof pattern === "string" ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) : pattern;
      return new Promise((resolve, reject) => {
        const look = () => {
          const match = regex.exec(stdout);
          if (match) done(() => resolve(match));
          else if (ended)
            done(() => reject(new Error(`the process exited before printing ${regex}:\n${stdout}\n${stderr}`)));
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`no ${regex} within ${timeoutMs} ms:\n${stdout}\n${stderr}`))),
          timeoutMs,
        );
        const done = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(look);
          settle();
        };
        listeners.add(look);
        look();
      });
    },
    answer(line) {
      child.stdin.write(`${line}\n`);
    },
    async kill(signal) {
      if (!ended) child.kill(signal);
      return exited;
    },
  };
}

/** Runs a script to its end with stdin closed at once (not a TTY, nothing to read). */
export async function runToEnd(
  script: string,
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<Exit & { stdout: string; stderr: string }> {
  const child = startChild(script, args, env);
  child.process.stdin.end();
  const exit = await child.exited;
  return { ...exit, stdout: child.stdout(), stderr: child.stderr() };
}

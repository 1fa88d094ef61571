/** Drives test/support/store-process.mjs: a second process with its own SqliteStore on one file. */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { StoreNotification } from "@durable-agents/core/engine";

export interface StoreProcess {
  call<T = unknown>(command: string, args?: unknown): Promise<T>;
  /** Resolves when the process has reported a notification that matches. */
  notified(match: (n: StoreNotification) => boolean, timeoutMs?: number): Promise<StoreNotification>;
  readonly notifications: StoreNotification[];
  /** Resolves once the line with this id arrived (for commands that report before they finish). */
  line(id: string): Promise<unknown>;
  stop(): Promise<void>;
}

export class RemoteError extends Error {
  constructor(
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

const script = fileURLToPath(new URL("./store-process.mjs", import.meta.url));

export function startStoreProcess(path: string): StoreProcess {
  const child = spawn(process.execPath, [script, path], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map<string, (message: Record<string, unknown>) => void>();
  const notifications: StoreNotification[] = [];
  const watchers = new Set<() => void>();
  createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line) as Record<string, unknown>;
    if (message.notification) {
      notifications.push(message.notification as StoreNotification);
      for (const watcher of [...watchers]) watcher();
      return;
    }
    const id = String(message.id);
    waiting.get(id)?.(message);
    waiting.delete(id);
  });
  let next = 0;
  const line = (id: string) => new Promise<Record<string, unknown>>((resolve) => waiting.set(id, resolve));
  return {
    notifications,
    async call<T>(command: string, args?: unknown): Promise<T> {
      const id = String(++next);
      const reply = line(id);
      child.stdin.write(`${JSON.stringify({ id, command, args })}\n`);
      const message = await reply;
      if (message.error) {
        const error = message.error as { code?: string; message: string };
        throw new RemoteError(error.code, error.message);
      }
      return message.result as T;
    },
    line,
    notified(match, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = notifications.find(match);
          if (!found) return;
          watchers.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`no matching notification; got ${JSON.stringify(notifications)}`));
        }, timeoutMs);
        watchers.add(check);
        check();
      });
    },
    async stop() {
      child.stdin.end();
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

/**
 * Runs the built `server-main.js` (what `pnpm serve` starts) as a real child process on a free port,
 * walks through the README's curl sequence with fetch, and stops it with SIGTERM.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHmac } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionSnapshot } from "@durable-agents/core";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";

const serverMain = fileURLToPath(new URL("../dist/server-main.js", import.meta.url));
const sessionKey = "a key for the server process test";

let child: ChildProcessWithoutNullStreams;
let output = "";
let base = "";
// The default store (SQLite) on a file of this test's own.
const temp = tempStoreDir("order-support-server-");
const db = temp.file("server.db");

beforeAll(async () => {
  child = spawn(process.execPath, [serverMain], {
    env: {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      ORDER_SUPPORT_SESSION_KEY: sessionKey,
      ORDER_SUPPORT_MODEL: "demo",
      ORDER_SUPPORT_DB: db,
    },
  });
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${output}`)), 20_000);
    const look = () => {
      const match = /order support on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout.on("data", look);
    child.on("exit", (code) => reject(new Error(`the server exited with ${code}: ${output}`)));
  });
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
  temp.remove();
});

async function snapshot(id: string, token: string): Promise<SessionSnapshot> {
  const response = await fetch(`${base}/sessions/${id}/snapshot`, { headers: { "x-session-token": token } });
  expect(response.status).toBe(200);
  return (await response.json()) as SessionSnapshot;
}

async function until(id: string, token: string, predicate: (s: SessionSnapshot) => boolean): Promise<SessionSnapshot> {
  for (let i = 0; i < 500; i++) {
    const s = await snapshot(id, token);
    if (predicate(s)) return s;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("the session did not reach the state in time");
}

describe("pnpm serve (server-main) as a child process", () => {
  it("serves a whole session with tokens signed by ORDER_SUPPORT_SESSION_KEY, and stops on SIGTERM", async () => {
    expect(output).toContain("model: demo model");
    expect(output).toContain(`store: sqlite ${db})`);
    const started = await fetch(`${base}/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "Please cancel order 1002" }),
    });
    expect(started.status).toBe(201);
    const { session_id: id, session_token: token } = (await started.json()) as {
      session_id: string;
      session_token: string;
    };
    expect(token).toBe(createHmac("sha256", sessionKey).update(id).digest("base64url"));

    const waiting = await until(id, token, (s) => s.pendingInterrupts.length > 0);
    const interrupt = waiting.pendingInterrupts[0]!;
    expect(interrupt.toolName).toBe("cancel_order");
    const approved = await fetch(`${base}/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, {
      method: "POST",
      headers: { "x-session-token": token },
    });
    expect(approved.status).toBe(202);
    const done = await until(id, token, (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant");
    expect(done.messages.at(-1)?.text).toBe(
      "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
    );

    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(output).toContain("SIGTERM: stopping");
    // The whole graceful stop ran (the Agents SDK's own signal handler once cut it short).
    expect(output).toContain("stopped: steps in flight finished, store closed");
  });
});

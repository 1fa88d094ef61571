/**
 * `pnpm serve` with `ORDER_SUPPORT_FRAMEWORK`: the built server-main as a child process on the AI
 * SDK, and a refused framework name.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { SessionSnapshot } from "@durable-agents/core";

const serverMain = fileURLToPath(new URL("../dist/server-main.js", import.meta.url));

function startServer(framework: string) {
  const child = spawn(process.execPath, [serverMain], {
    // The memory store: this test is about the framework, and leaves no file behind.
    env: {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      ORDER_SUPPORT_MODEL: "demo",
      ORDER_SUPPORT_FRAMEWORK: framework,
      ORDER_SUPPORT_STORE: "memory",
    },
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${output}`)), 20_000);
    child.stdout.on("data", () => {
      const match = /order support on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code}: ${output}`));
    });
  });
  url.catch(() => undefined);
  return { child, url, exited, output: () => output };
}

describe("pnpm serve with ORDER_SUPPORT_FRAMEWORK", () => {
  it("runs the AI SDK agent with ORDER_SUPPORT_FRAMEWORK=ai-sdk: a cancellation after approval", async () => {
    const server = startServer("ai-sdk");
    try {
      const base = await server.url;
      expect(server.output()).toContain("framework: ai-sdk; model: demo model");
      expect(server.output()).toContain("store: in memory)");
      const started = await fetch(`${base}/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: "cancel order 1002" }),
      });
      expect(started.status).toBe(201);
      const { session_id: id, session_token: token } = (await started.json()) as {
        session_id: string;
        session_token: string;
      };
      const snapshot = async () =>
        (await (
          await fetch(`${base}/sessions/${id}/snapshot`, { headers: { "x-session-token": token } })
        ).json()) as SessionSnapshot;
      let current = await snapshot();
      for (let i = 0; i < 500 && current.pendingInterrupts.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        current = await snapshot();
      }
      const interrupt = current.pendingInterrupts[0]!;
      expect(interrupt.toolName).toBe("cancel_order");
      const approved = await fetch(`${base}/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, {
        method: "POST",
        headers: { "x-session-token": token },
      });
      expect(approved.status).toBe(202);
      for (let i = 0; i < 500 && !(current.status === "idle" && current.messages.at(-1)?.role === "assistant"); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        current = await snapshot();
      }
      expect(current.messages.at(-1)?.text).toBe(
        "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
      );
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    } finally {
      if (server.child.exitCode === null) server.child.kill("SIGKILL");
    }
  });

  it("refuses an unknown framework at start", async () => {
    const server = startServer("langchain");
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain('ORDER_SUPPORT_FRAMEWORK must be one of openai-agents, ai-sdk, not "langchain"');
    await expect(server.url).rejects.toThrow(/exited with 1/);
  });
});

/** `server-main` as a child process on a free port, and the first call a client makes to it. */
import { expect } from "vitest";
import { serverScript, startChild, type Child } from "./child.js";

/** Starts the server with `env` (on a free port of 127.0.0.1) and waits until it listens. */
export async function startServerChild(
  env: Record<string, string>,
  children: Child[],
): Promise<{ child: Child; base: string }> {
  const child = startChild(serverScript, [], { PORT: "0", HOST: "127.0.0.1", ...env });
  children.push(child);
  child.process.stdin.end();
  const match = await child.waitFor(/order support on (http:\/\/\S+) /);
  return { child, base: match[1]! };
}

/** `POST /sessions` with a first message; answers the session's ID and token. */
export async function createSessionOver(base: string, message: string): Promise<{ id: string; token: string }> {
  const created = await fetch(`${base}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message }),
  });
  expect(created.status).toBe(201);
  const body = (await created.json()) as { session_id: string; session_token: string };
  return { id: body.session_id, token: body.session_token };
}

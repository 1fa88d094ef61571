/**
 * `pnpm serve` with `ORDER_SUPPORT_ENGINE=restate`: a real `restate-server` (from the npm package,
 * started by this file on free ports) drives and keeps the sessions; the server process serves the
 * engine's endpoint and registers it. A session waiting for approval survives a SIGKILL of the
 * server process: a new process registers again, takes the approval and finishes the turn, and the
 * order desk (a SQLite file) was changed once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SessionSnapshot } from "@durable-agents/core";
import { freePort, type RestateServer, startRestateServer } from "@durable-agents/engine-restate/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { OrderDesk } from "../src/order-desk.js";
import { deskFileFor } from "../src/order-support-store.js";
import { runToEnd, serverScript, type Child } from "./support/child.js";
import { createSessionOver, startServerChild } from "./support/server-child.js";

let restate: RestateServer;
let dir: string;
const children: Child[] = [];

beforeAll(async () => {
  restate = await startRestateServer();
  dir = mkdtempSync(join(tmpdir(), "order-support-restate-"));
}, 60_000);
afterAll(async () => {
  await restate?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const child of children.splice(0)) await child.kill("SIGKILL");
});

async function snapshotUntil(
  base: string,
  id: string,
  token: string,
  done: (snapshot: SessionSnapshot) => boolean,
): Promise<SessionSnapshot> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${base}/sessions/${id}/snapshot`, { headers: { "x-session-token": token } });
    expect(response.status).toBe(200);
    const snapshot = (await response.json()) as SessionSnapshot;
    if (done(snapshot)) return snapshot;
    if (Date.now() > deadline) throw new Error(`the session did not get there: ${JSON.stringify(snapshot.status)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("pnpm serve with ORDER_SUPPORT_ENGINE=restate", () => {
  it("runs the sessions on Restate; one waiting for approval survives a SIGKILL of the server", async () => {
    const env = {
      ORDER_SUPPORT_ENGINE: "restate",
      RESTATE_INGRESS_URL: restate.ingressUrl,
      RESTATE_ADMIN_URL: restate.adminUrl,
      ORDER_SUPPORT_ENDPOINT_PORT: String(await freePort()),
      ORDER_SUPPORT_DB: join(dir, "server.db"),
      ORDER_SUPPORT_SESSION_KEY: "the key of the restate test",
    };
    const first = await startServerChild(env, children);
    expect(first.child.stdout()).toMatch(
      /engine: restate at http:\/\/127\.0\.0\.1:\d+, endpoint http:\/\/127\.0\.0\.1:\d+ registered as dp_/,
    );
    const { id, token } = await createSessionOver(first.base, "look up order 1001");
    const answered = await snapshotUntil(first.base, id, token, (s) => s.turnCount === 1 && s.status === "idle");
    expect(answered.messages.at(-1)?.text).toContain("Order 1001 for Ada");

    const sent = await fetch(`${first.base}/sessions/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-token": token },
      body: JSON.stringify({ text: "cancel order 1002" }),
    });
    expect(sent.status).toBe(202);
    const waiting = await snapshotUntil(first.base, id, token, (s) => s.status === "awaiting_approval");
    const interrupt = waiting.pendingInterrupts[0]!;
    expect(interrupt.toolName).toBe("cancel_order");
    expect((await first.child.kill("SIGKILL")).signal).toBe("SIGKILL");

    // A new process: Restate kept the session (nothing of it was in the killed process).
    const second = await startServerChild(env, children);
    const before = await snapshotUntil(second.base, id, token, (s) => s.status === "awaiting_approval");
    expect(before.pendingInterrupts.map((i) => i.interruptId)).toEqual([interrupt.interruptId]);
    const approved = await fetch(`${second.base}/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-token": token },
      body: "{}",
    });
    expect(approved.status).toBe(202);
    const finished = await snapshotUntil(second.base, id, token, (s) => s.turnCount === 2 && s.status === "idle");
    expect(finished.messages.at(-1)?.text).toMatch(/1002/);
    expect(finished.messages.filter((m) => m.role === "user").map((m) => m.text)).toEqual([
      "look up order 1001",
      "cancel order 1002",
    ]);
    expect(finished.lastEventSeq).toBeGreaterThan(answered.lastEventSeq);
    // The cancellation ran once, in the desk's own file.
    const desk = OrderDesk.open(deskFileFor(env.ORDER_SUPPORT_DB));
    try {
      expect(desk.cancelCalls().map((call) => [call.orderId, call.outcome])).toEqual([["1002", "cancelled"]]);
      expect(desk.order("1002")?.status).toBe("cancelled");
    } finally {
      desk.close();
    }
    expect((await second.child.kill("SIGTERM")).code).toBe(0);
  });

  it("stops at start with a message when Restate's admin API cannot be reached", async () => {
    const result = await runToEnd(serverScript, [], {
      PORT: "0",
      ORDER_SUPPORT_ENGINE: "restate",
      RESTATE_ADMIN_URL: "http://127.0.0.1:1",
      ORDER_SUPPORT_ENDPOINT_PORT: "0",
      ORDER_SUPPORT_DB: join(dir, "unreachable.db"),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^RESTATE_ADMIN_URL: the endpoint http:\/\/127\.0\.0\.1:\d+ could not be registered/);
  });

  it("refuses an unknown engine", async () => {
    const result = await runToEnd(serverScript, [], { PORT: "0", ORDER_SUPPORT_ENGINE: "dex" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ORDER_SUPPORT_ENGINE is "dex": use worker or restate');
  });
});

/**
 * `pnpm serve` killed and started again on the same SQLite file and session key, as real processes
 * over real HTTP: a session created before the SIGKILL keeps working after the restart. Its token
 * is still valid, its pending approval is still approvable (and the cancellation runs once), and
 * its event stream resumes from `Last-Event-ID` with no gap and no duplicate.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SessionEvent, SessionSnapshot } from "@durable-agents/core";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { OrderDesk } from "../src/order-desk.js";
import { deskFileFor } from "../src/order-support-store.js";
import { runToEnd, serverScript, type Child } from "./support/child.js";
import { createSessionOver, startServerChild } from "./support/server-child.js";
import { SseConnection, type SseMessage } from "./support/sse-reader.js";

const sessionKey = "the key of the restart test";
let temp: ReturnType<typeof tempStoreDir> | null = null;
const children: Child[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) await child.kill("SIGKILL");
  temp?.remove();
  temp = null;
});

const startServer = (env: Record<string, string>) => startServerChild(env, children);

async function snapshot(base: string, id: string, token: string): Promise<SessionSnapshot> {
  const response = await fetch(`${base}/sessions/${id}/snapshot`, { headers: { "x-session-token": token } });
  expect(response.status).toBe(200);
  return (await response.json()) as SessionSnapshot;
}

/** Reads SSE messages until the `count`-th one of type `until`; returns them all. */
async function readUntil(stream: SseConnection, until: SessionEvent["type"], count = 1): Promise<SseMessage[]> {
  const read: SseMessage[] = [];
  for (let found = 0; ; ) {
    // A guard against a hang, not a measurement.
    const message = await stream.next(30_000);
    if (message === null)
      throw new Error(`the stream ended before ${until}: ${JSON.stringify(read.map((m) => m.event))}`);
    read.push(message);
    if (message.event === until && ++found === count) return read;
  }
}

function deskCalls(db: string) {
  const desk = OrderDesk.open(deskFileFor(db));
  try {
    return desk.cancelCalls().map((call) => `${call.orderId} ${call.outcome}`);
  } finally {
    desk.close();
  }
}

describe("pnpm serve restarted on the same ORDER_SUPPORT_DB", () => {
  it("keeps a session across a SIGKILL: token, pending approval, and the event stream from Last-Event-ID", async () => {
    temp = tempStoreDir("order-support-server-");
    const db = temp.file("server.db");
    const env = { ORDER_SUPPORT_DB: db, ORDER_SUPPORT_SESSION_KEY: sessionKey };

    // The first server: a session that looks up an order, then waits for approval of a cancellation.
    const first = await startServer(env);
    expect(first.child.stdout()).toContain(`store: sqlite ${db})`);
    const { id, token } = await createSessionOver(first.base, "look up order 1001");
    const before = await SseConnection.open(`${first.base}/sessions/${id}/events`, { "x-session-token": token });
    const seen = await readUntil(before, "turn_completed");
    const sent = await fetch(`${first.base}/sessions/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-token": token },
      body: JSON.stringify({ text: "cancel order 1002", message_id: "cancel-1" }),
    });
    expect(sent.status).toBe(202);
    seen.push(...(await readUntil(before, "interrupt_created")));
    const interruptId = (JSON.parse(seen.at(-1)!.data) as Extract<SessionEvent, { type: "interrupt_created" }>).data
      .interrupt.interruptId;

    // Killed with the stream open and the approval pending.
    expect((await first.child.kill("SIGKILL")).signal).toBe("SIGKILL");
    before.close();
    expect(deskCalls(db)).toEqual([]);

    // The second server, on the same file and key (and another port).
    const second = await startServer(env);
    const waiting = await snapshot(second.base, id, token);
    expect(waiting.status).toBe("awaiting_approval");
    expect(waiting.pendingInterrupts.map((i) => i.interruptId)).toEqual([interruptId]);
    expect(waiting.lastEventSeq).toBe(Number(seen.at(-1)!.id));

    // The stream resumes after the last event the client saw; the approval goes through.
    const after = await SseConnection.open(`${second.base}/sessions/${id}/events`, {
      "x-session-token": token,
      "last-event-id": seen.at(-1)!.id!,
    });
    const approved = await fetch(`${second.base}/sessions/${id}/interrupts/${interruptId}/approve`, {
      method: "POST",
      headers: { "x-session-token": token },
    });
    expect(approved.status).toBe(202);
    const resumed = await readUntil(after, "turn_completed");
    after.close();

    // No gap, no duplicate: together the two streams are the session's whole log, in order.
    const ids = [...seen, ...resumed].map((m) => Number(m.id));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    const whole = await SseConnection.open(`${second.base}/sessions/${id}/events`, { "x-session-token": token });
    const log = await readUntil(whole, "turn_completed", 2);
    whole.close();
    expect([...seen, ...resumed].map((m) => m.data)).toEqual(log.map((m) => m.data));
    expect(resumed.map((m) => m.event)).toContain("tool_call_completed");

    // The answer, and one cancellation at the desk; a second approval is refused.
    const done = await snapshot(second.base, id, token);
    expect(done.messages.at(-1)?.text).toBe(
      "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
    );
    expect(deskCalls(db)).toEqual(["1002 cancelled"]);
    const again = await fetch(`${second.base}/sessions/${id}/interrupts/${interruptId}/approve`, {
      method: "POST",
      headers: { "x-session-token": token },
    });
    expect(again.status).toBe(409);
    // The same message again (a client retrying across the restart) is accepted once.
    const resent = await fetch(`${second.base}/sessions/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-token": token },
      body: JSON.stringify({ text: "cancel order 1002", message_id: "cancel-1" }),
    });
    expect(((await resent.json()) as { duplicate: boolean }).duplicate).toBe(true);
    expect(deskCalls(db)).toEqual(["1002 cancelled"]);

    expect((await second.child.kill("SIGTERM")).code).toBe(0);
    expect(second.child.stdout()).toContain("stopped: steps in flight finished, store closed");
  });

  it("stops at start with a message for a bad store choice: an unknown kind, postgres without DATABASE_URL, a file that is not a store", async () => {
    temp = tempStoreDir("order-support-server-");
    const db = temp.file("server.db");
    const unknown = await runToEnd(serverScript, [], { PORT: "0", ORDER_SUPPORT_DB: db, ORDER_SUPPORT_STORE: "redis" });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('ORDER_SUPPORT_STORE must be one of sqlite, memory, postgres, not "redis"\n');

    const postgres = await runToEnd(serverScript, [], {
      PORT: "0",
      ORDER_SUPPORT_DB: db,
      ORDER_SUPPORT_STORE: "postgres",
      DATABASE_URL: "",
    });
    expect(postgres.code).toBe(1);
    expect(postgres.stderr).toBe("ORDER_SUPPORT_STORE=postgres needs DATABASE_URL, the PostgreSQL connection string\n");

    const { readFileSync } = await import("node:fs");
    const { DatabaseSync } = await import("node:sqlite");
    const other = new DatabaseSync(db);
    other.exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')");
    other.close();
    const bytes = readFileSync(db);
    const foreign = await runToEnd(serverScript, [], { PORT: "0", ORDER_SUPPORT_DB: db });
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(
      /^".*server\.db" is a SQLite database of another program \(application_id 0, 1 schema objects\); it was left untouched\n$/,
    );
    expect(readFileSync(db).equals(bytes)).toBe(true);
  });
});

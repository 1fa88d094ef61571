/**
 * Ctrl-C in the terminal demo, as real child processes that get a real SIGINT: during a turn it
 * cancels the turn, prints the turn's receipt and goes on; the next one stops the demo and keeps the
 * session. `ORDER_SUPPORT_LOOKUP_DELAY_MS` keeps a look-up in flight (ten minutes unless it is
 * stopped), so the signal lands while its turn runs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SessionClient, type SessionEvent } from "@durable-agents/core";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { OrderDesk } from "../src/order-desk.js";
import { deskFileFor } from "../src/order-support-store.js";
import { demoScript, runToEnd, startChild } from "./support/child.js";

const uuid = /session ([0-9a-f-]{36})/;
let temp: ReturnType<typeof tempStoreDir> | null = null;

afterEach(() => {
  temp?.remove();
  temp = null;
});

function newDb(): string {
  temp = tempStoreDir("order-support-demo-cancel-");
  return temp.file("demo.db");
}

/** The session's event log, read from the store file by this test process. */
async function eventsOf(db: string, sessionId: string): Promise<SessionEvent[]> {
  const store = new SqliteStore({ path: db });
  try {
    return await new SessionClient({ store }).readEvents(sessionId, { limit: 10_000 });
  } finally {
    await store.close();
  }
}

const receiptLines = (...calls: string[]) =>
  ["  ■ turn cancelled (Ctrl-C at the terminal)", `    receipt: ${calls.length} tool call`, ...calls].join("\n");

describe("Ctrl-C in the terminal demo", () => {
  it("during a look-up cancels the turn, prints its receipt and goes on; the next Ctrl-C stops the demo and keeps the session", async () => {
    const db = newDb();
    const env = { ORDER_SUPPORT_DB: db, ORDER_SUPPORT_LOOKUP_DELAY_MS: "600000" };
    const demo = startChild(demoScript, ["look up order 1001", "look up order 1002"], env);
    await demo.waitFor('→ look_up_order {"order_id":"1001"}');
    const sessionId = uuid.exec(demo.stdout())![1]!;

    demo.process.kill("SIGINT");
    await demo.waitFor("■ Ctrl-C: cancelling turn-1 (press Ctrl-C again to stop the demo)");
    await demo.waitFor(receiptLines('      look_up_order {"order_id":"1001"} (read): cancelled, 1 attempt'));
    // It keeps running: the next message's turn starts, and its look-up is in flight.
    await demo.waitFor("› look up order 1002");
    await demo.waitFor('→ look_up_order {"order_id":"1002"}');
    expect(demo.process.exitCode).toBeNull();

    demo.process.kill("SIGINT");
    const exit = await demo.exited;
    expect(demo.stderr()).toBe("");
    expect(exit.code).toBe(0);
    expect(demo.stdout()).toContain(
      `stopped (Ctrl-C); session ${sessionId} is kept in sqlite ${db}: run the demo again to continue it`,
    );

    // The session's log: one cancellation, sent with a request ID of the demo's; the look-up stopped
    // on its signal, before the grace period would have ended it. The second Ctrl-C cancelled nothing.
    const events = await eventsOf(db, sessionId);
    const cancelling = events.filter((e) => e.type === "turn_cancelling");
    const cancelled = events.filter((e) => e.type === "turn_cancelled");
    expect(cancelling).toHaveLength(1);
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]!.data).toEqual({
      turnId: "turn-1",
      reason: "Ctrl-C at the terminal",
      requestId: expect.stringMatching(/^demo-cancel-[0-9a-f-]{36}$/),
      modelCallAborted: false,
      calls: [
        { toolCallId: expect.any(String), name: "look_up_order", effect: "read", status: "cancelled", attempts: 1 },
      ],
    });
    expect(Date.parse(cancelled[0]!.at)).toBeLessThan(Date.parse(cancelling[0]!.data.graceUntil));
    expect(events.filter((e) => e.type === "turn_started").map((e) => e.data.turnId)).toEqual(["turn-1", "turn-2"]);
    expect(events.some((e) => e.type === "turn_completed")).toBe(false);

    // The next run continues turn 2 (its look-up runs again, now without the wait) and counts turn 1 as ended.
    const next = await runToEnd(demoScript, [], { ORDER_SUPPORT_DB: db });
    expect(next.stderr).toBe("");
    expect(next.code).toBe(0);
    expect(next.stdout).toContain(`Resuming session ${sessionId}`);
    expect(next.stdout).toContain("  › look up order 1001\n  ■ turn cancelled\n  › look up order 1002\n");
    expect(next.stdout).toContain("◆ answer: I looked up order 1002: Order 1002 for Grace");
    expect(next.stdout).toMatch(/done: 2 turn\(s\) \(1 cancelled\), \d+ model call\(s\)/);
  });

  it("at the approval question cancels the turn: the question is dropped, the call never runs, and the demo finishes", async () => {
    const db = newDb();
    // A look-up, then a cancellation, on the AI SDK agent; --ask asks on stdin (a pipe) and waits for an answer.
    const demo = startChild(demoScript, ["--framework", "ai-sdk", "--ask", "look up order 1001", "cancel order 1002"], {
      ORDER_SUPPORT_DB: db,
    });
    await demo.waitFor("? Approve cancel_order");
    demo.process.kill("SIGINT");
    const exit = await demo.exited;
    expect(demo.stderr()).toBe("");
    expect(exit.code).toBe(0);
    const out = demo.stdout();
    expect(out).toContain("◆ answer: I looked up order 1001:");
    expect(out).toContain(
      "[y/n] \n  ■ Ctrl-C: cancelling turn-2 (press Ctrl-C again to stop the demo)\n    ? cancel_order is not asked about any more: the turn is being cancelled\n",
    );
    expect(out).toContain(
      receiptLines(
        '      cancel_order {"order_id":"1002","reason":"requested by the customer"} (non_idempotent_write): cancelled, 0 attempts',
      ),
    );
    expect(out).not.toContain("needs approval:");
    expect(out).toMatch(
      /done: 2 turn\(s\) \(1 cancelled\), \d+ model call\(s\), \d+ tokens; orders cancelled: none; cancel calls on the desk: 0; stock releases in the warehouse: 0\n/,
    );

    const desk = OrderDesk.open(deskFileFor(db));
    try {
      expect(desk.cancelCalls()).toEqual([]);
      expect(desk.order("1002")?.status).toBe("processing");
    } finally {
      desk.close();
    }
  });

  it("before the demo follows a session (the offer to continue one) stops it as before, and the session waits on", async () => {
    const db = newDb();
    const first = startChild(demoScript, ["--ask"], { ORDER_SUPPORT_DB: db });
    await first.waitFor("? Approve cancel_order");
    const sessionId = uuid.exec(first.stdout())![1]!;
    await first.kill("SIGKILL");

    const second = startChild(demoScript, ["--ask"], { ORDER_SUPPORT_DB: db });
    await second.waitFor("? Continue it? [Y/n]");
    second.process.kill("SIGINT");
    const exit = await second.exited;
    expect(exit.code).toBe(0);
    // As before: no session is taken up yet, so there is nothing to cancel and nothing to name.
    expect(second.stdout()).toMatch(/\? Continue it\? \[Y\/n\] \nstopped \(Ctrl-C\)\n$/);
    expect(second.stdout()).not.toContain("cancelling");
    const events = await eventsOf(db, sessionId);
    expect(events.at(-1)?.type).toBe("interrupt_created");
  });
});

/**
 * Reconciliation in the terminal demo, as real processes on one SQLite file: the first process is
 * killed with SIGKILL while `cancel_order` waits for its confirmation (`ORDER_SUPPORT_CANCEL_DELAY_MS`),
 * after the desk applied the cancellation and before the call's result was stored. The second process
 * continues the session: once the dead process's lease ends, core finds the call started without a
 * result, runs `cancel_order`'s check (the desk says order 1002 is cancelled), and the call is
 * `succeeded`, reconciled, and never run again.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SessionClient, type SessionEvent } from "@durable-agents/core";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import { OrderDesk } from "../src/order-desk.js";
import { deskFileFor } from "../src/order-support-store.js";
import { demoScript, startChild } from "./support/child.js";

const uuid = /session ([0-9a-f-]{36})/;
let temp: ReturnType<typeof tempStoreDir> | null = null;
afterEach(() => {
  temp?.remove();
  temp = null;
});

function deskCalls(db: string) {
  const desk = OrderDesk.open(deskFileFor(db));
  try {
    return { calls: desk.cancelCalls().map((c) => c.outcome), order1002: desk.order("1002")?.status };
  } finally {
    desk.close();
  }
}

async function eventsOf(db: string, sessionId: string): Promise<SessionEvent[]> {
  const store = new SqliteStore({ path: db });
  try {
    return await new SessionClient({ store }).readEvents(sessionId, { limit: 10_000 });
  } finally {
    await store.close();
  }
}

const waitUntil = async (what: string, check: () => boolean, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

describe("the terminal demo reconciles a cancellation its killed process left in doubt", () => {
  it.each(["openai-agents", "ai-sdk"])(
    "on %s: killed during the cancellation, the next run finds it done on the desk",
    async (framework) => {
      temp = tempStoreDir("order-support-reconcile-");
      const db = temp.file("demo.db");
      const frameworkArgs = ["--framework", framework];

      const first = startChild(demoScript, frameworkArgs, {
        ORDER_SUPPORT_DB: db,
        ORDER_SUPPORT_CANCEL_DELAY_MS: "600000",
      });
      first.process.stdin.end();
      await first.waitFor("approved automatically");
      // The desk applied the cancellation; the tool waits for its confirmation: kill -9 now.
      await waitUntil("the desk to cancel order 1002", () => deskCalls(db).order1002 === "cancelled");
      const sessionId = uuid.exec(first.stdout())![1]!;
      expect((await first.kill("SIGKILL")).signal).toBe("SIGKILL");
      const before = await eventsOf(db, sessionId);
      expect(before.filter((e) => e.type === "tool_call_completed" && e.data.name === "cancel_order")).toEqual([]);

      const second = startChild(demoScript, frameworkArgs, { ORDER_SUPPORT_DB: db });
      second.process.stdin.end();
      const exit = await second.exited;
      expect(second.stderr()).toBe("");
      expect(exit.code).toBe(0);
      const out = second.stdout();
      expect(out).toContain(`Resuming session ${sessionId}`);
      expect(out).toMatch(/✓ ReconcileCall cancel_order .*done/);
      expect(out).toContain(
        'reconciled cancel_order {"order_id":"1002","reason":"requested by the customer"}: the check says it took effect; succeeded, not run again',
      );
      expect(out).toContain(
        "◆ answer: I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
      );
      expect(out).not.toContain("needs attention");

      // Once at the desk; in the log: one start of the call, one check that found it done.
      expect(deskCalls(db)).toEqual({ calls: ["cancelled"], order1002: "cancelled" });
      const events = await eventsOf(db, sessionId);
      const reconciled = events.filter((e) => e.type === "call_reconciled");
      const cancelCall = reconciled[0]?.type === "call_reconciled" ? reconciled[0].data.toolCallId : null;
      // The cancellation's call started once (the demo's other single-attempt call, the warehouse's release, is apart).
      expect(
        events.filter(
          (e) =>
            e.type === "step_started" && e.data.step === "CallSingleAttemptTool" && e.data.toolCallId === cancelCall,
        ),
      ).toHaveLength(1);
      expect(reconciled.map((e) => e.type === "call_reconciled" && [e.data.found, e.data.status])).toEqual([
        ["done", "succeeded"],
      ]);
      expect(events.some((e) => e.type === "session_recovered")).toBe(true);
    },
    90_000,
  );
});

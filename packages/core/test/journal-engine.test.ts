/**
 * Core's session suite, driven by a second engine written only here (`JournalEngine`: one input
 * per transition, each journaled as its own commit, no Worker) over the same state machine. The
 * scenarios about the machine's rules all pass; left out is the one about core's own driver
 * (coalescing text deltas, which this engine does not stream), and the pinning scenarios (this
 * engine declares it does not pin sessions to its definition).
 */
import { afterEach, describe, expect, it } from "vitest";
import { SessionClient, defineSession, type SessionHead } from "../src/index.js";
import { apply, machineConfig, newSessionHead } from "../src/engine.js";
import { sessionConformance } from "../src/conformance/index.js";
import { MemoryStore, ScriptedRunner } from "../src/testing/index.js";
import { JournalEngine } from "./support/journal-engine.js";

const driverOnly = ["text deltas are coalesced and join to the final text"];

describe("a journaling engine over the same state machine", () => {
  sessionConformance(
    { describe, it, afterEach },
    {
      makeRunner: (tools) => new ScriptedRunner({ tools }),
      makeStore: async () => ({ store: new MemoryStore() }),
      makeWorker: (options) => new JournalEngine(options),
      scenarios: (name) => !driverOnly.includes(name),
      pinning: {
        supported: false,
        reason:
          "the journaling engine shows that the session rules live in the machine; it leases every session of its agent and pins nothing (pinning is core's Worker's, tested on it)",
      },
    },
  );

  it("journals every transition: replaying the journal through apply gives the stored head", async () => {
    let failures = 1;
    const runner = new ScriptedRunner({
      tools: [
        {
          name: "look_up_order",
          description: "Look up.",
          parameters: { order_id: "string" },
          execute: (a) => `order ${String(a.order_id)}`,
        },
        {
          name: "flaky",
          description: "Fails once.",
          parameters: { key: "string" },
          execute: () => {
            if (failures-- > 0) throw new Error("down");
            return "up";
          },
        },
        {
          name: "cancel_order",
          description: "Cancel.",
          parameters: { order_id: "string" },
          execute: (a) => `cancelled ${String(a.order_id)}`,
        },
      ],
    });
    const definition = defineSession({
      name: "journal",
      runner,
      policies: {
        look_up_order: { effect: "read" },
        flaky: { effect: "read" },
        cancel_order: { effect: "non_idempotent_write" },
      },
      toolBackoff: { initialDelayMs: 5, maxDelayMs: 5 },
    });
    const store = new MemoryStore();
    const engine = new JournalEngine({
      store,
      definition,
      pollIntervalMs: 25,
      leaseTtlMs: 5_000,
      concurrency: 4,
    }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({
      agent: "journal",
      message: 'call look_up_order {"order_id":"1"}\ncall flaky {"key":"k"}\nthen\ncall cancel_order {"order_id":"2"}',
    });
    const waiting = await client.waitUntilIdle(sessionId);
    expect(waiting.status).toBe("awaiting_approval");
    await client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
    await client.sendMessage(sessionId, "and then?");
    const done = await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle");
    await engine.stop();
    expect(done.turn?.finalText).toBe("You said: and then?");

    const journal = engine.journals.get(sessionId)!;
    expect(journal.from).toEqual({ ...newSessionHead(sessionId, "journal", journal.from.createdAt) });
    const config = machineConfig(definition);
    let head: SessionHead = journal.from;
    const history = [];
    for (const entry of journal.entries) {
      const t = apply(head, entry.input, { config, now: entry.now, startSteps: entry.startSteps });
      head = t.head;
      history.push(...t.appendHistory);
    }
    const stored = await store.loadSession(sessionId);
    expect(head).toEqual(stored!.head);
    expect(history).toEqual(await store.readHistory(sessionId));
    const kinds = journal.entries.map((e) => e.input.type);
    for (const kind of ["recover", "inbox", "model_completed", "call_finished", "call_attempt_failed", "tick"])
      expect(kinds).toContain(kind);
    expect(runner.modelCalls).toBe((await client.steps(sessionId)).filter((s) => s.step === "RunModel").length);
  });
});

/**
 * A worker on a store with `findWork` takes a session's lease in the drive's first commit
 * (`Commit.claim`): no write before it. Two workers answered the same session race in their
 * claims; one drives it, the other writes nothing and goes on.
 */
import { describe, expect, it } from "vitest";
import { defineSession, SessionClient, Worker } from "../src/index.js";
import type { FoundWork } from "../src/engine.js";
import { MemoryStore, memoryRawReader, ScriptedRunner } from "../src/testing/index.js";

const executions: string[] = [];
const definition = defineSession({
  name: "claims",
  runner: new ScriptedRunner({
    tools: [
      {
        name: "charge",
        description: "Charges once.",
        parameters: { key: "string" },
        execute: async (args) => {
          executions.push(String(args.key));
          return `charged ${String(args.key)}`;
        },
      },
    ],
  }),
  policies: { charge: { effect: "non_idempotent_write", needsApproval: false } },
});

/**
 * A memory store whose `findWork` answers only once both workers have asked, each the same session:
 * both drives start from the same read, and their claims race. Counts grants and refused claims.
 */
class RacingStore extends MemoryStore {
  grants = 0;
  refusedClaims = 0;
  private waiting: (() => void)[] = [];
  override async findWork(...args: Parameters<MemoryStore["findWork"]>): Promise<FoundWork | null> {
    const found = await super.findWork(...args);
    if (!found) return null;
    // The first asker waits (up to 500 ms) for the second; both are then answered the same read.
    if (this.waiting.length === 0) {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        setTimeout(resolve, 500);
      });
    } else {
      for (const wake of this.waiting.splice(0)) wake();
    }
    return found;
  }
  override acquireLease(...args: Parameters<MemoryStore["acquireLease"]>) {
    this.grants += 1;
    return super.acquireLease(...args);
  }
  override async commit(...args: Parameters<MemoryStore["commit"]>) {
    try {
      return await super.commit(...args);
    } catch (error) {
      if (args[0].claim) this.refusedClaims += 1;
      throw error;
    }
  }
}

describe("claims in the first commit", () => {
  it("two workers answered the same session: one claim wins, the call runs once, the other worker writes nothing and goes on", async () => {
    executions.length = 0;
    const store = new RacingStore();
    const errors: unknown[] = [];
    const options = { store, sessions: [definition], pollIntervalMs: 20, onError: (e: unknown) => errors.push(e) };
    const a = new Worker(options).start();
    const b = new Worker(options).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "claims", message: 'call charge {"key":"one"}' });
    const done = await client.waitUntilIdle(sessionId);
    expect(done.turn?.finalText).toBe("Results: charge -> charged one");
    expect(executions).toEqual(["one"]);
    expect(store.refusedClaims).toBe(1);
    expect(store.grants).toBe(0);
    expect(errors).toEqual([]);
    const owner = (await memoryRawReader(store).session(sessionId))?.leaseOwner;
    expect([a.workerId, b.workerId]).toContain(owner);
    // The loser is not stuck: a second session is driven too, by whichever worker finds it.
    const second = await client.startSession({ agent: "claims", message: 'call charge {"key":"two"}' });
    expect((await client.waitUntilIdle(second.sessionId)).turn?.finalText).toBe("Results: charge -> charged two");
    expect(executions).toEqual(["one", "two"]);
    await Promise.all([a.stop(), b.stop()]);
    expect((await memoryRawReader(store).session(sessionId))?.leaseOwner).toBeNull();
  });
});

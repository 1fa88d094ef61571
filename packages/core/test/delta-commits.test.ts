/**
 * When a model step's streamed text is committed: a step whose last output the deltas were, and
 * which ends right after them, commits them with its result (no events-only commit before it); a
 * step that goes on streaming after a pause has them committed while it still runs.
 */
import { describe, expect, it } from "vitest";
import { defineSession, SessionClient, Worker } from "../src/index.js";
import type { Commit } from "../src/store.js";
import type { RunModelInput } from "../src/engine.js";
import { MemoryStore, ScriptedRunner } from "../src/testing/index.js";

/** Each commit's event types, and whether it wrote a head (a transition) or only events. */
class CommitLog extends MemoryStore {
  commits: { events: string[]; head: boolean; at: number }[] = [];
  override async commit(commit: Commit) {
    this.commits.push({ events: commit.events.map((e) => e.type), head: commit.head !== undefined, at: Date.now() });
    return super.commit(commit);
  }
}

/** The scripted runner, optionally streaming a first chunk and pausing before its own answer. */
class PausingRunner extends ScriptedRunner {
  pauseMs = 0;
  modelReturnedAt: number[] = [];
  override async runModel(input: RunModelInput) {
    if (this.pauseMs > 0) {
      input.emit({ kind: "text", text: `${"thinking ".repeat(8)}` });
      await new Promise((resolve) => setTimeout(resolve, this.pauseMs));
    }
    const result = await super.runModel(input);
    this.modelReturnedAt.push(Date.now());
    return result;
  }
}

async function run(pauseMs: number) {
  const store = new CommitLog();
  const runner = new PausingRunner({ tools: [] });
  runner.pauseMs = pauseMs;
  const definition = defineSession({ name: "deltas", runner });
  const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 5 }).start();
  try {
    const client = new SessionClient({ store });
    // A long answer: several coalesced deltas of 64 characters each, all emitted at once.
    const text = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ");
    const { sessionId } = await client.startSession({ agent: "deltas", message: text });
    const done = await client.waitUntilIdle(sessionId);
    const deltas = (await client.readEvents(sessionId)).filter((e) => e.type === "text_delta");
    const joined = deltas.map((e) => (e.type === "text_delta" ? e.data.text : "")).join("");
    return { store, runner, done, joined };
  } finally {
    await worker.stop();
  }
}

describe("streamed text deltas", () => {
  it("of a step that ends right after them go with its result, in one commit", async () => {
    const { store, done, joined } = await run(0);
    expect(joined).toBe(done.turn?.finalText);
    expect(joined.length).toBeGreaterThan(64);
    const withDeltas = store.commits.filter((c) => c.events.includes("text_delta"));
    expect(withDeltas).toHaveLength(1);
    expect(withDeltas[0]!.head, "the deltas rode with the step's result").toBe(true);
    expect(store.commits.filter((c) => !c.head)).toHaveLength(0);
  });

  it("of a step that pauses after them are committed while it runs", async () => {
    const { store, runner, done, joined } = await run(150);
    expect(joined.startsWith("thinking ")).toBe(true);
    expect(done.turn?.finalText?.length).toBeGreaterThan(0);
    const eventsOnly = store.commits.filter((c) => !c.head && c.events.includes("text_delta"));
    expect(eventsOnly.length).toBeGreaterThanOrEqual(1);
    expect(eventsOnly[0]!.at, "committed before the model call returned").toBeLessThan(runner.modelReturnedAt[0]!);
  });
});

import { describe, expect, it, vi } from "vitest";
import type { EventBody } from "../src/index.js";
import { DeltaCoalescer } from "../src/engine.js";

const texts = (events: EventBody[]) =>
  events.map((e) => (e.type === "text_delta" || e.type === "reasoning_delta" ? `${e.type}:${e.data.text}` : e.type));

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("DeltaCoalescer", () => {
  it("flushes at 64 characters, on a change of kind, and on close", async () => {
    const out: EventBody[] = [];
    const c = new DeltaCoalescer("turn-1", async (events) => void out.push(...events));
    for (let i = 0; i < 20; i++) c.push({ kind: "text", text: "abcd" });
    await tick();
    expect(texts(out)).toEqual([`text_delta:${"abcd".repeat(16)}`]);
    c.push({ kind: "reasoning", text: "think" });
    await tick();
    expect(texts(out)).toHaveLength(2);
    await c.close();
    expect(texts(out)).toEqual([
      `text_delta:${"abcd".repeat(16)}`,
      `text_delta:${"abcd".repeat(4)}`,
      "reasoning_delta:think",
    ]);
  });

  it("flushes after 100 ms without a new delta", async () => {
    const out: EventBody[] = [];
    const c = new DeltaCoalescer("turn-1", async (events) => void out.push(...events), { idleMs: 30 });
    c.push({ kind: "text", text: "hel" });
    c.push({ kind: "text", text: "lo" });
    await tick();
    expect(out).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(texts(out)).toEqual(["text_delta:hello"]);
    await c.close();
    expect(out).toHaveLength(1);
  });
});

describe("DeltaCoalescer limits", () => {
  it("flushes when the oldest buffered delta is maxDelayMs old, even while deltas keep coming", async () => {
    const out: EventBody[] = [];
    const c = new DeltaCoalescer("turn-1", async (events) => void out.push(...events), {
      idleMs: 1_000,
      maxDelayMs: 40,
    });
    for (let i = 0; i < 6; i++) {
      c.push({ kind: "text", text: "ab" });
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    expect(out.length).toBeGreaterThanOrEqual(1);
    const rest = await c.finish();
    const joined = [...out, ...rest].map((e) => (e.type === "text_delta" ? e.data.text : "")).join("");
    expect(joined).toBe("ab".repeat(6));
  });

  it("finish() hands back what is still buffered instead of emitting it", async () => {
    // Fake timers: every timer the coalescer set is run to the end before the check, so a flush
    // that finish() failed to cancel would have emitted by then.
    vi.useFakeTimers();
    try {
      const out: EventBody[] = [];
      const c = new DeltaCoalescer("turn-1", async (events) => void out.push(...events));
      c.push({ kind: "text", text: "tail" });
      expect(texts(await c.finish())).toEqual(["text_delta:tail"]);
      await vi.runAllTimersAsync();
      expect(out).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });
});

/**
 * How a streaming model step hands its text deltas to the drive: one batch at a time through the
 * awakeable the drive offers, without the step waiting for a batch on its way; what the drive may
 * not have when the step ends rides in the result, from its index, and the drive writes each delta
 * once. (The drive side over a real Restate server is core's "text deltas ... join to the final
 * text" scenario, which every streaming turn on Restate runs with its last batch on its way.)
 */
import assert from "node:assert/strict";
import type { EventBody } from "@durable-agents/core";
import { describe, it } from "vitest";
import type { DeltaBatch } from "../src/protocol.js";
import { DeltaMailbox, DeltaSender, unwrittenDeltas } from "../src/steps.js";

const delta = (text: string): EventBody => ({ type: "text_delta", data: { turnId: "turn-1", text } });
const texts = (events: readonly EventBody[]) =>
  events.map((e) => (e.type === "text_delta" ? e.data.text : `(${e.type})`));

/** The resolves the sender makes, each held until the test settles it. */
class Resolves {
  readonly calls: { id: string; batch: DeltaBatch; settle: (ok: boolean) => void }[] = [];
  readonly resolve = (id: string, batch: DeltaBatch) =>
    new Promise<void>((resolve, reject) => {
      this.calls.push({ id, batch, settle: (ok) => (ok ? resolve() : reject(new Error("ingress unreachable"))) });
    });
}

const turns = () => new Promise((resolve) => setImmediate(resolve));

function setup() {
  const mailbox = new DeltaMailbox();
  const resolves = new Resolves();
  const abort = new AbortController();
  const sender = new DeltaSender(mailbox, resolves.resolve, abort.signal);
  return { mailbox, resolves, abort, sender };
}

describe("a model step's text deltas", () => {
  it("a batch on its way when the step ends rides in the result, from its index", async () => {
    const { mailbox, resolves, sender } = setup();
    mailbox.offer("a1");
    sender.push([delta("Hel"), delta("lo")]);
    await turns();
    assert.equal(resolves.calls.length, 1);
    assert.deepEqual(resolves.calls[0]!.batch.first, 0);
    const unsent = sender.stop();
    assert.equal(unsent.from, 0);
    assert.deepEqual(texts(unsent.events), ["Hel", "lo"]);
    resolves.calls[0]!.settle(true);
    await turns();
    assert.equal(resolves.calls.length, 1, "nothing is sent after the step ended");
  });

  it("batches the drive took stay out of the result; the next waits for the drive's next awakeable", async () => {
    const { mailbox, resolves, sender } = setup();
    mailbox.offer("a1");
    sender.push([delta("one ")]);
    await turns();
    resolves.calls[0]!.settle(true);
    await turns();
    sender.push([delta("two")]);
    await turns();
    assert.equal(resolves.calls.length, 1, "no awakeable offered yet: the batch waits");
    const unsent = sender.stop();
    assert.deepEqual({ from: unsent.from, texts: texts(unsent.events) }, { from: 1, texts: ["two"] });
  });

  it("deltas pushed while a batch is on its way go in the next batch, with the next index", async () => {
    const { mailbox, resolves, sender } = setup();
    mailbox.offer("a1");
    sender.push([delta("a")]);
    await turns();
    sender.push([delta("b")]);
    sender.push([delta("c")]);
    resolves.calls[0]!.settle(true);
    await turns();
    mailbox.offer("a2");
    await turns();
    assert.equal(resolves.calls.length, 2);
    assert.equal(resolves.calls[1]!.id, "a2");
    assert.deepEqual(texts(resolves.calls[1]!.batch.events), ["b", "c"]);
    assert.equal(resolves.calls[1]!.batch.first, 1);
  });

  it("a failed resolve is sent again with the next batch, from the same index", async () => {
    const { mailbox, resolves, sender } = setup();
    mailbox.offer("a1");
    sender.push([delta("x")]);
    await turns();
    resolves.calls[0]!.settle(false);
    await turns();
    sender.push([delta("y")]);
    await turns();
    assert.equal(resolves.calls.length, 1, "after a failure nothing is sent until the drive offers an awakeable");
    // The failed batch reached the drive after all: it offers the next awakeable.
    mailbox.offer("a2");
    sender.push([delta("z")]);
    await turns();
    assert.equal(resolves.calls.length, 2);
    assert.deepEqual(texts(resolves.calls[1]!.batch.events), ["x", "y", "z"]);
    assert.equal(resolves.calls[1]!.batch.first, 0);
    const unsent = sender.stop();
    assert.deepEqual({ from: unsent.from, texts: texts(unsent.events) }, { from: 0, texts: ["x", "y", "z"] });
  });

  it("a step that ends in the macrotask of its last deltas sends no batch: its result has them", async () => {
    const { mailbox, resolves, sender } = setup();
    mailbox.offer("a1");
    sender.push([delta("all "), delta("at once")]);
    const unsent = sender.stop();
    await turns();
    assert.equal(resolves.calls.length, 0);
    assert.deepEqual({ from: unsent.from, texts: texts(unsent.events) }, { from: 0, texts: ["all ", "at once"] });
  });

  it("a step whose turn was cancelled sends nothing more", async () => {
    const { mailbox, resolves, abort, sender } = setup();
    abort.abort();
    mailbox.offer("a1");
    sender.push([delta("late")]);
    await turns();
    assert.equal(resolves.calls.length, 0);
  });

  it("the drive writes each delta once, whichever of a batch and the result it has first", () => {
    const all = [delta("a"), delta("b"), delta("c"), delta("d")];
    // The result says it carries the deltas from index 1 (the drive had a batch with the first).
    assert.deepEqual(texts(unwrittenDeltas(all.slice(1), 1, 1)), ["b", "c", "d"]);
    // A batch with "b" and "c" came before the result: the result's first two are skipped.
    assert.deepEqual(texts(unwrittenDeltas(all.slice(1), 1, 3)), ["d"]);
    // A batch sent again after a failed resolve that had reached the drive.
    assert.deepEqual(texts(unwrittenDeltas(all.slice(0, 3), 0, 1)), ["b", "c"]);
    // A batch or a result without an index (journaled before it had one) is written whole.
    assert.deepEqual(texts(unwrittenDeltas(all, undefined, 3)), ["a", "b", "c", "d"]);
  });
});

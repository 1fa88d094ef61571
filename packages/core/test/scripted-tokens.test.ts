/**
 * The scripted model's input token count: derived from the whole history, as before, without
 * serializing again the items a previous call saw.
 */
import { describe, expect, it } from "vitest";
import type { RunModelInput } from "../src/engine.js";
import type { HistoryItem } from "../src/index.js";
import { ScriptedRunner } from "../src/testing/index.js";
import { historyJsonLength } from "../src/testing/scripted-runner.js";
import { TURN_FAILURE_NOTE_PREFIX } from "../src/testing/scripted-rules.js";

function item(text: string, extra: Record<string, unknown> = {}): HistoryItem {
  return { kind: "user", item: { role: "user", content: text, ...extra }, display: [] } as unknown as HistoryItem;
}

function modelInput(history: HistoryItem[], turnStart: number): RunModelInput {
  return {
    sessionId: "s",
    turnId: "t",
    modelStep: 1,
    history,
    turnStart,
    runState: null,
    outcomes: [],
    joined: [],
    signal: new AbortController().signal,
    emit: () => {},
  };
}

describe("historyJsonLength", () => {
  it("is the length of the history's JSON, empty, one item, many, grown and copied", () => {
    const history: HistoryItem[] = [];
    expect(historyJsonLength(history)).toBe(JSON.stringify(history).length);
    history.push(item("first"));
    expect(historyJsonLength(history)).toBe(JSON.stringify(history).length);
    for (let i = 0; i < 50; i++) history.push(item(`message ${i} ${"x".repeat(i)}`, { n: i, skipped: undefined }));
    expect(historyJsonLength(history)).toBe(JSON.stringify(history).length);
    // The same objects again, then more of them: the counted items are not counted wrong.
    history.push(item('ünïcode ✓ "quoted" \n'));
    expect(historyJsonLength(history)).toBe(JSON.stringify(history).length);
    const copies = history.map((h) => structuredClone(h));
    expect(historyJsonLength(copies)).toBe(JSON.stringify(copies).length);
    // A different history of the same length gives a different count.
    const other = history.map((h, i) => (i === 3 ? item("a much longer text than the one it replaces") : h));
    expect(historyJsonLength(other)).toBe(JSON.stringify(other).length);
    expect(historyJsonLength(other)).not.toBe(historyJsonLength(history));
    // Histories that share their first item and part of the rest, in alternation: a shorter one, the
    // one that differed, the first again and a longer one.
    for (const h of [history.slice(0, 10), other, history, [...history, item("later")], history.slice(0, 1), other]) {
      expect(historyJsonLength(h)).toBe(JSON.stringify(h).length);
    }
  });

  it("gives the scripted model the same usage for the same input, as the history grows", async () => {
    const runner = new ScriptedRunner({ tools: [] });
    const history: HistoryItem[] = [];
    for (let turn = 0; turn < 5; turn++) {
      history.push(runner.userItem("message", `hello ${turn} ${"y".repeat(turn * 40)}`));
      const input = modelInput(history, history.length - 1);
      const first = await runner.runModel(input);
      const again = await runner.runModel(
        modelInput(
          history.map((h) => structuredClone(h)),
          history.length - 1,
        ),
      );
      expect(first.usage.inputTokens).toBe(Math.ceil(JSON.stringify(history).length / 4));
      expect(again.usage).toEqual(first.usage);
      if (first.kind !== "final") throw new Error("a plain message gets a final answer");
      history.push(...first.items);
    }
  });
});

describe("the scripted model's count of earlier turn notes", () => {
  it("counts the failure notes before the turn's start, whatever history it was handed before", async () => {
    const runner = new ScriptedRunner({ tools: [] });
    const note = (n: number) => runner.userItem("turn_failure_note", `${TURN_FAILURE_NOTE_PREFIX} turn ${n} failed`);
    const history = [
      runner.userItem("message", "a"),
      note(1),
      runner.userItem("message", "b"),
      note(2),
      runner.userItem("message", "c"),
    ];
    const noted = async (h: HistoryItem[], turnStart: number) => {
      const result = await runner.runModel(modelInput(h, turnStart));
      const text = result.kind === "final" ? JSON.stringify(result.items) : "";
      return /\(noted (\d+) failed turn/.exec(text)?.[1] ?? "0";
    };
    expect(await noted(history, 4)).toBe("2");
    expect(await noted(history, 2)).toBe("1");
    expect(await noted(history.slice(0, 3), 2)).toBe("1");
    expect(
      await noted([history[0]!, runner.userItem("message", "no note"), history[2]!, history[3]!, history[4]!], 4),
    ).toBe("1");
    expect(await noted(history, 4)).toBe("2");
    expect(await noted(history, 0)).toBe("0");
  });
});

import { describe, expect, it } from "vitest";
import { copyData, sameData } from "../src/machine/state.js";

describe("sameData, the machine's deep equality of JSON-shaped data", () => {
  it("compares values, arrays and objects deeply, whatever the key order", () => {
    expect(sameData(1, 1)).toBe(true);
    expect(sameData("a", "b")).toBe(false);
    expect(sameData(null, null)).toBe(true);
    expect(sameData(null, {})).toBe(false);
    expect(sameData([], {})).toBe(false);
    expect(sameData([1, [2, { a: 3 }]], [1, [2, { a: 3 }]])).toBe(true);
    expect(sameData([1, 2], [1, 2, 3])).toBe(false);
    expect(sameData([1, 2, 3], [1, 2])).toBe(false);
    expect(sameData({ a: 1, b: { c: [1] } }, { b: { c: [1] }, a: 1 })).toBe(true);
    expect(sameData({ a: 1, b: { c: [1] } }, { a: 1, b: { c: [2] } })).toBe(false);
    expect(sameData({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameData({ a: 1, b: 2 }, { a: 1 })).toBe(false);
    expect(sameData({ a: null }, {})).toBe(false);
    expect(sameData({}, { a: null })).toBe(false);
  });

  it("counts a key set to undefined as absent, as JSON does, on either side", () => {
    expect(sameData({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameData({ a: 1 }, { a: 1, b: undefined })).toBe(true);
    expect(sameData({ a: undefined }, { b: undefined })).toBe(true);
    expect(sameData({ a: undefined }, { a: 0 })).toBe(false);
    expect(sameData({ a: 0 }, { a: undefined })).toBe(false);
  });

  it("finds a copy equal and a change anywhere in it", () => {
    const head = {
      turn: {
        calls: Array.from({ length: 49 }, (_, i) => ({ toolCallId: `c${i}`, output: `out ${i}`, retryAt: null })),
        steps: [{ step: "RunModel", status: "completed" }],
      },
      queue: [],
    };
    const copy = copyData(head);
    expect(copy).not.toBe(head);
    expect(sameData(head, copy)).toBe(true);
    copy.turn.calls[48]!.output = "changed";
    expect(sameData(head, copy)).toBe(false);
  });

  it("copies JSON data deeply: every object and array is new, strings and other values are kept", () => {
    const data = { a: [1, "x", null, { b: [true, { c: "d" }] }], e: { f: undefined }, g: "" };
    const copy = copyData(data);
    expect(copy).toEqual(data);
    expect(copy).not.toBe(data);
    expect(copy.a).not.toBe(data.a);
    expect(copy.a[3]).not.toBe(data.a[3]);
    expect((copy.a[3] as { b: unknown[] }).b[1]).not.toBe((data.a[3] as { b: unknown[] }).b[1]);
    expect(Object.keys(copy.e)).toEqual(["f"]);
    expect(Array.isArray(copy.a)).toBe(true);
    (copy.a[3] as { b: unknown[] }).b.push("more");
    expect((data.a[3] as { b: unknown[] }).b).toHaveLength(2);
  });
});

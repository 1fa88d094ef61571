import { describe, expect, it } from "vitest";
import { LAST_SEED_TURN_ITEMS, seedTurnSizes } from "../src/growth-phase.js";
import { seedScript } from "../src/workload.js";

describe("the growth phase's seed turns", () => {
  it("add up to the level, each a valid seed turn, and end with a turn of the measured turn's size", () => {
    for (const items of [10, 12, 100, 102, 104, 106, 1000]) {
      const sizes = seedTurnSizes(items);
      expect(sizes.reduce((sum, n) => sum + n, 0)).toBe(items);
      expect(sizes.at(-1)).toBe(LAST_SEED_TURN_ITEMS);
      for (const size of sizes) {
        expect(size).toBeLessThanOrEqual(100);
        // seedScript throws for a size that no turn makes (odd, or below 4)
        expect(() => seedScript("s", size)).not.toThrow();
      }
    }
    expect(seedTurnSizes(10)).toEqual([4, 6]);
    expect(seedTurnSizes(1000)).toEqual([...Array(9).fill(100), 94, 6]);
  });

  it("refuses a level no seed makes", () => {
    for (const items of [0, 4, 8, 11, 99]) expect(() => seedTurnSizes(items)).toThrow(/even number of history items/);
  });
});

import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "@durable-agents/core";
import { parseArgs } from "../src/cli-args.js";

describe("the bench command line", () => {
  it("defaults to a full run on a private server, writing results/latest.json", () => {
    const args = parseArgs([], {});
    expect(args.quick).toBe(false);
    expect(args.pgUrl).toBeUndefined();
    expect(args.out).toBe(resolve(import.meta.dirname, "..", "results", "latest.json"));
  });

  it("reads --quick, --pg-url (or BENCH_PG_URL) and --out, and skips pnpm's --", () => {
    const args = parseArgs(["--", "--quick", "--pg-url", "postgres://u@127.0.0.1:5432/db", "--out", "x.json"], {});
    expect(args).toEqual({ quick: true, pgUrl: "postgres://u@127.0.0.1:5432/db", out: resolve("x.json") });
    expect(parseArgs(["--quick"], { BENCH_PG_URL: "postgresql://h/db" }).pgUrl).toBe("postgresql://h/db");
    expect(parseArgs(["--quick"], {}).out).toMatch(/latest-quick\.json$/);
  });

  it("refuses an unknown argument, a missing value and a URL that is not PostgreSQL's with InvalidInputError", () => {
    for (const argv of [["--bogus"], ["--pg-url"], ["--out", "--quick"], ["--pg-url", "mysql://h/db"]]) {
      expect(() => parseArgs(argv, {}), argv.join(" ")).toThrow(InvalidInputError);
    }
    expect(() => parseArgs([], { BENCH_PG_URL: "http://h" })).toThrow(/postgres:\/\//);
  });
});

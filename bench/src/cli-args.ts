/** The command line of `bench`: `[--quick] [--pg-url <postgres://...>] [--out <file.json>]`. */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { InvalidInputError } from "@durable-agents/core";

export interface Args {
  readonly quick: boolean;
  /** A server to use instead of a private one (also from BENCH_PG_URL). */
  readonly pgUrl: string | undefined;
  /** Where the JSON goes: bench/results/latest.json, or latest-quick.json with --quick. */
  readonly out: string;
}

const USAGE = "usage: bench [--quick] [--pg-url <postgres://...>] [--out <file.json>]";

/** Throws `InvalidInputError` for an unknown argument, a missing value or a URL that is not postgres://. */
export function parseArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Args {
  let quick = false;
  let pgUrl = env["BENCH_PG_URL"] || undefined;
  let out: string | undefined;
  const value = (i: number, name: string): string => {
    const given = argv[i];
    if (given === undefined || given.startsWith("--")) throw new InvalidInputError(`${name} needs a value; ${USAGE}`);
    return given;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") continue;
    if (arg === "--quick") quick = true;
    else if (arg === "--pg-url") pgUrl = value(++i, "--pg-url");
    else if (arg === "--out") out = value(++i, "--out");
    else throw new InvalidInputError(`unknown argument ${arg}; ${USAGE}`);
  }
  if (pgUrl !== undefined && !/^postgres(ql)?:\/\//.test(pgUrl))
    throw new InvalidInputError(`--pg-url is a postgres:// URL; ${USAGE}`);
  const results = resolve(dirname(fileURLToPath(import.meta.url)), "..", "results");
  return { quick, pgUrl, out: resolve(out ?? resolve(results, quick ? "latest-quick.json" : "latest.json")) };
}

import {
  formatReport,
  runCrashScenario,
  summarizeViolations,
  type CrashRunOptions,
  type CrashRunResult,
} from "../../src/index.js";

/** Runs a scenario with progress on the console and prints its counts (the README's figures). */
export async function runAndReport(title: string, options: CrashRunOptions): Promise<CrashRunResult> {
  const log = (line: string) => console.log(`[${title}] ${line}`);
  const result = await runCrashScenario({ ...options, log });
  console.log(`[${title}] counts\n${formatReport(result)}`);
  return result;
}

/** Fails with every kind of violation, its count and a first case, instead of a diff of thousands of lines. */
export function expectNoViolations(result: CrashRunResult): void {
  if (result.violations.length === 0) return;
  throw new Error(
    `${result.violations.length} invariant violation(s):\n${summarizeViolations(result.violations).join("\n")}`,
  );
}

// Adds up the JSON reports vitest wrote for each package and prints one closing line.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = ".vitest-results";
let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(dir)) {
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".json"))) {
    const report = JSON.parse(readFileSync(join(dir, file), "utf8"));
    passed += report.numPassedTests ?? 0;
    failed += report.numFailedTests ?? 0;
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  }
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);

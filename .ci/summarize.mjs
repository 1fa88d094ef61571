// Adds up the JSON reports vitest wrote for each package and prints one closing line. Every failed
// test is listed above that line with the start of its failure message, so the end of the CI log
// says what broke even when the log is cut.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = ".vitest-results";
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
if (existsSync(dir)) {
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".json"))) {
    const report = JSON.parse(readFileSync(join(dir, file), "utf8"));
    passed += report.numPassedTests ?? 0;
    failed += report.numFailedTests ?? 0;
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    for (const suite of report.testResults ?? []) {
      for (const test of suite.assertionResults ?? []) {
        if (test.status !== "failed") continue;
        const message = (test.failureMessages ?? []).join("\n").split("\n").slice(0, 12).join("\n");
        failures.push(`FAILED ${file}: ${test.fullName}\n${message}`);
      }
      if (suite.status === "failed" && (suite.assertionResults ?? []).length === 0) {
        failures.push(`FAILED ${file}: ${suite.name}\n${String(suite.message ?? "").slice(0, 2000)}`);
      }
    }
  }
}
for (const failure of failures) console.log(`${failure}\n`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);

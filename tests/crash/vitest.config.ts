import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.js";

export default defineConfig({
  test: {
    ...sharedTestConfig(import.meta.dirname),
    // Builds dist (the worker processes run it) and starts one private PostgreSQL for the run.
    globalSetup: ["./test/support/global-setup.ts"],
    // The suites share two cores with their worker processes and PostgreSQL: one file at a time.
    fileParallelism: false,
    testTimeout: 150_000,
  },
});

import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.js";

export default defineConfig({
  test: {
    ...sharedTestConfig(import.meta.dirname),
    // One private restate-server for the run (the crash tests that restart it start their own).
    globalSetup: ["./src/testing/global-setup.ts"],
    // The files share two cores with restate-server and their endpoint processes: one at a time.
    fileParallelism: false,
  },
});

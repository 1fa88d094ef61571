import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.js";

export default defineConfig({
  test: {
    ...sharedTestConfig(import.meta.dirname),
    // Builds dist (the crash tests' endpoint processes run it), then one private restate-server for the run.
    globalSetup: ["./test/support/global-setup.ts"],
    // The files share two cores with restate-server and their endpoint processes: one at a time.
    fileParallelism: false,
  },
});

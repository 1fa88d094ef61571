import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.js";

export default defineConfig({
  test: {
    ...sharedTestConfig(import.meta.dirname),
    // The process tests run dist/: build it once, before any test file runs, when it is stale.
    globalSetup: ["test/support/global-setup.ts"],
  },
});

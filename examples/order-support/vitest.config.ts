import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // The process tests run dist/: build it once, before any test file runs.
    globalSetup: ["test/support/global-setup.ts"],
  },
});

import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.js";

export default defineConfig({
  test: {
    ...sharedTestConfig(import.meta.dirname),
    // One private PostgreSQL for the run; each test file creates its own database on it.
    globalSetup: ["@durable-agents/store-postgres/testing/global-setup"],
  },
});

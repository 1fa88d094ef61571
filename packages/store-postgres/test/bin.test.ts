import { execFileSync, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { migrationSql } from "../src/index.js";

// The commands run from dist: build the package as it is published, then run them.
const root = fileURLToPath(new URL("..", import.meta.url));
beforeAll(() => {
  execFileSync(process.execPath, [fileURLToPath(import.meta.resolve("typescript/bin/tsc")), "-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: "pipe",
  });
}, 120_000);

describe("commands", () => {
  it("durable-agents-pg-sql prints the schema's SQL", () => {
    const bin = `${root}/dist/print-sql.js`;
    expect(execFileSync(process.execPath, [bin], { encoding: "utf8" })).toBe(migrationSql());
    expect(execFileSync(process.execPath, [bin, "--schema", "cli_schema"], { encoding: "utf8" })).toBe(
      migrationSql({ schema: "cli_schema" }),
    );
    const bad = spawnSync(process.execPath, [bin, "--schema", "No"], { encoding: "utf8" });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/invalid schema name/);
    expect(bad.stdout).toBe("");
  });

  it("durable-agents-with-postgres runs a command against a server of its own and removes it", () => {
    const bin = `${root}/dist/testing/with-postgres.js`;
    // The child connects with the URL it was given, reports what it saw, and exits with code 3.
    const probe = `
      const { default: pg } = await import("pg");
      const url = process.env.DURABLE_AGENTS_PG_URL;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query("SELECT current_setting('synchronous_commit') AS s");
      await client.end();
      console.log(JSON.stringify({ url, synchronousCommit: rows[0].s }));
      process.exit(3);`;
    const env = { ...process.env };
    delete env.DURABLE_AGENTS_PG_URL;
    const run = spawnSync(process.execPath, [bin, "--", process.execPath, "--input-type=module", "-e", probe], {
      cwd: root,
      encoding: "utf8",
      env,
      timeout: 60_000,
    });
    expect(run.status).toBe(3);
    const seen = JSON.parse(run.stdout.trim()) as { url: string; synchronousCommit: string };
    expect(seen.synchronousCommit).toBe("on");
    expect(seen.url).not.toBe(process.env.DURABLE_AGENTS_PG_URL);
    // The server is gone once the command returned.
    const port = new URL(seen.url).port;
    const after = spawnSync(
      process.execPath,
      ["--input-type=module", "-e", `const { default: pg } = await import("pg"); await new pg.Client({ connectionString: "${seen.url}" }).connect();`],
      { cwd: root, encoding: "utf8" },
    );
    expect(after.status, `port ${port} still answers`).not.toBe(0);
  }, 60_000);
});

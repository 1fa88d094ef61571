import { existsSync } from "node:fs";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { startPostgres } from "../src/testing/index.js";

describe("startPostgres settings", () => {
  it("starts the server with the settings given, quoted as values", async () => {
    const server = await startPostgres({
      settings: { checkpoint_timeout: "1d", max_wal_size: "8GB", application_name: "it's the bench" },
    });
    const client = new pg.Client({ connectionString: server.connectionString });
    try {
      await client.connect();
      const show = async (name: string) => (await client.query(`SHOW ${name}`)).rows[0][name];
      expect(await show("checkpoint_timeout")).toBe("1d");
      expect(await show("max_wal_size")).toBe("8GB");
      expect(await show("application_name")).toBe("it's the bench");
      // The ones it always writes stay as they were.
      expect(await show("shared_buffers")).toBe("32MB");
    } finally {
      await client.end();
      await server.stop();
    }
    expect(existsSync(server.dir)).toBe(false);
  }, 60_000);

  it("refuses with a TypeError a name that is not a setting's name and a value that is not one line", async () => {
    await expect(startPostgres({ settings: { "fsync = off\nport": "1" } })).rejects.toThrow(TypeError);
    await expect(startPostgres({ settings: { "": "1" } })).rejects.toThrow(/not a setting's name/);
    await expect(startPostgres({ settings: { work_mem: "4MB'\nfsync = 'off" } })).rejects.toThrow(
      /value of "work_mem" is not a one-line string/,
    );
  });
});

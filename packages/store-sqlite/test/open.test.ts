import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { ConfigurationError, StoreOpenError } from "@durable-agents/core";
import { newSessionHead } from "@durable-agents/core/engine";
import { afterEach, describe, expect, it } from "vitest";
import { APPLICATION_ID, migrations, SCHEMA_VERSION, SqliteStore, sqliteRawReader } from "../src/index.js";
import { tempStoreDir } from "../src/testing/index.js";

const dirs: ReturnType<typeof tempStoreDir>[] = [];
const temp = () => {
  const t = tempStoreDir();
  dirs.push(t);
  return t;
};
afterEach(() => {
  for (const t of dirs.splice(0)) t.remove();
});

/**
 * Opens the store in a child process that runs as an unprivileged user (root may write any file),
 * through the built package, and returns the error it reports.
 */
async function openAsOtherUser(path: string): Promise<{ reason: string; message: string }> {
  const entry = pathToFileURL(fileURLToPath(new URL("../dist/index.js", import.meta.url))).href;
  const script = `
    const { SqliteStore } = await import(${JSON.stringify(entry)});
    try { new SqliteStore({ path: ${JSON.stringify(path)} }).close(); console.log(JSON.stringify({ reason: "opened", message: "" })); }
    catch (e) { console.log(JSON.stringify({ reason: e.reason ?? e.code ?? "other", message: e.message })); }`;
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    ...asNobody,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk) => (out += chunk));
  await once(child, "exit");
  return JSON.parse(out.trim()) as { reason: string; message: string };
}

function openError(path: string): StoreOpenError {
  try {
    new SqliteStore({ path }).close();
  } catch (error) {
    if (StoreOpenError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("the store opened");
}

describe("opening a store file", () => {
  it("creates a new file with the schema, WAL and synchronous=FULL, and opens it again with its sessions", async () => {
    const path = temp().file();
    const store = new SqliteStore({ path });
    const head = newSessionHead("s1", "agent", new Date().toISOString());
    await store.createSession({ head, events: [{ type: "session_created", data: { agent: "agent" } }] });
    await store.close();

    const db = new DatabaseSync(path);
    expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    expect(db.prepare("PRAGMA user_version").get()).toEqual({ user_version: SCHEMA_VERSION });
    expect(db.prepare("PRAGMA application_id").get()).toEqual({ application_id: APPLICATION_ID });
    db.close();

    const again = new SqliteStore({ path });
    expect((await again.loadSession("s1"))?.head).toEqual(head);
    expect((await again.readEvents("s1", 0)).map((e) => e.type)).toEqual(["session_created"]);
    await again.close();
  });

  it("migrates a version 1 file (before pinning): its sessions are not pinned and every worker of their agent leases them", async () => {
    const path = temp().file();
    // A file as version 1 of the package wrote it: its schema, and one session with a message waiting.
    const db = new DatabaseSync(path);
    db.exec(migrations[0]!.sql);
    db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
    db.exec("PRAGMA user_version = 1");
    const { definition: _, ...legacy } = newSessionHead("old", "agent", "2025-01-01T00:00:00.000Z");
    db.prepare(
      "INSERT INTO sessions (session_id, agent, head, version, inbox_cursor, last_inbox_seq, created_at, touched_at) VALUES (?, ?, ?, 1, 0, 1, 0, 0)",
    ).run("old", "agent", JSON.stringify(legacy));
    db.prepare("INSERT INTO inbox (session_id, seq, entry, created_at) VALUES ('old', 1, ?, 0)").run(
      JSON.stringify({ kind: "message", text: "hello", messageId: null }),
    );
    db.close();

    const store = new SqliteStore({ path });
    const check = new DatabaseSync(path, { readOnly: true });
    expect(check.prepare("PRAGMA user_version").get()).toEqual({ user_version: SCHEMA_VERSION });
    check.close();
    const raw = sqliteRawReader(path);
    expect(await raw.session("old")).toMatchObject({ fingerprint: null, definitionWaiting: false });
    raw.close();
    expect((await store.loadSession("old"))?.head).toEqual(legacy);
    const lease = await store.acquireLease({
      workerId: "w",
      ttlMs: 5_000,
      agents: ["agent"],
      fingerprints: ["fp-new"],
    });
    expect(lease?.sessionId).toBe("old");
    await store.close();
  });

  it("uses synchronous=FULL by default and NORMAL when asked", async () => {
    // PRAGMA synchronous is per connection, so it is read through the store's own connection.
    const path = temp().file();
    const read = (store: SqliteStore) =>
      (store as unknown as { db: DatabaseSync }).db.prepare("PRAGMA synchronous").get() as { synchronous: number };
    const full = new SqliteStore({ path });
    expect(read(full).synchronous).toBe(2);
    await full.close();
    const normal = new SqliteStore({ path, synchronous: "normal" });
    expect(read(normal).synchronous).toBe(1);
    await normal.close();
    expect(() => new SqliteStore({ path, synchronous: "off" as "full" })).toThrow(
      expect.toSatisfy(ConfigurationError.isInstance),
    );
  });

  it("refuses a file that is not a SQLite database and leaves it byte for byte as it was", () => {
    const t = temp();
    const path = t.file("notes.txt");
    const text = "these are my notes, not a database\n".repeat(200);
    writeFileSync(path, text);
    const error = openError(path);
    expect(error.reason).toBe("not_a_database");
    expect(error.message).toContain("left untouched");
    expect(readFileSync(path, "utf8")).toBe(text);
    expect(readdirSync(t.dir)).toEqual(["notes.txt"]);
  });

  it("refuses another program's SQLite database and leaves it as it was", () => {
    const t = temp();
    const path = t.file("other.db");
    const other = new DatabaseSync(path);
    other.exec("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('Ada')");
    other.close();
    const before = readFileSync(path);
    const error = openError(path);
    expect(error.reason).toBe("foreign_database");
    expect(readFileSync(path).equals(before)).toBe(true);
    const check = new DatabaseSync(path);
    expect(check.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "delete" });
    check.close();
  });

  it("refuses a file written by a newer schema version and leaves it as it was", async () => {
    const path = temp().file();
    await new SqliteStore({ path }).close();
    const db = new DatabaseSync(path);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
    const before = readFileSync(path);
    const error = openError(path);
    expect(error.reason).toBe("newer_schema");
    expect(error.message).toContain(`version ${SCHEMA_VERSION + 1}`);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it("names the problem when the folder is missing or the path is a folder", () => {
    const t = temp();
    const missing = openError(join(t.dir, "no-such-folder", "sessions.db"));
    expect(missing.reason).toBe("cannot_open");
    expect(missing.message).toContain("no-such-folder");
    expect(existsSync(join(t.dir, "no-such-folder"))).toBe(false);

    expect(openError(t.dir).reason).toBe("cannot_open");
  });

  it("refuses a store file it may not write, and a folder it may not write in, as not writable or not openable", async () => {
    const t = temp();
    chmodSync(t.dir, 0o755);
    const path = t.file();
    await new SqliteStore({ path }).close();
    chmodSync(path, 0o444);
    const readOnly = await openAsOtherUser(path);
    expect(readOnly.reason).toBe("not_writable");
    expect(readOnly.message).toContain(path);
    const inLockedFolder = await openAsOtherUser(join(t.dir, "new.db"));
    expect(inLockedFolder.reason).toBe("cannot_open");
    expect(existsSync(join(t.dir, "new.db"))).toBe(false);
  });

  it("refuses an in-memory or URI path: sessions live in a file", () => {
    expect(() => new SqliteStore({ path: ":memory:" })).toThrow(expect.toSatisfy(ConfigurationError.isInstance));
    expect(() => new SqliteStore({ path: "" })).toThrow(expect.toSatisfy(ConfigurationError.isInstance));
    expect(() => new SqliteStore({ path: "file:x.db?mode=memory" })).toThrow(
      expect.toSatisfy(ConfigurationError.isInstance),
    );
  });
});

import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigurationError, StoreOpenError } from "@durable-agents/core";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { tempStoreDir } from "@durable-agents/store-sqlite/testing";
import {
  chooseOrderSupportStore,
  defaultStoreFile,
  deskFileFor,
  openOrderSupportStore,
  storeSideFile,
  StoreChoiceError,
} from "../src/order-support-store.js";

const temps: ReturnType<typeof tempStoreDir>[] = [];
afterEach(() => {
  for (const temp of temps.splice(0)) temp.remove();
});

describe("the store choice", () => {
  it("is SQLite by default, on a file per program in the example's .durable-agents folder", () => {
    const demo = chooseOrderSupportStore({ env: {}, program: "demo" });
    expect(demo).toEqual({ kind: "sqlite", path: defaultStoreFile("demo"), isDefault: true });
    expect(defaultStoreFile("demo")).toMatch(/examples\/order-support\/\.durable-agents\/demo\.db$/);
    expect(chooseOrderSupportStore({ env: {}, program: "server" })).toMatchObject({ path: defaultStoreFile("server") });
  });

  it("takes ORDER_SUPPORT_DB, a relative one from where the command was typed (INIT_CWD under pnpm)", () => {
    expect(chooseOrderSupportStore({ env: { ORDER_SUPPORT_DB: "/data/x.db" }, program: "demo" })).toEqual({
      kind: "sqlite",
      path: "/data/x.db",
      isDefault: false,
    });
    expect(
      chooseOrderSupportStore({ env: { ORDER_SUPPORT_DB: "x.db", INIT_CWD: "/home/me" }, program: "server" }),
    ).toMatchObject({
      path: "/home/me/x.db",
    });
    expect(chooseOrderSupportStore({ env: { ORDER_SUPPORT_DB: "x.db" }, program: "server" })).toMatchObject({
      path: join(process.cwd(), "x.db"),
    });
  });

  it("lets --store win over ORDER_SUPPORT_STORE, and refuses unknown kinds and PostgreSQL without a URL or for the demo", () => {
    expect(
      chooseOrderSupportStore({ flag: "memory", env: { ORDER_SUPPORT_STORE: "sqlite" }, program: "demo" }),
    ).toEqual({ kind: "memory" });
    expect(chooseOrderSupportStore({ env: { ORDER_SUPPORT_STORE: "memory" }, program: "server" })).toEqual({
      kind: "memory",
    });
    expect(() => chooseOrderSupportStore({ flag: "mongo", env: {}, program: "demo" })).toThrow(
      '--store must be one of sqlite, memory, not "mongo"',
    );
    expect(() => chooseOrderSupportStore({ env: { ORDER_SUPPORT_STORE: "postgres" }, program: "server" })).toThrow(
      /needs DATABASE_URL/,
    );
    expect(() =>
      chooseOrderSupportStore({ flag: "postgres", env: { DATABASE_URL: "postgres://h/db" }, program: "demo" }),
    ).toThrow('--store must be one of sqlite, memory, not "postgres"');
    expect(() => chooseOrderSupportStore({ env: { ORDER_SUPPORT_STORE: "redis" }, program: "server" })).toThrow(
      'ORDER_SUPPORT_STORE must be one of sqlite, memory, postgres, not "redis"',
    );
  });

  it("reads DATABASE_URL for the server only, and ORDER_SUPPORT_STORE=sqlite overrides it", () => {
    const env = { DATABASE_URL: "postgres://localhost/db" };
    expect(chooseOrderSupportStore({ env, program: "server" })).toEqual({
      kind: "postgres",
      databaseUrl: "postgres://localhost/db",
    });
    expect(
      chooseOrderSupportStore({ env: { ...env, ORDER_SUPPORT_STORE: "sqlite" }, program: "server" }),
    ).toMatchObject({ kind: "sqlite" });
    expect(chooseOrderSupportStore({ env, program: "demo" })).toMatchObject({ kind: "sqlite" });
  });

  it("names the side files after the session file", () => {
    expect(deskFileFor("/d/demo.db")).toBe("/d/demo.desk.db");
    expect(deskFileFor("/d/sessions")).toBe("/d/sessions.desk.db");
    expect(storeSideFile("/d/a.sqlite", "demo-sessions.json")).toBe("/d/a.demo-sessions.json");
  });
});

describe("opening the chosen store", () => {
  it("opens the SQLite store and its desk, and refuses a missing folder without creating it", async () => {
    const temp = tempStoreDir("order-support-store-");
    temps.push(temp);
    const opened = await openOrderSupportStore({ kind: "sqlite", path: temp.file("s.db"), isDefault: false });
    try {
      expect(opened.store).toBeInstanceOf(SqliteStore);
      expect(opened.desk.path).toBe(temp.file("s.desk.db"));
    } finally {
      await opened.close();
    }
    const missing = join(temp.dir, "no", "such", "s.db");
    await expect(openOrderSupportStore({ kind: "sqlite", path: missing, isDefault: false })).rejects.toSatisfy(
      (error: unknown) => StoreChoiceError.isInstance(error) && ConfigurationError.isInstance(error),
    );
    expect(existsSync(join(temp.dir, "no"))).toBe(false);
    // A default file's folder is created.
    const made = await openOrderSupportStore({ kind: "sqlite", path: join(temp.dir, "made", "s.db"), isDefault: true });
    await made.close();
    expect(existsSync(join(temp.dir, "made", "s.desk.db"))).toBe(true);
  });

  it("passes on the store's refusal of a folder given as the file", async () => {
    const temp = tempStoreDir("order-support-store-");
    temps.push(temp);
    let caught: unknown;
    try {
      await openOrderSupportStore({ kind: "sqlite", path: temp.dir, isDefault: false });
    } catch (error) {
      caught = error;
    }
    expect(StoreOpenError.isInstance(caught)).toBe(true);
    expect((caught as StoreOpenError).reason).toBe("cannot_open");
  });
});

/**
 * Where a process keeps its sessions and its order desk.
 *
 *   sqlite (default)  sessions in one SQLite file (`@durable-agents/store-sqlite`), the order desk in
 *                     a second file next to it: both survive restarts, and several processes may
 *                     share them. `ORDER_SUPPORT_DB` is the session file; by default
 *                     `.durable-agents/<demo|server>.db` in this example's folder.
 *   memory            sessions and desk in the process (`@durable-agents/store-memory`), gone when
 *                     it ends.
 *   postgres          sessions in PostgreSQL (`@durable-agents/store-postgres`), chosen by
 *                     `DATABASE_URL` for the server (or `ORDER_SUPPORT_STORE=postgres` with it); the
 *                     schema is migrated at start. The order desk is then in the process: it stands
 *                     for the shop's own system, which a real deployment has elsewhere.
 *
 * The kind comes from `--store` (demo) or `ORDER_SUPPORT_STORE`; anything else is refused.
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigurationError, errorGuard, type SessionStore } from "@durable-agents/core";
import { MemoryStore } from "@durable-agents/store-memory";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import pg from "pg";
import { SqliteStore } from "@durable-agents/store-sqlite";
import { OrderDesk } from "./order-desk.js";

export const orderSupportStoreKinds = ["sqlite", "memory", "postgres"] as const;
export type OrderSupportStoreKind = (typeof orderSupportStoreKinds)[number];

export type OrderSupportProgram = "demo" | "server";

export type StoreChoice =
  | { readonly kind: "memory" }
  | { readonly kind: "postgres"; readonly databaseUrl: string }
  | {
      readonly kind: "sqlite";
      /** The session file, absolute. */
      readonly path: string;
      /** The default file (its folder is created when missing), not one named by `ORDER_SUPPORT_DB`. */
      readonly isDefault: boolean;
    };

/** A store choice that cannot work: an unknown kind, PostgreSQL without a URL, a folder that does not exist. */
export class StoreChoiceError extends ConfigurationError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, [], options);
  }
  static override isInstance = errorGuard<StoreChoiceError>("configuration", "StoreChoiceError");
}

type Env = Readonly<Record<string, string | undefined>>;

/** This example's folder (the parent of `src/` and `dist/`). */
const exampleRoot = fileURLToPath(new URL("..", import.meta.url));

/** The git-ignored folder of the default store files: `.durable-agents/` in this example's folder. */
export const defaultStoreFolder = join(exampleRoot, ".durable-agents");

/** The default session file of a program: the demo and the server keep apart. */
export function defaultStoreFile(program: OrderSupportProgram): string {
  return join(defaultStoreFolder, `${program}.db`);
}

/**
 * The folder a relative `ORDER_SUPPORT_DB` is taken from: where the user typed the command.
 * `pnpm` runs scripts in the package folder and says where it was started in `INIT_CWD`.
 */
export function userCwd(env: Env = process.env): string {
  const initCwd = env.INIT_CWD;
  return initCwd !== undefined && initCwd !== "" && isAbsolute(initCwd) ? initCwd : process.cwd();
}

export interface StoreChoiceInput {
  /** `--store`, when given; it wins over `ORDER_SUPPORT_STORE`. */
  readonly flag?: string | undefined;
  /** What the flag is called in messages. Default "--store". */
  readonly flagName?: string;
  readonly env: Env;
  readonly program: OrderSupportProgram;
}

export function chooseOrderSupportStore(input: StoreChoiceInput): StoreChoice {
  const { env, program } = input;
  const fromFlag = input.flag !== undefined;
  const source = fromFlag ? (input.flagName ?? "--store") : "ORDER_SUPPORT_STORE";
  const named = (fromFlag ? input.flag : env.ORDER_SUPPORT_STORE)?.trim() ?? "";
  const databaseUrl = env.DATABASE_URL?.trim() ?? "";
  const kind = named !== "" ? named : program === "server" && databaseUrl !== "" ? "postgres" : "sqlite";
  // The demo runs on one machine: PostgreSQL is for the server.
  const kinds: readonly string[] = program === "server" ? orderSupportStoreKinds : ["sqlite", "memory"];
  if (!kinds.includes(kind)) throw new StoreChoiceError(`${source} must be one of ${kinds.join(", ")}, not "${kind}"`);
  if (kind === "postgres") {
    if (databaseUrl === "")
      throw new StoreChoiceError(`${source}=postgres needs DATABASE_URL, the PostgreSQL connection string`);
    return { kind, databaseUrl };
  }
  if (kind === "memory") return { kind };
  const file = env.ORDER_SUPPORT_DB?.trim() ?? "";
  if (file === "") return { kind: "sqlite", path: defaultStoreFile(program), isDefault: true };
  return { kind: "sqlite", path: resolve(userCwd(env), file), isDefault: false };
}

/** A file next to the session file: `<dir>/<name without .db>.<suffix>`. */
export function storeSideFile(storePath: string, suffix: string): string {
  const ext = extname(storePath);
  const name = [".db", ".sqlite", ".sqlite3"].includes(ext.toLowerCase())
    ? basename(storePath, ext)
    : basename(storePath);
  return join(dirname(storePath), `${name}.${suffix}`);
}

/** The order desk's file for a session file. */
export function deskFileFor(storePath: string): string {
  return storeSideFile(storePath, "desk.db");
}

export interface OpenedStore {
  readonly choice: StoreChoice;
  readonly store: SessionStore;
  readonly desk: OrderDesk;
  /** For the start line: "sqlite examples/order-support/.durable-agents/demo.db" or "in memory". */
  readonly description: string;
  /** Closes the store and the desk. */
  close(): Promise<void>;
}

/**
 * Opens the chosen store and its desk. Throws `StoreChoiceError` for a missing folder or a database
 * that cannot be reached, core's
 * `StoreOpenError` for a session file that is not a store, `OrderDeskOpenError` for a desk file that
 * is not a desk; a file that is refused is left as it was.
 */
export async function openOrderSupportStore(choice: StoreChoice, env: Env = process.env): Promise<OpenedStore> {
  if (choice.kind === "postgres") return openPostgres(choice.databaseUrl);
  if (choice.kind === "memory") {
    const store = new MemoryStore();
    const desk = new OrderDesk();
    return {
      choice,
      store,
      desk,
      description: "in memory",
      async close() {
        await store.close();
        desk.close();
      },
    };
  }
  const folder = dirname(choice.path);
  if (choice.isDefault) mkdirSync(folder, { recursive: true });
  else if (!existsSync(folder) || !statSync(folder).isDirectory()) {
    throw new StoreChoiceError(`ORDER_SUPPORT_DB is "${choice.path}", but the folder ${folder} does not exist`);
  }
  const store = new SqliteStore({ path: choice.path });
  let desk: OrderDesk;
  try {
    desk = OrderDesk.open(deskFileFor(choice.path));
  } catch (error) {
    void store.close();
    throw error;
  }
  return {
    choice,
    store,
    desk,
    description: `sqlite ${displayPath(choice.path, env)}`,
    async close() {
      await store.close();
      desk.close();
    },
  };
}

/** A path as the user would type it from where they started the command, or absolute when outside. */
export function displayPath(path: string, env: Env = process.env): string {
  const shown = relative(userCwd(env), path);
  return shown === "" || shown.startsWith("..") || isAbsolute(shown) ? path : shown;
}

async function openPostgres(databaseUrl: string): Promise<OpenedStore> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  pool.on("error", (error) => console.error("an idle PostgreSQL connection was lost:", error.message));
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreChoiceError(`DATABASE_URL: the PostgreSQL store could not be opened (${reason})`);
  }
  const store = new PostgresStore({ pool });
  const desk = new OrderDesk();
  const url = new URL(databaseUrl);
  return {
    choice: { kind: "postgres", databaseUrl },
    store,
    desk,
    description: `postgres ${url.host}${url.pathname}`,
    async close() {
      await store.close();
      await pool.end();
      desk.close();
    },
  };
}

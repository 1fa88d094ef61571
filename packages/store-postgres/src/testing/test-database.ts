import { randomBytes } from "node:crypto";
import pg from "pg";

/** The variable the global setup sets (and reuses when it is already set, e.g. by CI). */
export const POSTGRES_URL_VARIABLE = "DURABLE_AGENTS_PG_URL";

export interface TestDatabase {
  readonly connectionString: string;
  readonly name: string;
  /** Drops the database; end your pools on it first. */
  drop(): Promise<void>;
}

/**
 * Creates an empty database of its own on the test server (`DURABLE_AGENTS_PG_URL`, which the
 * global setup sets, or `serverUrl`), so test files never see each other's rows.
 */
export async function createTestDatabase(serverUrl = process.env[POSTGRES_URL_VARIABLE]): Promise<TestDatabase> {
  if (!serverUrl) {
    throw new Error(
      `${POSTGRES_URL_VARIABLE} is not set: add @durable-agents/store-postgres/testing/global-setup to vitest's globalSetup`,
    );
  }
  const name = `test_${randomBytes(6).toString("hex")}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    connectionString: url.toString(),
    name,
    async drop() {
      await withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

async function withClient<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

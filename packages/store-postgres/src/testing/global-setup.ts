import { startPostgres } from "./start-postgres.js";
import { POSTGRES_URL_VARIABLE } from "./test-database.js";

/** What vitest hands a global setup; only `provide` is used. */
interface SetupContext {
  provide?(key: string, value: unknown): void;
}

/**
 * A vitest global setup: one private PostgreSQL for the whole test run, its URL in
 * `DURABLE_AGENTS_PG_URL` (and `inject("durableAgentsPostgresUrl")`), stopped and removed at the end.
 * When `DURABLE_AGENTS_PG_URL` is already set, that server is used and nothing is started.
 */
export async function postgresGlobalSetup(context?: SetupContext): Promise<() => Promise<void>> {
  const existing = process.env[POSTGRES_URL_VARIABLE];
  if (existing) {
    context?.provide?.("durableAgentsPostgresUrl", existing);
    return async () => {};
  }
  const server = await startPostgres();
  process.env[POSTGRES_URL_VARIABLE] = server.connectionString;
  context?.provide?.("durableAgentsPostgresUrl", server.connectionString);
  return async () => {
    delete process.env[POSTGRES_URL_VARIABLE];
    await server.stop();
  };
}

export default postgresGlobalSetup;

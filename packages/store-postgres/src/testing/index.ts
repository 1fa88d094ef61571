export { startPostgres, type PostgresServer, type StartPostgresOptions } from "./start-postgres.js";
export { createTestDatabase, POSTGRES_URL_VARIABLE, type TestDatabase } from "./test-database.js";
export { postgresGlobalSetup } from "./global-setup.js";
export { postgresRawReader } from "./postgres-raw-reader.js";
export { openSchemaStores, type SchemaStores } from "./schema-stores.js";

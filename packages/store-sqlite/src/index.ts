export { SqliteStore, type SqliteStoreOptions } from "./sqlite-store.js";
export type { Synchronous } from "./open-database.js";
export { sqliteRawReader } from "./raw-reader.js";
export { APPLICATION_ID, LATEST_VERSION as SCHEMA_VERSION, migrations, type Migration } from "./schema.js";

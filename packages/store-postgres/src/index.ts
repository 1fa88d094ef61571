export { PostgresStore, type PostgresStoreOptions } from "./postgres-store.js";
export { migrate, type MigrateOptions, type MigrateResult } from "./migrate.js";
export { migrationSql } from "./migration-sql.js";
export { migrations, type Migration } from "./migrations.js";
export { DEFAULT_SCHEMA } from "./schema-name.js";
export { decodeHead, encodeHead, HEAD_FORMAT_DEFLATE_1, storedHead } from "./head-codec.js";

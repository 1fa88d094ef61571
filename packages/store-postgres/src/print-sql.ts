#!/usr/bin/env node
/** Prints the schema's SQL: `durable-agents-pg-sql [--schema <name>]`. */
import { migrationSql } from "./migration-sql.js";

const args = process.argv.slice(2);
const at = args.indexOf("--schema");
const schema = at >= 0 ? (args[at + 1] ?? "") : undefined;
try {
  process.stdout.write(migrationSql(schema === undefined ? {} : { schema }));
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}

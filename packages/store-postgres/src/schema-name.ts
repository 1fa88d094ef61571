import { ConfigurationError } from "@durable-agents/core";

/** The schema the store uses when the application names none. */
export const DEFAULT_SCHEMA = "durable_agents";

const pattern = /^[a-z_][a-z0-9_]{0,49}$/;

/**
 * Checks a schema name and returns it. Only lower-case unquoted identifiers of at most 50
 * characters are accepted, so the name can be written into SQL and into the notification channel
 * (`da_<schema>`, under PostgreSQL's 63-byte limit) without any escaping surprises.
 */
export function schemaName(name: string | undefined): string {
  const schema = name ?? DEFAULT_SCHEMA;
  if (typeof schema !== "string" || !pattern.test(schema)) {
    throw new ConfigurationError(`invalid schema name ${JSON.stringify(schema)}`, [
      "a schema name is 1 to 50 characters of a-z, 0-9 and _, not starting with a digit",
    ]);
  }
  return schema;
}

/** The LISTEN/NOTIFY channel of the store in this schema. */
export const channelName = (schema: string): string => `da_${schema}`;

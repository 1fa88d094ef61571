import { ConfigurationError, errorGuard } from "@durable-agents/core";

/**
 * An MCP server could not be reached: it is down, its command could not start, it did not answer the
 * handshake in time, or its tool list could not be read. At start (`McpToolset.connect`) it is a
 * setup problem for whoever runs the application (a `ConfigurationError`, code `configuration`); in
 * a call step it is a failed attempt, which the policy table retries or records.
 */
export class McpConnectionError extends ConfigurationError {
  constructor(
    /** The server's name in the application's list. */
    readonly server: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, [], options);
  }
  static override isInstance = errorGuard<McpConnectionError>("configuration", "McpConnectionError");
}

export const errorText = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const own = error.message || error.name;
    // fetch() says only "fetch failed"; the reason (ECONNREFUSED, ...) is in its cause.
    return cause instanceof Error && cause.message && !own.includes(cause.message) ? `${own} (${cause.message})` : own;
  }
  return typeof error === "string" ? error : JSON.stringify(error);
};

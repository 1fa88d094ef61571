/**
 * How an error becomes an HTTP answer: `{ error: { code, message } }` with a status that says who
 * must act. 400 is for bad client input only (`invalid_input`, `input_too_large`); 404 and 409 name
 * what the client asked for that does not exist or does not fit; every other error (a configuration
 * mistake, a runner or store breaking its contract, stored state that cannot be read, an unexpected
 * failure) is a 500 whose body says nothing more, and whose cause the server logs.
 */
import { DurableAgentsError, type ErrorCode } from "@durable-agents/core";

export type HttpErrorStatus = 400 | 401 | 403 | 404 | 409 | 500;

export interface HttpErrorBody {
  readonly error: { readonly code: string; readonly message: string };
}

/** An error of the HTTP layer itself (authentication, unknown route). */
export class HttpError extends Error {
  constructor(
    readonly status: HttpErrorStatus,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** The status of every code of the error family (a new code does not compile until it is placed here). */
export const statusOfCode: Readonly<Record<ErrorCode, HttpErrorStatus>> = Object.freeze({
  // Bad client input.
  invalid_input: 400,
  input_too_large: 400,
  // What the client named does not exist, or does not fit the session's state.
  session_not_found: 404,
  interrupt_not_found: 404,
  session_state: 409,
  duplicate_resolution: 409,
  // The server picks the agent: an unknown one is its own configuration mistake.
  unknown_agent: 500,
  configuration: 500,
  contract_violation: 500,
  stored_state: 500,
  store_open: 500,
  timeout: 500,
  version_conflict: 500,
  lease_lost: 500,
  tool_execution: 500,
  // A tool that stopped on its turn's cancellation: the engine records the call, nothing reaches a client.
  tool_cancelled: 500,
  model_step: 500,
});

const internal: HttpErrorBody = { error: { code: "internal", message: "the server failed to handle the request" } };

export function httpErrorOf(error: unknown): { status: HttpErrorStatus; body: HttpErrorBody } {
  if (error instanceof HttpError) {
    return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  }
  if (DurableAgentsError.isInstance(error)) {
    const status = statusOfCode[error.code] ?? 500;
    if (status !== 500) return { status, body: { error: { code: error.code, message: error.message } } };
  }
  return { status: 500, body: internal };
}

/** The line the server logs for a 500: the error's code (when it has one) and the error with its causes. */
export function describeServerError(error: unknown): string {
  const code = DurableAgentsError.isInstance(error) ? ` [${error.code}]` : "";
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  const cause =
    error instanceof Error && error.cause !== undefined ? `\ncaused by: ${describeServerError(error.cause)}` : "";
  return `order-support server${code}: ${text}${cause}`;
}

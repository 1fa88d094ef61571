/**
 * How an error becomes an HTTP answer: `{ error: { code, message } }` with a status that says who
 * must act. Core's typed errors keep their `code`; anything else is a 500 without details.
 */
import { DurableAgentsError } from "@durable-agents/core";

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

const statusOfCode: Readonly<Record<string, HttpErrorStatus>> = {
  invalid_input: 400,
  input_too_large: 400,
  session_not_found: 404,
  interrupt_not_found: 404,
  unknown_agent: 404,
  session_state: 409,
  duplicate_resolution: 409,
};

export function httpErrorOf(error: unknown): { status: HttpErrorStatus; body: HttpErrorBody } {
  if (error instanceof HttpError) {
    return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  }
  if (DurableAgentsError.isInstance(error)) {
    const status = statusOfCode[error.code];
    if (status !== undefined) return { status, body: { error: { code: error.code, message: error.message } } };
  }
  return { status: 500, body: { error: { code: "internal", message: "the server failed to handle the request" } } };
}

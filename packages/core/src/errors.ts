/**
 * Typed errors. Every error carries a stable `code` and is recognised across duplicate installs
 * of this package through a `Symbol.for` marker (use `DurableAgentsError.isInstance`, not
 * `instanceof`).
 */
const marker = Symbol.for("durable-agents.error");

export type ErrorCode =
  | "session_not_found"
  | "interrupt_not_found"
  | "invalid_input"
  | "input_too_large"
  | "session_state"
  | "duplicate_resolution"
  | "version_conflict"
  | "lease_lost"
  | "policy"
  | "unknown_agent"
  | "tool_execution"
  | "timeout"
  | "store_open";

export class DurableAgentsError extends Error {
  readonly [marker] = true;
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  static isInstance(value: unknown): value is DurableAgentsError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

function guard<T extends DurableAgentsError>(code: ErrorCode) {
  return (value: unknown): value is T => DurableAgentsError.isInstance(value) && value.code === code;
}

/** No session has this ID. */
export class SessionNotFoundError extends DurableAgentsError {
  constructor(readonly sessionId: string) {
    super("session_not_found", `no session with ID "${sessionId}"`);
  }
  static override isInstance = guard<SessionNotFoundError>("session_not_found");
}

/** The session has no interrupt with this ID. */
export class InterruptNotFoundError extends DurableAgentsError {
  constructor(
    readonly sessionId: string,
    readonly interruptId: string,
  ) {
    super("interrupt_not_found", `session "${sessionId}" has no interrupt "${interruptId}"`);
  }
  static override isInstance = guard<InterruptNotFoundError>("interrupt_not_found");
}

/** The input does not have the documented shape. `issues` lists what is wrong. */
export class InvalidInputError extends DurableAgentsError {
  constructor(
    message: string,
    readonly issues: string[] = [],
  ) {
    super("invalid_input", message);
  }
  static override isInstance = guard<InvalidInputError>("invalid_input");
}

/** The input is larger than the configured limit. */
export class InputTooLargeError extends DurableAgentsError {
  constructor(
    readonly what: string,
    readonly size: number,
    readonly limit: number,
  ) {
    super("input_too_large", `${what} is ${size} characters, over the limit of ${limit}`);
  }
  static override isInstance = guard<InputTooLargeError>("input_too_large");
}

/** The call does not fit the session's current state (for example, the session already exists). */
export class SessionStateError extends DurableAgentsError {
  constructor(message: string) {
    super("session_state", message);
  }
  static override isInstance = guard<SessionStateError>("session_state");
}

/** The interrupt was already approved or rejected; the second decision is refused. */
export class DuplicateResolutionError extends DurableAgentsError {
  constructor(
    readonly sessionId: string,
    readonly interruptId: string,
  ) {
    super("duplicate_resolution", `interrupt "${interruptId}" of session "${sessionId}" was already resolved`);
  }
  static override isInstance = guard<DuplicateResolutionError>("duplicate_resolution");
}

/** A store commit expected another version of the session. */
export class VersionConflictError extends DurableAgentsError {
  constructor(
    readonly sessionId: string,
    readonly expected: number,
    readonly actual: number | undefined,
  ) {
    super("version_conflict", `session "${sessionId}" is at version ${actual}, not ${expected}`);
  }
  static override isInstance = guard<VersionConflictError>("version_conflict");
}

/** The worker no longer holds the session's lease (it expired or another worker took it). */
export class LeaseLostError extends DurableAgentsError {
  constructor(
    readonly sessionId: string,
    readonly fence: number,
  ) {
    super("lease_lost", `lease ${fence} on session "${sessionId}" is no longer held`);
  }
  static override isInstance = guard<LeaseLostError>("lease_lost");
}

/** A tool policy map does not fit the agent (a typo, a duplicate tool, an unsupported tool). */
export class PolicyError extends DurableAgentsError {
  constructor(message: string) {
    super("policy", message);
  }
  static override isInstance = guard<PolicyError>("policy");
}

/** No session definition with this agent name is registered. */
export class UnknownAgentError extends DurableAgentsError {
  constructor(readonly agent: string) {
    super("unknown_agent", `no session definition named "${agent}"`);
  }
  static override isInstance = guard<UnknownAgentError>("unknown_agent");
}

/**
 * Thrown by a tool for a failure the model should see. The call is recorded `failed` with this
 * message and is not retried, whatever the tool's effect.
 */
export class ToolExecutionError extends DurableAgentsError {
  constructor(message: string, options?: ErrorOptions) {
    super("tool_execution", message, options);
  }
  static override isInstance = guard<ToolExecutionError>("tool_execution");
}

/** A wait (e.g. `waitUntilIdle`) ran out of time; nothing was changed. */
export class WaitTimeoutError extends DurableAgentsError {
  constructor(message: string) {
    super("timeout", message);
  }
  static override isInstance = guard<WaitTimeoutError>("timeout");
}

/** Why a store could not be opened. */
export type StoreOpenReason = "not_a_database" | "foreign_database" | "newer_schema" | "not_writable" | "cannot_open";

/**
 * A store refused to open its storage: the file or database is not one it can use. Nothing was
 * written to it. `reason` says which case; `path` names the storage (a file path or a schema).
 */
export class StoreOpenError extends DurableAgentsError {
  constructor(
    readonly reason: StoreOpenReason,
    readonly path: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super("store_open", message, options);
  }
  static override isInstance = guard<StoreOpenError>("store_open");
}

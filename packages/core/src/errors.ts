/**
 * Typed errors. Every error of every Durable Agents package is a `DurableAgentsError`: it carries a
 * stable `code` that names its cause, and is recognised across duplicate installs of a package
 * through a `Symbol.for` marker (use `XError.isInstance`, not `instanceof`).
 *
 * The causes that are nobody's fault but a caller's, an operator's or a component's each have their
 * own code: `invalid_input` (bad client input), `configuration` (a setup mistake of the
 * application), `contract_violation` (a runner or store broke its interface's contract) and
 * `stored_state` (stored data that is corrupt or of an unknown version).
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
  | "configuration"
  | "contract_violation"
  | "stored_state"
  | "unknown_agent"
  | "tool_execution"
  | "tool_cancelled"
  | "model_step"
  | "timeout"
  | "store_open";

/** Every code, in the order of the table in the README. */
export const errorCodes: readonly ErrorCode[] = Object.freeze([
  "invalid_input",
  "input_too_large",
  "session_not_found",
  "interrupt_not_found",
  "unknown_agent",
  "session_state",
  "duplicate_resolution",
  "timeout",
  "configuration",
  "contract_violation",
  "stored_state",
  "store_open",
  "version_conflict",
  "lease_lost",
  "tool_execution",
  "tool_cancelled",
  "model_step",
]);

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

/**
 * The `isInstance` guard of an error class: its code, and for a class that shares its code with a
 * more general class (`PolicyError` is a `ConfigurationError`), also its name.
 */
export function errorGuard<T extends DurableAgentsError>(code: ErrorCode, name?: string) {
  return (value: unknown): value is T =>
    DurableAgentsError.isInstance(value) &&
    value.code === code &&
    (name === undefined || (value as Error).name === name);
}
const guard = errorGuard;

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

/**
 * Bad client input: the input of a call does not have the documented shape. `issues` lists what is
 * wrong. The caller must fix its call; nothing was changed.
 */
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

/**
 * A configuration mistake of the application (an option out of range, a missing model, a worker
 * without session definitions, an environment variable naming no choice). Whoever sets the
 * application up must fix it; no session was touched. `issues` lists what is wrong.
 */
export class ConfigurationError extends DurableAgentsError {
  constructor(
    message: string,
    readonly issues: string[] = [],
    options?: ErrorOptions,
  ) {
    super("configuration", message, options);
  }
  static override isInstance = guard<ConfigurationError>("configuration");
}

/**
 * A tool policy map does not fit the agent (a typo, a duplicate tool, an unsupported tool): a
 * `ConfigurationError` (code `configuration`), recognised on its own with `PolicyError.isInstance`.
 */
export class PolicyError extends ConfigurationError {
  constructor(message: string) {
    super(message);
  }
  static override isInstance = guard<PolicyError>("configuration", "PolicyError");
}

/**
 * A migration between agent definitions could not be applied: its `transform` threw, or returned a
 * head that does not fit the session (another session's identity, a changed turn or inbox position,
 * a malformed value). A `ConfigurationError` (code `configuration`: the application's migration must
 * be fixed), recognised on its own with `MigrationError.isInstance`. Nothing of the session changed
 * but its waiting mark (status `waiting_for_definition`, a `definition_waiting` event with the reason).
 */
export class MigrationError extends ConfigurationError {
  constructor(
    readonly sessionId: string,
    readonly from: string,
    readonly to: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`the migration of session "${sessionId}" from ${from} to ${to} failed: ${message}`, [message], options);
  }
  static override isInstance = guard<MigrationError>("configuration", "MigrationError");
}

/** Who broke a contract: a runner, a store, or the engine calling a runner. */
export type ContractParty = "runner" | "store" | "engine";

/**
 * A component broke the contract of its interface: a store answered what the store contract rules
 * out (a head of another session, fewer history items than the head counts), or a runner was handed
 * or returned what the runner contract rules out. A bug of that component; its author must fix it.
 */
export class ContractViolationError extends DurableAgentsError {
  constructor(
    readonly party: ContractParty,
    message: string,
    options?: ErrorOptions,
  ) {
    super("contract_violation", message, options);
  }
  static override isInstance = guard<ContractViolationError>("contract_violation");
}

/** What stored state could not be read: `unknown_version` (written by a newer version) or `malformed`. */
export type StoredStateReason = "unknown_version" | "malformed";

/**
 * Stored state is corrupt or of a version this code does not know (a newer release wrote it).
 * `format` names the stored format (`session_head`, or an adapter's run state), `version` the
 * version found. Nothing was changed; an operator must repair the data or upgrade.
 */
export class StoredStateError extends DurableAgentsError {
  constructor(
    readonly format: string,
    readonly reason: StoredStateReason,
    readonly version: unknown,
    message: string,
    options?: ErrorOptions,
  ) {
    super("stored_state", message, options);
  }
  static override isInstance = guard<StoredStateError>("stored_state");
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

/**
 * Thrown by a tool that stopped on its abort signal (`currentToolCall().signal`) to state that it
 * changed nothing. While its turn is being cancelled, the call then ends `cancelled`, whatever its
 * effect; a single-attempt call that stops with any other error ends `outcome_unknown`. Outside a
 * cancellation it counts as a failed attempt.
 */
export class ToolCancelledError extends DurableAgentsError {
  constructor(message = "the tool stopped on the cancellation and changed nothing", options?: ErrorOptions) {
    super("tool_cancelled", message, options);
  }
  static override isInstance = guard<ToolCancelledError>("tool_cancelled");
}

/**
 * Thrown by a runner's `runModel` for a failure another attempt cannot fix (the provider refused the
 * request for good, the model is not available): the turn fails at once with this message instead
 * of retrying the step. Any other error is retried per `modelRetry`.
 */
export class ModelStepError extends DurableAgentsError {
  constructor(message: string, options?: ErrorOptions) {
    super("model_step", message, options);
  }
  static override isInstance = guard<ModelStepError>("model_step");
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

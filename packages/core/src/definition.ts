/**
 * A session definition: an agent's runner plus its tool policies and the engine's knobs. Built once
 * per process; every process that runs or starts sessions of this agent builds the same one.
 */
import { ConfigurationError, PolicyError } from "./errors.js";
import { describeDefinition, fingerprintOf, fingerprintPattern, type DefinitionDescription } from "./fingerprint.js";
import { validatePolicies, type ToolDescription, type ToolPolicies } from "./policy.js";
import type { MachineConfig } from "./machine.js";
import { defaultModelRetry, defaultToolBackoff, type BackoffPolicy, type RetryPolicy } from "./retry.js";
import type { Runner } from "./runner.js";
import type { HistoryItem, SessionHead } from "./schemas.js";

export { backoffDelay, defaultModelRetry, defaultToolBackoff, type BackoffPolicy, type RetryPolicy } from "./retry.js";

export interface SessionDefinitionOptions {
  /** The agent name sessions are started with; also what a worker serves. */
  readonly name: string;
  readonly runner: Runner;
  readonly policies?: ToolPolicies;
  readonly modelRetry?: Partial<RetryPolicy>;
  readonly toolBackoff?: Partial<BackoffPolicy>;
  /** RunModel steps one turn may take before it fails (guards against a model that never stops). */
  readonly maxModelSteps?: number;
  /**
   * How long a cancelled turn waits for its calls in flight (ms, default 10,000): a call that has not
   * returned by then ends `outcome_unknown` (single-attempt) or `cancelled` (read, idempotent write).
   */
  readonly cancelGraceMs?: number;
  /**
   * How sessions pinned to an earlier definition (by its fingerprint) move to this one. Without a
   * migration from its fingerprint, a session of another definition is never driven by this one.
   */
  readonly migrations?: readonly DefinitionMigration[];
}

/** What a migration's `transform` is given: the session as stored, before anything runs on the new definition. */
export interface MigrationInput {
  readonly sessionId: string;
  /** The fingerprint the session is pinned to. */
  readonly from: string;
  /** This definition's fingerprint. */
  readonly to: string;
  /** A copy of the session's head: change it and return it. */
  readonly head: SessionHead;
  /** The session's history, in order (read-only: the stored history is never rewritten). */
  readonly history: readonly HistoryItem[];
}

/** What a `transform` returns: the new head, and items to append to the history (e.g. a note for the model). Nothing: no change. */
export interface MigrationResult {
  readonly head?: SessionHead;
  readonly appendHistory?: readonly HistoryItem[];
}

/**
 * A migration from one earlier definition, named by its fingerprint: `accept` resumes the session as
 * it is; `transform` rewrites its state first. A transform may run more than once (a worker that dies
 * during it leaves the session as it was), so it must not act on the world.
 */
export type DefinitionMigration =
  | { readonly from: string; readonly accept: true }
  | {
      readonly from: string;
      readonly transform: (input: MigrationInput) => MigrationResult | undefined | Promise<MigrationResult | undefined>;
    };

export interface SessionDefinition {
  readonly name: string;
  readonly runner: Runner;
  /**
   * The runner's tools as it lists them now (`runner.tools()` on every read): a runner whose tools
   * can change while it serves (MCP servers announce new tool lists) reports the new list here.
   */
  readonly tools: readonly ToolDescription[];
  readonly policies: ToolPolicies;
  readonly modelRetry: RetryPolicy;
  readonly toolBackoff: BackoffPolicy;
  readonly maxModelSteps: number;
  readonly cancelGraceMs: number;
  /** What the fingerprint is computed from: the tools' effects and approval rules, and the runner's `describe()`. */
  readonly description: DefinitionDescription;
  /** The definition's fingerprint (`fp1-` and 32 hex digits): what its sessions are pinned to. */
  readonly fingerprint: string;
  readonly migrations: readonly DefinitionMigration[];
}

/** Validates the policies against the runner's tools (a typo is a `PolicyError`) and fills defaults. */
export function defineSession(options: SessionDefinitionOptions): SessionDefinition {
  if (typeof options.name !== "string" || !/^[A-Za-z0-9._-]{1,100}$/.test(options.name)) {
    throw new ConfigurationError("a session definition needs a name of 1-100 letters, digits, '.', '_' or '-'");
  }
  const tools = options.runner.tools();
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name)) throw new PolicyError(`two tools of the agent are named "${tool.name}"`);
    seen.add(tool.name);
  }
  const policies = validatePolicies(tools, options.policies);
  options.runner.validatePolicies?.(policies);
  const modelRetry = { ...defaultModelRetry, ...options.modelRetry };
  if (!Number.isInteger(modelRetry.maxAttempts) || modelRetry.maxAttempts < 1) {
    throw new ConfigurationError("modelRetry.maxAttempts must be a positive integer");
  }
  const cancelGraceMs = options.cancelGraceMs ?? 10_000;
  if (!Number.isFinite(cancelGraceMs) || cancelGraceMs < 0) {
    throw new ConfigurationError("cancelGraceMs must be a non-negative number of milliseconds");
  }
  const description = describeDefinition(options.name, tools, policies, options.runner.describe?.() ?? null);
  const fingerprint = fingerprintOf(description);
  const runner = options.runner;
  return {
    name: options.name,
    runner,
    get tools() {
      return runner.tools();
    },
    policies,
    modelRetry,
    toolBackoff: { ...defaultToolBackoff, ...options.toolBackoff },
    maxModelSteps: options.maxModelSteps ?? 50,
    cancelGraceMs,
    description,
    fingerprint,
    migrations: checkMigrations(options.migrations, fingerprint),
  };
}

/** Every migration names a fingerprint other than this definition's, once, and either accepts or transforms. */
function checkMigrations(migrations: unknown, own: string): readonly DefinitionMigration[] {
  if (migrations === undefined) return [];
  if (!Array.isArray(migrations))
    throw new ConfigurationError("migrations is a list of { from, accept } or { from, transform }");
  const seen = new Set<string>();
  return migrations.map((migration: unknown, index): DefinitionMigration => {
    const m = (typeof migration === "object" && migration !== null ? migration : {}) as Record<string, unknown>;
    const from = m.from;
    if (typeof from !== "string" || !fingerprintPattern.test(from)) {
      throw new ConfigurationError(
        `migrations[${index}].from must be a definition fingerprint ("fp1-" and 32 hex digits), not ${JSON.stringify(from)}`,
      );
    }
    if (from === own)
      throw new ConfigurationError(`migrations[${index}] is from this definition's own fingerprint ${own}`);
    if (seen.has(from)) throw new ConfigurationError(`two migrations are from ${from}`);
    seen.add(from);
    const accepts = m.accept === true;
    const transforms = typeof m.transform === "function";
    if (accepts === transforms || (m.accept !== undefined && !accepts)) {
      throw new ConfigurationError(
        `migrations[${index}] (from ${from}) needs exactly one of accept: true or transform: a function`,
      );
    }
    return accepts
      ? { from, accept: true }
      : { from, transform: m.transform as Extract<DefinitionMigration, { transform: unknown }>["transform"] };
  });
}

/** The rules the state machine applies to this definition's sessions: limits, retries, backoff, policies. */
export function machineConfig(definition: SessionDefinition): MachineConfig {
  return {
    maxModelSteps: definition.maxModelSteps,
    modelRetry: definition.modelRetry,
    toolBackoff: definition.toolBackoff,
    // Read on every use, so a tool list that changes (MCP) reaches the machine's next transition.
    get tools() {
      return definition.tools;
    },
    policies: definition.policies,
    cancelGraceMs: definition.cancelGraceMs ?? 10_000,
    failureNote: (text) => definition.runner.userItem("turn_failure_note", text),
  };
}

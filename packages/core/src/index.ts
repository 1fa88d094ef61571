/**
 * `@durable-agents/core`: what an application uses. Define a session, run a `Worker`, talk to
 * sessions through a `SessionClient`, read `currentToolCall()` inside a tool; the errors, the
 * tool-effect policy types and the session data types. What an engine, store or adapter author
 * needs (the state machine, the driver, the store input checks, the runner and store contracts'
 * parts) is in `@durable-agents/core/engine`; test helpers are in `@durable-agents/core/testing`.
 */
export * from "./errors.js";
export * from "./schemas.js";
export {
  defaultToolEffect,
  idempotencyKey,
  policyTable,
  ToolEffect,
  type Reconcile,
  type ReconcileInput,
  type ReconcileResult,
  toolEffects,
  ToolPolicy,
  type EffectRule,
  type ToolPolicies,
  type ToolStepKind,
} from "./policy.js";
export {
  defaultModelRetry,
  defaultToolBackoff,
  defineSession,
  type BackoffPolicy,
  type DefinitionMigration,
  type MigrationInput,
  type MigrationResult,
  type RetryPolicy,
  type SessionDefinition,
  type SessionDefinitionOptions,
} from "./definition.js";
export {
  describeChanges,
  fingerprintPattern,
  type AgentDescription,
  type DefinitionDescription,
  type DescriptionChange,
  type RunnerDescription,
  type ToolApprovalRule,
} from "./fingerprint.js";
export { Worker, type WorkerOptions } from "./worker.js";
export type { CoalescerOptions } from "./coalescer.js";
export {
  SessionClient,
  type AttentionResolution,
  type CancelResult,
  type ClientLimits,
  type SessionClientOptions,
  type StepLogEntry,
} from "./client.js";
export { currentToolCall, type ToolCallContext } from "./tool-context.js";
// What an application passes around: a runner into `defineSession`, a store into `Worker` and
// `SessionClient`, and what `sendMessage` returns. The rest of both contracts is in `/engine`.
export type { Runner } from "./runner.js";
export type { EnqueueResult, SessionStore } from "./store.js";

/**
 * `@durable-agents/core/engine`: what an engine, store or adapter author needs, beyond what the root
 * exports. The session rules as a pure state machine (`apply`, the due-step queries), core's driver
 * over a store (`driveSession`, `HistoryCache`, the delta coalescer), running code inside a tool
 * call's context, the text a model sees for outcomes, the checks every store runs on its input
 * (`storeInput`), and every type of the runner and store contracts.
 */
export {
  apply,
  applyAll,
  applyDefinition,
  checkMigratedHead,
  currentCalls,
  deriveStatus,
  dueSteps,
  isCallInFlight,
  isRunnable,
  isTurnActive,
  joinedMessages,
  newSessionHead,
  outcomesForNextModelStep,
  type ApplyContext,
  type Due,
  type DefinitionInput,
  type DefinitionTransition,
  type DueStep,
  type MachineConfig,
  type MachineInput,
  type PlannedCall,
  type Transition,
  type WaitingStep,
} from "./machine.js";
export { backoffDelay, machineConfig } from "./definition.js";
export { canonicalJson, describeDefinition, fingerprintOf } from "./fingerprint.js";
export { hasReconcile, resolveCallPolicy, validatePolicies, type ToolDescription } from "./policy.js";
export { runInToolCall, runOutsideToolCall } from "./tool-context.js";
export {
  modelAttemptFailed,
  runModelAttempt,
  runToolAttempt,
  type ModelAttempt,
  type ToolAttempt,
} from "./tool-step.js";
export { runReconcileAttempt, type ReconcileAttempt } from "./reconcile-step.js";
export { migrationTransition, runMigration, type MigrationOutcome, type MigrationRun } from "./migration-step.js";
export { TurnSignals } from "./turn-signals.js";
export {
  defaultRejectionMessage,
  ATTENTION_NOTE_PREFIX,
  describeAttentionResolution,
  describeOutcome,
  describeRerunOutcome,
  describeTurnCancellation,
  describeTurnFailure,
  isTurnNote,
  TURN_CANCELLED_NOTE_PREFIX,
  TURN_FAILURE_NOTE_PREFIX,
} from "./outcome-text.js";
export { DeltaCoalescer, type CoalescerOptions } from "./coalescer.js";
export { driveSession, type DriveEnd, type DriveOptions } from "./session-driver.js";
export { HistoryCache } from "./history-cache.js";
export { HeadCache, loadStoredSession } from "./stored-session.js";
export * as storeInput from "./store-input.js";
export type * from "./runner.js";
export type * from "./store.js";

export * from "./errors.js";
export * from "./policy.js";
export * from "./schemas.js";
export type * from "./runner.js";
export type * from "./store.js";
export { currentToolCall, runInToolCall, runOutsideToolCall, type ToolCallContext } from "./tool-context.js";
export {
  backoffDelay,
  defaultModelRetry,
  defaultToolBackoff,
  defineSession,
  machineConfig,
  type BackoffPolicy,
  type RetryPolicy,
  type SessionDefinition,
  type SessionDefinitionOptions,
} from "./definition.js";
export {
  apply,
  applyAll,
  currentCalls,
  deriveStatus,
  dueSteps,
  isRunnable,
  isTurnActive,
  newSessionHead,
  outcomesForNextModelStep,
  type ApplyContext,
  type Due,
  type DueStep,
  type MachineConfig,
  type MachineInput,
  type PlannedCall,
  type Transition,
  type WaitingStep,
} from "./machine.js";
export { defaultRejectionMessage, describeOutcome, describeTurnFailure } from "./outcome-text.js";
export { DeltaCoalescer, type CoalescerOptions } from "./coalescer.js";
export { driveSession, type DriveEnd, type DriveOptions } from "./session-driver.js";
export { Worker, type WorkerOptions } from "./worker.js";
export { SessionClient, type ClientLimits, type SessionClientOptions, type StepLogEntry } from "./client.js";
export { HistoryCache } from "./history-cache.js";
export { loadStoredSession } from "./stored-session.js";
export * as storeInput from "./store-input.js";

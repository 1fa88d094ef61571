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
  type BackoffPolicy,
  type RetryPolicy,
  type SessionDefinition,
  type SessionDefinitionOptions,
} from "./definition.js";

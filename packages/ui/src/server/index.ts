/**
 * `@durable-agents/ui/server`: a session's events as a resumable AI SDK UI message stream
 * (`sessionUIMessageStream`, `sessionUIMessageResponse`), its conversation rebuilt as `UIMessage[]`
 * (`loadSessionUIMessages`), and route helpers for a fetch-style server (`createSessionUIHandlers`).
 */
export type { UISessionClient, UIToolPolicies } from "./client-port.js";
export {
  createSessionUIHandlers,
  type SessionUIHandlers,
  type SessionUIHandlersOptions,
} from "./handlers.js";
export { loadSessionUIMessages, type SessionUIMessages } from "./messages.js";
export {
  isIdleAfter,
  sessionUIMessageResponse,
  sessionUIMessageStream,
  toCursor,
  toSseStream,
  uiMessageStreamHeaders,
  waitsForApproval,
  type SessionUIMessageStreamOptions,
  type SseOptions,
  type UIStreamFrame,
} from "./stream.js";

/**
 * `@durable-agents/ui/client`: `DurableChatTransport`, the AI SDK's `ChatTransport` for `useChat`
 * on a durable session (send, resume from the last position read, approvals, stop), and the small
 * SSE reader it uses. Runs in browsers and Node; imports no code of `ai` or core at run time.
 */
export {
  DurableChatError,
  DurableChatTransport,
  type DurableChatTransportOptions,
  type LoadedSession,
} from "./transport.js";
export { readSseMessages, type SseMessage } from "./sse.js";
export type {
  DurableDataTypes,
  DurableMessageMetadata,
  DurableToolMetadata,
  DurableTurnStatus,
  DurableUIChunk,
  DurableUIMessage,
  TimelineStep,
  TimelineStepKind,
} from "../types.js";

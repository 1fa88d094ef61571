/**
 * `@durable-agents/ui`: a durable session's events as the AI SDK's UI message stream chunks, for
 * chat UIs on `useChat`. What runs on both sides: the UI message types, the event → chunk mapping
 * and the stream positions. The server side (streams, route helpers) is in
 * `@durable-agents/ui/server`, the browser side (`DurableChatTransport`) in `@durable-agents/ui/client`.
 */
export {
  formatCursor,
  frameId,
  parseCursor,
  startCursor,
  cursorBefore,
  type StreamCursor,
} from "./cursor.js";
export {
  assistantMessageId,
  mapSessionEvents,
  SessionEventMapper,
  userMessageId,
  type SessionEventMapperOptions,
} from "./mapper.js";
export type {
  CallFacts,
  CallFactsLookup,
  AttentionNotice,
  DurableDataTypes,
  DurableMessageMetadata,
  DurableToolMetadata,
  DurableTurnStatus,
  DurableUIChunk,
  DurableUIMessage,
  TimelineStep,
  TimelineStepKind,
} from "./types.js";

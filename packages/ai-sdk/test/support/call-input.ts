import type { CallToolInput } from "@durable-agents/core/engine";

/** A `callTool` input for call "c" of session "s", turn "t", first attempt. */
export const callInput = (name: string, args = "{}"): CallToolInput => ({
  sessionId: "s",
  turnId: "t",
  toolCallId: "c",
  name,
  arguments: args,
  attempt: 1,
  idempotencyKey: "s/t/c",
  signal: new AbortController().signal,
});

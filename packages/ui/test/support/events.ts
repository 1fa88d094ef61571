/** Hand-written session events for the mapping tests, and a one-line summary of a chunk. */
import type { EventBody, SessionEvent } from "@durable-agents/core";
import type { DurableUIChunk } from "../../src/index.js";

/** Builds a session's events in order: each gets the next seq and a time 10 ms after the one before. */
export function eventLog(start = Date.parse("2026-12-01T10:00:00.000Z")) {
  const events: SessionEvent[] = [];
  const add = (body: EventBody): SessionEvent => {
    const seq = events.length + 1;
    const event = { ...body, seq, at: new Date(start + seq * 10).toISOString() } as SessionEvent;
    events.push(event);
    return event;
  };
  return { events, add };
}

/** `type` and what identifies the chunk: enough to compare chunk lists exactly and readably. */
export function summary(chunk: DurableUIChunk): string {
  switch (chunk.type) {
    case "start":
      return `start ${chunk.messageId ?? "-"}${chunk.messageMetadata ? ` ${JSON.stringify(chunk.messageMetadata)}` : ""}`;
    case "text-start":
    case "text-end":
    case "reasoning-start":
    case "reasoning-end":
      return `${chunk.type} ${chunk.id}`;
    case "text-delta":
    case "reasoning-delta":
      return `${chunk.type} ${chunk.id} ${JSON.stringify(chunk.delta)}`;
    case "tool-input-available":
      return `tool-input-available ${chunk.toolCallId} ${chunk.toolName} ${JSON.stringify(chunk.input)} ${JSON.stringify(chunk.toolMetadata)}`;
    case "tool-output-available":
      return `tool-output-available ${chunk.toolCallId} ${JSON.stringify(chunk.output)} ${String(chunk.toolMetadata?.status)}`;
    case "tool-output-error":
      return `tool-output-error ${chunk.toolCallId} ${JSON.stringify(chunk.errorText)} ${String(chunk.toolMetadata?.status)}`;
    case "tool-output-denied":
      return `tool-output-denied ${chunk.toolCallId}`;
    case "tool-approval-request":
      return `tool-approval-request ${chunk.approvalId} ${chunk.toolCallId}`;
    case "tool-approval-response":
      return `tool-approval-response ${chunk.approvalId} ${chunk.approved}${chunk.reason ? ` ${JSON.stringify(chunk.reason)}` : ""}`;
    case "steering-message":
      return `steering-message ${chunk.id} ${JSON.stringify(chunk.parts)}`;
    case "message-metadata":
      return `message-metadata ${JSON.stringify(chunk.messageMetadata)}`;
    case "finish":
      return `finish ${chunk.finishReason}${chunk.messageMetadata ? ` ${JSON.stringify(chunk.messageMetadata)}` : ""}`;
    case "data-step": {
      const d = chunk.data;
      const extra = [
        d.toolName,
        d.detail,
        d.effect === undefined ? undefined : `effect=${d.effect}`,
        d.outcome === undefined ? undefined : `outcome=${d.outcome}`,
        d.durationMs === undefined ? undefined : `${d.durationMs}ms`,
      ].filter((x) => x !== undefined);
      return `data-step ${chunk.id} ${d.kind} ${d.status} attempt=${d.attempts}${extra.length ? ` ${extra.join(" ")}` : ""}`;
    }
    default:
      return chunk.type;
  }
}

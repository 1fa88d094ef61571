/**
 * The part of core's `SessionClient` this example uses. The server and the terminal demo depend on
 * this shape only, so they can be given any client that has it (core's `SessionClient` does).
 */
import type { AttentionResolution, SessionEvent, SessionSnapshot } from "@durable-agents/core";

export interface OrderSupportClient {
  startSession(input: {
    agent: string;
    sessionId?: string;
    message?: string;
    messageId?: string;
  }): Promise<{ sessionId: string }>;
  sendMessage(
    sessionId: string,
    text: string,
    options?: { messageId?: string },
  ): Promise<{ seq: number; duplicate: boolean }>;
  /** Cancels the running turn (or the one an accepted message is about to start); `session_state` when none runs. */
  cancelTurn(
    sessionId: string,
    options?: { reason?: string; requestId?: string; turnId?: string },
  ): Promise<{ seq: number; duplicate: boolean; turnId: string }>;
  /** A message for the running turn (it joins before the turn's next model step), or a new turn's on an idle session. */
  steer(
    sessionId: string,
    text: string,
    options?: { messageId?: string },
  ): Promise<{ seq: number; duplicate: boolean }>;
  resolveInterrupt(
    sessionId: string,
    input: { interruptId: string; approved: boolean; message?: string | null },
  ): Promise<{ seq: number }>;
  /** Resolves an attention interrupt (a call whose outcome is unknown): done with a text, not done, or unknown. */
  resolveAttention(sessionId: string, interruptId: string, resolution: AttentionResolution): Promise<{ seq: number }>;
  snapshot(sessionId: string): Promise<SessionSnapshot>;
  readEvents(sessionId: string, options?: { after?: number; limit?: number }): Promise<SessionEvent[]>;
  followEvents(sessionId: string, options?: { after?: number; signal?: AbortSignal }): AsyncIterable<SessionEvent>;
}

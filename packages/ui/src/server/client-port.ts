/**
 * The part of core's `SessionClient` the server side of this package uses: core's `SessionClient`
 * has it all; any client with these methods (one that adds logging, say) will do.
 */
import type { SessionEvent, SessionSnapshot, ToolEffect } from "@durable-agents/core";

export interface UISessionClient {
  snapshot(sessionId: string): Promise<SessionSnapshot>;
  readEvents(sessionId: string, options?: { after?: number; limit?: number }): Promise<SessionEvent[]>;
  followEvents(sessionId: string, options?: { after?: number; signal?: AbortSignal }): AsyncIterable<SessionEvent>;
  sendMessage(
    sessionId: string,
    text: string,
    options?: { messageId?: string },
  ): Promise<{ seq: number; duplicate: boolean }>;
  resolveInterrupt(
    sessionId: string,
    input: { interruptId: string; approved: boolean; message?: string | null },
  ): Promise<{ seq: number }>;
  /** Without it, the cancel route answers 501. */
  cancelTurn?(
    sessionId: string,
    options?: { reason?: string; requestId?: string },
  ): Promise<{ seq: number; duplicate: boolean; turnId: string }>;
}

/** The application's tool policies (what `defineSession` got): where a call's effect is not in the snapshot. */
export type UIToolPolicies = Readonly<
  Record<string, { readonly effect: ToolEffect; readonly needsApproval?: boolean }>
>;

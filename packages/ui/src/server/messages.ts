/**
 * A session's conversation as `UIMessage[]`, rebuilt from its snapshot and its recorded history
 * (the event log up to the snapshot): what a page opened later shows, and the stream position to
 * continue from.
 */
import type { SessionStatus } from "@durable-agents/core";
import { readUIMessageStream } from "ai";
import { assistantMessageId, SessionEventMapper, userMessageId } from "../mapper.js";
import type { DurableUIChunk, DurableUIMessage } from "../types.js";
import type { UISessionClient, UIToolPolicies } from "./client-port.js";
import { CallFactsCache, foldEvents, waitsForApproval } from "./stream.js";

export interface SessionUIMessages {
  readonly sessionId: string;
  /** One user message and (once it has any part) one assistant message per turn. */
  readonly messages: DurableUIMessage[];
  /**
   * Where a stream continues these messages (`reconnectToStream`). For a turn that is running, it is
   * a position the chat can continue from: before the turn's assistant message (which the stream
   * then brings whole), or right after its latest approval decision.
   */
  readonly cursor: string;
  readonly status: SessionStatus;
  /** The turn that is running or waiting for approval, if any. */
  readonly openTurnId: string | null;
  readonly lastEventSeq: number;
}

interface TurnRecord {
  readonly turnId: string;
  readonly userText: string;
  readonly startSeq: number;
  readonly chunks: { seq: number; chunk: DurableUIChunk }[];
  /** The last `interrupt_resolved` of the turn. */
  lastDecisionSeq: number | null;
}

export async function loadSessionUIMessages(
  client: UISessionClient,
  sessionId: string,
  options: { readonly policies?: UIToolPolicies } = {},
): Promise<SessionUIMessages> {
  const snapshot = await client.snapshot(sessionId);
  const facts = new CallFactsCache(options.policies);
  facts.learn(snapshot.turn);
  const mapper = new SessionEventMapper({ sessionId, callFacts: facts.lookup });
  const turns: TurnRecord[] = [];
  await foldEvents(client, sessionId, mapper, snapshot.lastEventSeq, (event, chunks) => {
    if (event.type === "turn_started") {
      turns.push({
        turnId: event.data.turnId,
        userText: event.data.text,
        startSeq: event.seq,
        chunks: [],
        lastDecisionSeq: null,
      });
    }
    const turn = turns.at(-1);
    if (!turn || chunks.length === 0) return;
    for (const chunk of chunks) turn.chunks.push({ seq: event.seq, chunk });
    if (event.type === "interrupt_resolved") turn.lastDecisionSeq = event.seq;
  });

  let cursor = snapshot.lastEventSeq;
  const open = mapper.openTurnId === null ? null : turns.at(-1);
  if (open && !waitsForApproval(snapshot, mapper, snapshot.lastEventSeq)) {
    // A running turn: cut its message where a chat can pick it up again with the stream.
    cursor = open.lastDecisionSeq ?? open.startSeq - 1;
    const cut = open.chunks.findIndex((c) => c.seq > cursor);
    if (cut >= 0) open.chunks.splice(cut);
  }

  const messages: DurableUIMessage[] = [];
  for (const turn of turns) {
    messages.push({ id: userMessageId(turn.turnId), role: "user", parts: [{ type: "text", text: turn.userText }] });
    if (turn.chunks.length === 0) continue;
    const assistant = await assemble(turn.chunks.map((c) => c.chunk));
    if (assistant) messages.push({ ...assistant, id: assistantMessageId(turn.turnId) });
  }
  return {
    sessionId,
    messages,
    cursor: String(cursor),
    status: snapshot.status,
    openTurnId: mapper.openTurnId,
    lastEventSeq: snapshot.lastEventSeq,
  };
}

/** The message the AI SDK builds from these chunks (its own stream reader, as `useChat` would). */
async function assemble(chunks: DurableUIChunk[]): Promise<DurableUIMessage | undefined> {
  const stream = new ReadableStream<DurableUIChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: DurableUIMessage | undefined;
  for await (const message of readUIMessageStream<DurableUIMessage>({
    stream,
    terminateOnError: true,
  })) {
    last = message;
  }
  return last;
}

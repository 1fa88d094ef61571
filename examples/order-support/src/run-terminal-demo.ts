/**
 * Runs a conversation in the terminal: starts a session with the first message (or resumes one an
 * earlier process started), follows its events (rendered as compact progress), settles each
 * approval with the given decider, sends the next message when a turn ends, and prints each turn's
 * answer.
 *
 * Every message goes with a message ID (`message-<n>`, the turn's number), so sending one again
 * after a crash is accepted once: a resumed run re-sends the message of the turn it stands at
 * without knowing whether the crashed process got that far.
 *
 * A `TurnCanceller` lets the caller cancel the running turn (the demo's Ctrl-C): the cancellation
 * goes to the client with a request ID of its own, an approval question of that turn is no longer
 * asked, and the turn ends with core's `turn_cancelled` event, whose receipt the renderer prints.
 * The conversation then goes on with its next message.
 */
import { randomUUID } from "node:crypto";
import { DurableAgentsError, type Interrupt, type SessionEvent, type SessionSnapshot } from "@durable-agents/core";
import type { ApprovalDecider } from "./approval-deciders.js";
import type { ProgressRenderer } from "./progress-renderer.js";
import type { OrderSupportClient } from "./session-client-port.js";

/** The receipt of a cancelled turn: its calls with their final status (core's `turn_cancelled` event). */
export type TurnReceipt = Extract<SessionEvent, { type: "turn_cancelled" }>["data"];

export type TurnResult =
  | { readonly status: "completed"; readonly answer: string }
  | { readonly status: "failed"; readonly error: string }
  | { readonly status: "cancelled"; readonly receipt: TurnReceipt };

/**
 * How a caller cancels the turn a running `runTerminalDemo` follows (the demo's Ctrl-C). Before the
 * demo follows a session, and after it stopped, there is nothing to cancel.
 */
export class TurnCanceller {
  #target: ((reason: string) => Promise<string | null>) | null = null;

  /**
   * Asks the client to cancel the session's running turn (or the one its last message is about to
   * start). Resolves with that turn's ID once the cancellation is accepted (the turn ends with a
   * `turn_cancelled` event a moment later), or null when no turn runs.
   */
  cancel(reason: string): Promise<string | null> {
    return this.#target ? this.#target(reason) : Promise.resolve(null);
  }

  /** Used by `runTerminalDemo` while it follows a session; returns the detach function. */
  attach(target: (reason: string) => Promise<string | null>): () => void {
    this.#target = target;
    return () => {
      if (this.#target === target) this.#target = null;
    };
  }
}

export interface TerminalDemoOptions {
  readonly client: OrderSupportClient;
  readonly agent: string;
  /** The user messages, one turn each, in order. At least one. */
  readonly messages: readonly string[];
  readonly decide: ApprovalDecider;
  readonly renderer: ProgressRenderer;
  /** Aborts the demo (a timeout, Ctrl-C). */
  readonly signal?: AbortSignal;
  /**
   * Continue this session (read with `readDemoSessionProgress`; `messages` must be its
   * conversation) instead of starting one.
   */
  readonly resume?: DemoSessionProgress;
  /** The new session's ID, before the session is created (default: a random UUID). */
  readonly sessionId?: string;
  /** Lets the caller cancel the running turn (see `TurnCanceller`). */
  readonly canceller?: TurnCanceller;
}

export interface TerminalDemoResult {
  readonly sessionId: string;
  /** One entry per turn: its answer, or its failure. */
  readonly turns: readonly TurnResult[];
}

/** Where a session stands: its snapshot, every event up to it, and the turns that ended. */
export interface DemoSessionProgress {
  readonly sessionId: string;
  readonly snapshot: SessionSnapshot;
  /** Every event up to `snapshot.lastEventSeq`. */
  readonly events: readonly SessionEvent[];
  readonly turns: readonly TurnResult[];
  /** The user message of each turn that started, in order. */
  readonly started: readonly string[];
}

export async function readDemoSessionProgress(
  client: OrderSupportClient,
  sessionId: string,
): Promise<DemoSessionProgress> {
  const snapshot = await client.snapshot(sessionId);
  const events: SessionEvent[] = [];
  while ((events.at(-1)?.seq ?? 0) < snapshot.lastEventSeq) {
    const page = await client.readEvents(sessionId, { after: events.at(-1)?.seq ?? 0, limit: 1000 });
    if (page.length === 0) break;
    events.push(...page.filter((event) => event.seq <= snapshot.lastEventSeq));
  }
  const turns: TurnResult[] = [];
  const started: string[] = [];
  for (const event of events) {
    if (event.type === "turn_started") started.push(event.data.text);
    else if (event.type === "turn_completed") turns.push({ status: "completed", answer: event.data.text });
    else if (event.type === "turn_failed") turns.push({ status: "failed", error: event.data.error });
    else if (event.type === "turn_cancelled") turns.push({ status: "cancelled", receipt: event.data });
  }
  return { sessionId, snapshot, events, turns, started };
}

/** What a session is waiting for, in words: "waiting for your approval of cancel_order {...}". */
export function describeProgress(progress: DemoSessionProgress, conversationLength: number): string {
  const { snapshot } = progress;
  // Attention interrupts (a call whose outcome is unknown) wait for nobody here: only approvals do.
  const pending = snapshot.pendingInterrupts.find((interrupt) => interrupt.kind !== "attention");
  if (pending !== undefined && snapshot.unappliedDecisions === 0) {
    return `waiting for your approval of ${pending.toolName} ${pending.arguments}`;
  }
  if (snapshot.status === "running") return `it stopped during turn ${progress.started.length}; continuing it`;
  if (progress.turns.length >= conversationLength) return "its conversation is complete";
  return `continuing with turn ${progress.turns.length + 1} of ${conversationLength}`;
}

const messageId = (index: number) => `message-${index + 1}`;

export async function runTerminalDemo(options: TerminalDemoOptions): Promise<TerminalDemoResult> {
  const { client, renderer, messages, resume } = options;
  const first = messages[0];
  if (first === undefined) throw new RangeError("the demo needs at least one message");
  options.signal?.throwIfAborted();

  let sessionId: string;
  let after = 0;
  const turns: TurnResult[] = [];
  /** Turns this demo asked to cancel, and the approval question being asked, if any. */
  const cancelled = new Set<string>();
  let question: { readonly turnId: string; readonly abort: AbortController } | null = null;
  const settle = async (interrupt: Interrupt) => {
    renderer.settle();
    // Asked to cancel the turn already: its calls will never run, so nobody is asked.
    if (cancelled.has(interrupt.turnId)) return;
    const asked = { turnId: interrupt.turnId, abort: new AbortController() };
    question = asked;
    let decision;
    try {
      decision = await options.decide(
        interrupt,
        options.signal ? AbortSignal.any([options.signal, asked.abort.signal]) : asked.abort.signal,
      );
    } catch (error) {
      if (!asked.abort.signal.aborted || options.signal?.aborted) throw error;
      renderer.line(`    ? ${interrupt.toolName} is not asked about any more: the turn is being cancelled`);
      return;
    } finally {
      if (question === asked) question = null;
    }
    renderer.line(
      `    ? ${interrupt.toolName} needs approval: ${decision.how}${decision.message ? ` ("${decision.message}")` : ""}`,
    );
    try {
      await client.resolveInterrupt(sessionId, {
        interruptId: interrupt.interruptId,
        approved: decision.approved,
        message: decision.message,
      });
    } catch (error) {
      if (!DurableAgentsError.isInstance(error)) throw error;
      // Someone else (another client of the same store) may have decided first, or cancelled the turn.
      if (error.code === "duplicate_resolution") renderer.line(`    (already decided elsewhere)`);
      else if (error.code === "session_state") renderer.line(`    (the turn was cancelled: the decision was not sent)`);
      else throw error;
    }
  };
  const cancelTurn = async (reason: string): Promise<string | null> => {
    let result;
    try {
      // A request ID of its own: a retried request would not cancel twice.
      result = await client.cancelTurn(sessionId, { reason, requestId: `demo-cancel-${randomUUID()}` });
    } catch (error) {
      if (DurableAgentsError.isInstance(error) && error.code === "session_state") return null;
      throw error;
    }
    cancelled.add(result.turnId);
    if (question?.turnId === result.turnId) {
      // The question's prompt is still open on its line: what follows starts on a line of its own.
      renderer.line("");
      question.abort.abort(new Error("the turn is being cancelled"));
    }
    return result.turnId;
  };

  let detach: (() => void) | undefined;
  try {
    if (resume) {
      sessionId = resume.sessionId;
      detach = options.canceller?.attach(cancelTurn);
      renderer.replay(resume.events);
      // What the earlier run showed, in short.
      resume.started.forEach((text, i) => {
        renderer.line(`  › ${text}`);
        const turn = resume.turns[i];
        if (turn?.status === "completed") renderer.line(`  ◆ answer: ${turn.answer}`);
        else if (turn?.status === "failed") renderer.line(`  ✗ turn failed: ${turn.error}`);
        else if (turn?.status === "cancelled") renderer.line("  ■ turn cancelled");
      });
      turns.push(...resume.turns);
      after = resume.snapshot.lastEventSeq;
      if (turns.length >= messages.length) return { sessionId, turns };
      if (resume.snapshot.unappliedDecisions === 0) {
        for (const interrupt of resume.snapshot.pendingInterrupts)
          if (interrupt.kind !== "attention") await settle(interrupt);
      }
      // The message of the turn the session stands at; a duplicate when the earlier run sent it.
      await client.sendMessage(sessionId, messages[turns.length]!, { messageId: messageId(turns.length) });
    } else {
      sessionId = options.sessionId ?? randomUUID();
      await client.startSession({ agent: options.agent, sessionId, message: first, messageId: messageId(0) });
      detach = options.canceller?.attach(cancelTurn);
      renderer.line(`session ${sessionId}`);
    }
    await follow(sessionId);
  } finally {
    detach?.();
  }
  options.signal?.throwIfAborted();
  if (turns.length < messages.length) {
    throw new Error(`the demo stopped after ${turns.length} of ${messages.length} turns`);
  }
  return { sessionId, turns };

  /** Follows the events from `after`: settles approvals, sends the next message when a turn ends. */
  async function follow(id: string): Promise<void> {
    let next = turns.length + 1;
    const following = new AbortController();
    const stopFollowing = () => following.abort();
    options.signal?.addEventListener("abort", stopFollowing, { once: true });
    try {
      for await (const event of client.followEvents(id, { after, signal: following.signal })) {
        renderer.handle(event);
        if (event.type === "interrupt_created") {
          await settle(event.data.interrupt);
        } else if (event.type === "turn_completed" || event.type === "turn_failed" || event.type === "turn_cancelled") {
          if (event.type === "turn_completed") {
            turns.push({ status: "completed", answer: event.data.text });
            renderer.line(`  ◆ answer: ${event.data.text}`);
          } else if (event.type === "turn_failed") {
            turns.push({ status: "failed", error: event.data.error });
          } else {
            turns.push({ status: "cancelled", receipt: event.data });
          }
          const message = messages[next];
          if (message === undefined) break;
          await client.sendMessage(id, message, { messageId: messageId(next) });
          next += 1;
        }
      }
    } finally {
      options.signal?.removeEventListener("abort", stopFollowing);
      following.abort();
    }
  }
}

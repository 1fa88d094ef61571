/**
 * The client: start sessions, send messages, approve or reject interrupts, read snapshots and
 * events. Every call validates its input first and throws a typed error that changes nothing.
 */
import { randomUUID } from "node:crypto";
import {
  DuplicateResolutionError,
  InputTooLargeError,
  InterruptNotFoundError,
  InvalidInputError,
  SessionNotFoundError,
  SessionStateError,
  UnknownAgentError,
  WaitTimeoutError,
} from "./errors.js";
import type { SessionDefinition } from "./definition.js";
import { isTurnActive, newSessionHead } from "./machine.js";
import type { EventBody, InboxEntry, SessionEvent, SessionHead, SessionSnapshot, StepKind } from "./schemas.js";
import type { EnqueueResult, SessionStore, StoredSession } from "./store.js";
import { loadStoredSession } from "./stored-session.js";

export interface ClientLimits {
  /** Longest accepted message or rejection message, in characters. Default 32,768. */
  readonly maxMessageChars: number;
}

export interface SessionClientOptions {
  readonly store: SessionStore;
  /** When given, `startSession` refuses other agent names with `UnknownAgentError`. */
  readonly agents?: readonly string[];
  /**
   * The definitions this client starts sessions of: a session it starts is pinned to its
   * definition's fingerprint at once (without one, the first worker that drives it pins it). Their
   * names are known agents, along with `agents`; when either is given, `startSession` refuses other
   * names. Two definitions of one name: the first one listed pins.
   */
  readonly sessions?: readonly SessionDefinition[];
  readonly limits?: Partial<ClientLimits>;
}

/**
 * A person's answer to an attention interrupt: the call took effect (`output` is what the model is
 * told, as if the call had returned it), it did not, or its outcome stays unknown.
 */
export type AttentionResolution =
  | { readonly outcome: "done"; readonly output: string }
  | { readonly outcome: "not_done" }
  | { readonly outcome: "unknown" };

/** What `cancelTurn` answers: the inbox entry that carries the cancellation and the turn it names. */
export interface CancelResult extends EnqueueResult {
  readonly turnId: string;
}

export interface StepLogEntry {
  readonly seq: number;
  readonly turnId: string;
  readonly step: StepKind;
  readonly toolCallId?: string;
  readonly status: "completed" | "failed";
  readonly detail?: string;
}

const sessionIdPattern = /^[A-Za-z0-9._:-]{1,200}$/;
const messageIdPattern = /^[A-Za-z0-9._:-]{1,200}$/;

export class SessionClient {
  private readonly store: SessionStore;
  private readonly limits: ClientLimits;
  private readonly agents: ReadonlySet<string> | null;
  private readonly definitions = new Map<string, SessionDefinition>();

  constructor(options: SessionClientOptions) {
    this.store = options.store;
    this.limits = { maxMessageChars: 32_768, ...options.limits };
    for (const definition of options.sessions ?? []) {
      if (!this.definitions.has(definition.name)) this.definitions.set(definition.name, definition);
    }
    this.agents =
      options.agents || options.sessions ? new Set([...(options.agents ?? []), ...this.definitions.keys()]) : null;
  }

  /** Creates a session, optionally with its first message. Throws `SessionStateError` if the ID is taken. */
  async startSession(input: {
    agent: string;
    sessionId?: string;
    message?: string;
    messageId?: string;
  }): Promise<{ sessionId: string }> {
    if (typeof input !== "object" || input === null) throw new InvalidInputError("startSession needs an object");
    if (typeof input.agent !== "string" || input.agent.length === 0)
      throw new InvalidInputError("agent must be a non-empty string");
    if (this.agents && !this.agents.has(input.agent)) throw new UnknownAgentError(input.agent);
    const sessionId = input.sessionId ?? randomUUID();
    checkSessionId(sessionId);
    if (input.message !== undefined) this.checkText("message", input.message);
    const messageId = checkMessageId(input.messageId);
    const definition = this.definitions.get(input.agent);
    const head: SessionHead = {
      ...newSessionHead(sessionId, input.agent, new Date().toISOString()),
      definition: definition ? { fingerprint: definition.fingerprint, waiting: null } : null,
    };
    const events: EventBody[] = [{ type: "session_created", data: { agent: input.agent } }];
    if (definition) {
      events.push({
        type: "definition_pinned",
        data: { fingerprint: definition.fingerprint, by: "client", description: definition.description },
      });
    }
    await this.store.createSession({
      head,
      events,
      ...(input.message !== undefined
        ? {
            inbox: {
              entry: { kind: "message", text: input.message, messageId },
              dedupeKey: messageDedupeKey(messageId),
            },
          }
        : {}),
    });
    return { sessionId };
  }

  /**
   * Queues a user message: it starts a turn now, or the next turn after those before it. With a
   * `messageId`, sending the same message again is accepted once (`duplicate: true` the second time).
   */
  async sendMessage(sessionId: string, text: string, options: { messageId?: string } = {}): Promise<EnqueueResult> {
    checkSessionId(sessionId);
    this.checkText("message", text);
    const messageId = checkMessageId(options?.messageId);
    const entry: InboxEntry = { kind: "message", text, messageId };
    return this.store.enqueue(sessionId, entry, messageDedupeKey(messageId));
  }

  /**
   * Cancels the running turn (or the turn an accepted message is about to start). The cancellation
   * is stored in the session's inbox and applied by the worker; this answers at once. With a
   * `requestId`, asking again is accepted once (`duplicate: true` after that, even once the turn
   * ended). With a `turnId`, only that turn is cancelled: a caller that saw a turn running does not
   * cancel the next one when the one it saw ended meanwhile. Throws `SessionStateError` when no turn
   * runs or is about to start, or it is not `turnId`; nothing is written then.
   */
  async cancelTurn(
    sessionId: string,
    options: { reason?: string; requestId?: string; turnId?: string } = {},
  ): Promise<CancelResult> {
    checkSessionId(sessionId);
    if (typeof options !== "object" || options === null)
      throw new InvalidInputError("cancelTurn's options are an object");
    const reason = options.reason ?? null;
    if (reason !== null) this.checkText("cancellation reason", reason);
    const requestId = checkMessageId(options.requestId, "request ID");
    const wanted = options.turnId === undefined ? null : checkMessageId(options.turnId, "turn ID");
    const stored = await this.load(sessionId);
    const inbox = await this.store.readInbox(sessionId, 0);
    if (requestId !== null) {
      const earlier = inbox.find((e) => e.kind === "cancel" && e.requestId === requestId);
      if (earlier?.kind === "cancel") return { seq: earlier.seq, duplicate: true, turnId: earlier.turnId };
    }
    const { head } = stored;
    let turnId: string | null = null;
    if (isTurnActive(head.turn)) turnId = head.turn.turnId;
    else if (inbox.some((e) => e.seq > head.inboxCursor && (e.kind === "message" || e.kind === "steer"))) {
      // A message was accepted and its turn has not started yet: the cancellation is for that turn.
      turnId = `turn-${head.turnCount + 1}`;
    }
    if (turnId === null) throw new SessionStateError(`session "${sessionId}" has no running turn to cancel`);
    if (wanted !== null && wanted !== turnId) {
      throw new SessionStateError(
        `turn "${wanted}" of session "${sessionId}" is not running (the running turn is ${turnId})`,
      );
    }
    const result = await this.store.enqueue(
      sessionId,
      { kind: "cancel", turnId, reason, requestId },
      requestId === null ? null : `cancel:${requestId}`,
    );
    return { ...result, turnId };
  }

  /**
   * Adds a message to the running turn: it joins the turn before its next RunModel step (after the
   * calls of the current step are final). On a session with no running turn it starts a turn, as
   * `sendMessage` does. With a `messageId`, sending it again is accepted once (shared with `sendMessage`).
   */
  async steer(sessionId: string, text: string, options: { messageId?: string } = {}): Promise<EnqueueResult> {
    checkSessionId(sessionId);
    this.checkText("message", text);
    const messageId = checkMessageId(options?.messageId);
    return this.store.enqueue(sessionId, { kind: "steer", text, messageId }, messageDedupeKey(messageId));
  }

  /** Approves or rejects a pending interrupt; a rejection's message reaches the model. */
  async resolveInterrupt(
    sessionId: string,
    input: { interruptId: string; approved: boolean; message?: string | null },
  ): Promise<{ seq: number }> {
    checkSessionId(sessionId);
    if (typeof input !== "object" || input === null) throw new InvalidInputError("a resolution needs an object");
    if (typeof input.interruptId !== "string" || input.interruptId.length === 0 || input.interruptId.length > 200) {
      throw new InvalidInputError("interruptId must be a non-empty string");
    }
    if (typeof input.approved !== "boolean") throw new InvalidInputError("approved must be a boolean");
    const message = input.message ?? null;
    if (message !== null) {
      if (input.approved) throw new InvalidInputError("a message goes with a rejection, not an approval");
      this.checkText("rejection message", message);
    }
    const stored = await this.load(sessionId);
    const { head } = stored;
    const dedupeKey = `resolution:${input.interruptId}`;
    const pending = head.pendingInterrupts.find((i) => i.interruptId === input.interruptId);
    if (pending?.kind === "attention" || (!pending && (await this.isAttention(sessionId, input.interruptId)))) {
      throw new SessionStateError(
        `interrupt "${input.interruptId}" of session "${sessionId}" is an attention interrupt: resolve it with resolveAttention`,
      );
    }
    const interrupt = pending;
    // A pending interrupt's decisions and cancellation can only be in the inbox's unapplied part.
    const inbox = await this.store.readInbox(sessionId, interrupt ? head.inboxCursor : 0);
    const call = head.turn?.calls.find((c) => c.interruptId === input.interruptId);
    const decided =
      inbox.some((e) => e.kind === "resolution" && e.interruptId === input.interruptId) ||
      (call !== undefined && call.status !== "awaiting_approval" && call.status !== "cancelled" && !interrupt);
    if (decided) throw new DuplicateResolutionError(sessionId, input.interruptId);
    // Interrupt IDs start with their turn's ID (`turn-<n>-…`): an interrupt no longer pending names its turn.
    const turnId = interrupt?.turnId ?? /^(turn-\d+)-/.exec(input.interruptId)?.[1];
    const cancelled =
      call?.status === "cancelled" ||
      inbox.some(
        (e) => e.kind === "cancel" && e.turnId === turnId && (interrupt !== undefined || e.seq <= head.inboxCursor),
      );
    if (cancelled) {
      throw new SessionStateError(
        `interrupt "${input.interruptId}" of session "${sessionId}" belongs to a cancelled turn: its call will never run`,
      );
    }
    if (!interrupt) throw new InterruptNotFoundError(sessionId, input.interruptId);
    const result = await this.store.enqueue(
      sessionId,
      { kind: "resolution", interruptId: input.interruptId, approved: input.approved, message },
      dedupeKey,
    );
    if (result.duplicate) throw new DuplicateResolutionError(sessionId, input.interruptId);
    return { seq: result.seq };
  }

  /**
   * Resolves an attention interrupt (a call whose outcome is unknown): `done` with the text the model
   * is told, `not_done` (the call runs again with its key: an `idempotent_write` at once, a
   * single-attempt call after a new approval; not at all when its turn was cancelled), or `unknown`.
   * `done` and `not_done` start a follow-up turn that tells the model. Throws
   * `InterruptNotFoundError`, `DuplicateResolutionError` (resolved already, or queued),
   * `SessionStateError` (the interrupt is an approval), `InvalidInputError`, `InputTooLargeError`.
   */
  async resolveAttention(
    sessionId: string,
    interruptId: string,
    resolution: AttentionResolution,
  ): Promise<{ seq: number }> {
    checkSessionId(sessionId);
    if (typeof interruptId !== "string" || interruptId.length === 0 || interruptId.length > 300) {
      throw new InvalidInputError("interruptId must be a non-empty string");
    }
    if (typeof resolution !== "object" || resolution === null)
      throw new InvalidInputError("an attention resolution needs an object");
    const { outcome } = resolution as { outcome?: unknown };
    if (outcome !== "done" && outcome !== "not_done" && outcome !== "unknown") {
      throw new InvalidInputError('outcome must be "done", "not_done" or "unknown"');
    }
    const output = (resolution as { output?: unknown }).output;
    if (outcome === "done") this.checkText("output", output);
    else if (output !== undefined) throw new InvalidInputError(`an output goes with "done", not "${outcome}"`);
    const stored = await this.load(sessionId);
    const interrupt = stored.head.pendingInterrupts.find((i) => i.interruptId === interruptId);
    if (interrupt && interrupt.kind !== "attention") {
      throw new SessionStateError(
        `interrupt "${interruptId}" of session "${sessionId}" is an approval: approve or reject it with resolveInterrupt`,
      );
    }
    const dedupeKey = `attention:${interruptId}`;
    if (!interrupt) {
      if (await this.isAttention(sessionId, interruptId)) throw new DuplicateResolutionError(sessionId, interruptId);
      throw new InterruptNotFoundError(sessionId, interruptId);
    }
    const result = await this.store.enqueue(
      sessionId,
      { kind: "attention", interruptId, outcome, output: outcome === "done" ? (output as string) : null },
      dedupeKey,
    );
    if (result.duplicate) throw new DuplicateResolutionError(sessionId, interruptId);
    return { seq: result.seq };
  }

  /** Whether the session's inbox holds a resolution of this attention interrupt (it was resolved, or is about to be). */
  private async isAttention(sessionId: string, interruptId: string): Promise<boolean> {
    const inbox = await this.store.readInbox(sessionId, 0);
    return inbox.some((e) => e.kind === "attention" && e.interruptId === interruptId);
  }

  approve(sessionId: string, interruptId: string): Promise<{ seq: number }> {
    return this.resolveInterrupt(sessionId, { interruptId, approved: true });
  }

  reject(sessionId: string, interruptId: string, message?: string): Promise<{ seq: number }> {
    return this.resolveInterrupt(sessionId, { interruptId, approved: false, message: message ?? null });
  }

  async snapshot(sessionId: string): Promise<SessionSnapshot> {
    checkSessionId(sessionId);
    const stored = await this.load(sessionId);
    const [history, inbox] = await Promise.all([
      this.store.readHistory(sessionId),
      this.store.readInbox(sessionId, stored.head.inboxCursor),
    ]);
    const { head } = stored;
    return {
      sessionId,
      agent: head.agent,
      status: head.status,
      turnCount: head.turnCount,
      messages: history.map((item) => item.display),
      turn: head.turn,
      pendingInterrupts: head.pendingInterrupts,
      queuedMessages:
        head.queue.length + inbox.filter((item) => item.kind === "message" || item.kind === "steer").length,
      unappliedDecisions: inbox.filter(isDecision).length,
      usage: head.usage,
      definition: head.definition,
      version: stored.version,
      lastEventSeq: stored.lastEventSeq,
    };
  }

  /** Events after `after` (a sequence number), in order. */
  async readEvents(sessionId: string, options: { after?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    checkSessionId(sessionId);
    const after = options.after ?? 0;
    const limit = options.limit ?? 1000;
    if (!Number.isInteger(after) || after < 0) throw new InvalidInputError("after must be a non-negative integer");
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      throw new InvalidInputError("limit must be an integer from 1 to 10,000");
    await this.load(sessionId);
    return this.store.readEvents(sessionId, after, limit);
  }

  /**
   * Every event after `after`, then new ones as they arrive, until `signal` aborts. A store's
   * notice that carries the events it read (`StoreNotification.events`) is used without a read
   * when it reaches the cursor; any other notice, or none within a second, leads to a read.
   */
  async *followEvents(
    sessionId: string,
    options: { after?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<SessionEvent> {
    let after = options.after ?? 0;
    const signal = options.signal;
    checkSessionId(sessionId);
    if (!Number.isInteger(after) || after < 0) throw new InvalidInputError("after must be a non-negative integer");
    await this.load(sessionId);
    const limit = 1000;
    // Subscribed for the whole follow: a notice that arrives while a batch is read or consumed is kept.
    const kept: { notice: { events: readonly SessionEvent[] | null } | null } = { notice: null };
    let wake: (() => void) | null = null;
    const unsubscribe = this.store.subscribe((n) => {
      if (n.kind !== "events" || n.sessionId !== sessionId) return;
      const before = kept.notice;
      kept.notice = { events: mergeCarried(before?.events ?? null, before !== null, n.events ?? null) };
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener("abort", onAbort);
    try {
      let fresh = true;
      while (!signal?.aborted) {
        const carried: readonly SessionEvent[] | null = fresh ? null : (kept.notice?.events ?? null);
        kept.notice = null;
        fresh = false;
        const events =
          carried !== null && carried.length > 0 && carried[0]!.seq <= after + 1
            ? carried.filter((event) => event.seq > after)
            : await this.store.readEvents(sessionId, after, limit);
        for (const event of events) {
          if (signal?.aborted) return;
          after = event.seq;
          yield event;
        }
        if (events.length >= limit || kept.notice !== null) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            wake = null;
            resolve();
          }, 1000);
          wake = () => {
            clearTimeout(timer);
            wake = null;
            resolve();
          };
          if (signal?.aborted) wake();
        });
        // Woken by the timer: read, whatever the store said.
        if (kept.notice === null) fresh = true;
      }
    } finally {
      unsubscribe();
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Waits until the session has nothing to do without a person: idle with nothing queued, waiting
   * for approval, or waiting for its definition (`waiting_for_definition`: an operator must deploy a
   * worker that serves it, or a migration). Throws `WaitTimeoutError` after `timeoutMs` (default 60 s).
   */
  async waitUntilIdle(sessionId: string, options: { timeoutMs?: number } = {}): Promise<SessionSnapshot> {
    const settled = (s: Pick<SessionSnapshot, "status" | "queuedMessages" | "unappliedDecisions">) =>
      s.status === "waiting_for_definition" ||
      ((s.status === "idle" || s.status === "awaiting_approval") &&
        s.queuedMessages === 0 &&
        s.unappliedDecisions === 0);
    // The check reads the head and the inbox only; the history is read once, for the snapshot returned.
    return this.waitUntil(sessionId, settled, options, async () => {
      const stored = await this.load(sessionId);
      const inbox = await this.store.readInbox(sessionId, stored.head.inboxCursor);
      return settled({
        status: stored.head.status,
        queuedMessages:
          stored.head.queue.length + inbox.filter((item) => item.kind === "message" || item.kind === "steer").length,
        unappliedDecisions: inbox.filter(isDecision).length,
      });
    });
  }

  /** Waits until `predicate` holds for the session's snapshot. Throws `WaitTimeoutError` after `timeoutMs`. */
  waitFor(
    sessionId: string,
    predicate: (snapshot: SessionSnapshot) => boolean,
    options: { timeoutMs?: number } = {},
  ): Promise<SessionSnapshot> {
    return this.waitUntil(sessionId, predicate, options);
  }

  /** `cheapCheck`, when given, is asked first on every wake-up; the snapshot is read only once it says yes. */
  private async waitUntil(
    sessionId: string,
    predicate: (snapshot: SessionSnapshot) => boolean,
    options: { timeoutMs?: number },
    cheapCheck?: () => Promise<boolean>,
  ): Promise<SessionSnapshot> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      const waiting = this.waitForEvents(sessionId, Math.min(250, Math.max(1, deadline - Date.now())));
      const snapshot = !cheapCheck || (await cheapCheck()) ? await this.snapshot(sessionId) : null;
      if (snapshot && predicate(snapshot)) {
        waiting.cancel();
        return snapshot;
      }
      if (Date.now() >= deadline) {
        waiting.cancel();
        const status = snapshot?.status ?? (await this.load(sessionId)).head.status;
        throw new WaitTimeoutError(`session "${sessionId}" did not reach the awaited state in time (status ${status})`);
      }
      await waiting.promise;
    }
  }

  /** The steps the session completed, in order, read from its events. */
  async steps(sessionId: string): Promise<StepLogEntry[]> {
    const steps: StepLogEntry[] = [];
    let after = 0;
    for (;;) {
      const events = await this.readEvents(sessionId, { after, limit: 1000 });
      if (events.length === 0) return steps;
      for (const event of events) {
        after = event.seq;
        if (event.type === "step_completed") steps.push({ seq: event.seq, ...event.data });
      }
    }
  }

  private async load(sessionId: string): Promise<StoredSession> {
    const stored = await loadStoredSession(this.store, sessionId);
    if (!stored) throw new SessionNotFoundError(sessionId);
    return stored;
  }

  private checkText(what: string, text: unknown): asserts text is string {
    if (typeof text !== "string") throw new InvalidInputError(`${what} must be a string`);
    if (text.trim().length === 0) throw new InvalidInputError(`${what} must not be empty`);
    if (text.length > this.limits.maxMessageChars)
      throw new InputTooLargeError(what, text.length, this.limits.maxMessageChars);
  }

  /** Resolves on the session's next event notification, or after `ms`. */
  private waitForEvents(
    sessionId: string,
    ms: number,
    signal?: AbortSignal,
  ): { promise: Promise<void>; cancel: () => void } {
    let cancel = () => {};
    const promise = new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        unsubscribe();
        signal?.removeEventListener("abort", finish);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      const unsubscribe = this.store.subscribe((n) => {
        if (n.kind === "events" && n.sessionId === sessionId) finish();
      });
      signal?.addEventListener("abort", finish);
      cancel = finish;
    });
    return { promise, cancel };
  }
}

function checkSessionId(sessionId: unknown): asserts sessionId is string {
  if (typeof sessionId !== "string" || !sessionIdPattern.test(sessionId)) {
    throw new InvalidInputError("a session ID is 1-200 letters, digits, '.', '_', ':' or '-'");
  }
}

function checkMessageId(messageId: unknown, what = "message ID"): string | null {
  if (messageId === undefined || messageId === null) return null;
  if (typeof messageId !== "string" || !messageIdPattern.test(messageId)) {
    throw new InvalidInputError(`a ${what} is 1-200 letters, digits, '.', '_', ':' or '-'`);
  }
  return messageId;
}

const isDecision = (entry: InboxEntry) => entry.kind === "resolution" || entry.kind === "attention";

const messageDedupeKey = (messageId: string | null) => (messageId === null ? null : `message:${messageId}`);

/**
 * The events carried by the notices received since the last read: joined when they follow on from
 * each other, null (read instead) once a notice carried none or left a gap.
 */
function mergeCarried(
  kept: readonly SessionEvent[] | null,
  hadNotice: boolean,
  incoming: readonly SessionEvent[] | null,
): readonly SessionEvent[] | null {
  if (incoming === null) return null;
  if (!hadNotice) return incoming;
  if (kept === null) return null;
  if (kept.length === 0) return incoming;
  if (incoming.length === 0) return kept;
  const last = kept[kept.length - 1]!.seq;
  if (incoming[0]!.seq > last + 1) return null;
  return [...kept, ...incoming.filter((event) => event.seq > last)];
}

/**
 * `DurableChatTransport`: the AI SDK's `ChatTransport` for `useChat`, on the routes of
 * `createSessionUIHandlers`. It keeps the stream position it read up to, so every connection
 * continues where the last one stopped: a dropped connection (a network error, a server restart) is
 * reconnected inside the stream `useChat` reads, which sees no gap and no repeat.
 *
 * - sending: posts the newest user message; its UI message ID is the session's `messageId`, so a
 *   retried send is accepted once;
 * - approval responses (`addToolApprovalResponse`): posted to the approve and reject routes when
 *   `useChat` sends (use `sendAutomaticallyWhen: transport.hasUnsentDecisions`);
 * - `stop()`: aborts the stream, and the transport asks the server to cancel the running turn;
 * - `reconnectToStream`: continues from the position it has (after `load()`, the one the
 *   rebuilt messages end at).
 *
 * Browser and Node (any global `fetch` with streaming bodies). No runtime import of `ai` or core.
 */
import type { ChatTransport, UIMessageChunk } from "ai";
import type { DurableUIMessage } from "../types.js";
import { readSseMessages } from "./sse.js";

/** What `load()` answers: the server's `SessionUIMessages`. */
export interface LoadedSession {
  readonly sessionId: string;
  readonly messages: DurableUIMessage[];
  readonly cursor: string;
  /** `waiting_for_definition`: no running worker serves the session's agent definition (core's pinning). */
  readonly status: "idle" | "running" | "awaiting_approval" | "waiting_for_definition";
  readonly openTurnId: string | null;
  readonly lastEventSeq: number;
}

export interface DurableChatTransportOptions {
  /** The session's chat routes, e.g. `/sessions/${id}/ui` (absolute outside a browser). */
  readonly api: string;
  /** Sent with every request, e.g. `{ "x-session-token": token }`. */
  readonly headers?: Record<string, string> | (() => Record<string, string>);
  readonly fetch?: typeof globalThis.fetch;
  /** The position to start from (what `load()` returned); `load()` sets it too. Default "0". */
  readonly cursor?: string;
  /** Whether an aborted stream (`useChat`'s `stop()`) cancels the running turn. Default true. */
  readonly cancelOnAbort?: boolean;
  /** The reason sent with that cancellation. Default "stopped in the chat". */
  readonly cancelReason?: string;
  /** Reconnecting a dropped stream: delays double from `initialDelayMs` to `maxDelayMs`, for `maxAttempts` tries in a row. */
  readonly reconnect?: {
    readonly maxAttempts?: number;
    readonly initialDelayMs?: number;
    readonly maxDelayMs?: number;
  };
  /** Called whenever the position moves (after each frame with an `id`). */
  readonly onCursor?: (cursor: string) => void;
}

/** An answer of the server that is not a stream: its status and error code. */
export class DurableChatError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "DurableChatError";
  }
}

type Part = DurableUIMessage["parts"][number];
type ToolPartLike = {
  type: string;
  state: string;
  toolCallId: string;
  approval?: { id: string; approved?: boolean; reason?: string };
};

const isToolPart = (part: Part): part is Part & ToolPartLike =>
  part.type === "dynamic-tool" || part.type.startsWith("tool-");

interface CancelGuard {
  turnId: string | null;
  finished: boolean;
  readonly stop: AbortController;
  readonly finish: () => void;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });

export class DurableChatTransport implements ChatTransport<DurableUIMessage> {
  /** A reconnect continues the message: it does not replay it. */
  readonly resumeStreamIsReplay = false;

  readonly #api: string;
  readonly #headers: DurableChatTransportOptions["headers"];
  readonly #fetch: typeof globalThis.fetch;
  readonly #cancelOnAbort: boolean;
  readonly #cancelReason: string;
  readonly #maxAttempts: number;
  readonly #initialDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #onCursor: ((cursor: string) => void) | undefined;
  /** Approval IDs whose decision the server has (posted here, or seen in a stream or loaded message). */
  readonly #decided = new Set<string>();
  #cursor: string;
  #closed = false;

  constructor(options: DurableChatTransportOptions) {
    this.#api = options.api.replace(/\/+$/, "");
    this.#headers = options.headers;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#cursor = options.cursor ?? "0";
    this.#cancelOnAbort = options.cancelOnAbort ?? true;
    this.#cancelReason = options.cancelReason ?? "stopped in the chat";
    this.#maxAttempts = options.reconnect?.maxAttempts ?? 40;
    this.#initialDelayMs = options.reconnect?.initialDelayMs ?? 200;
    this.#maxDelayMs = options.reconnect?.maxDelayMs ?? 2_000;
    this.#onCursor = options.onCursor;
  }

  /** The stream position read up to: the next connection continues after it. */
  get cursor(): string {
    return this.#cursor;
  }

  /** The event sequence number of the position. */
  get lastEventSeq(): number {
    return Number.parseInt(this.#cursor, 10);
  }

  /**
   * The session's conversation rebuilt by the server, for `useChat({ messages })` or `setMessages`;
   * the transport then continues from where those messages end.
   */
  async load(options: { signal?: AbortSignal } = {}): Promise<LoadedSession> {
    const response = await this.#request("GET", "/messages", undefined, options.signal);
    const loaded = (await response.json()) as LoadedSession;
    this.#setCursor(loaded.cursor);
    for (const message of loaded.messages) {
      for (const part of message.parts) {
        if (isToolPart(part) && part.approval?.approved !== undefined) this.#decided.add(part.approval.id);
      }
    }
    return loaded;
  }

  /**
   * For `useChat({ sendAutomaticallyWhen })`: whether the last assistant message has an approval
   * response the server has not been sent yet.
   */
  readonly hasUnsentDecisions = ({ messages }: { messages: DurableUIMessage[] }): boolean => {
    const last = messages.at(-1);
    return (
      last?.role === "assistant" &&
      last.parts.some(
        (part) =>
          isToolPart(part) &&
          part.state === "approval-responded" &&
          part.approval !== undefined &&
          !this.#decided.has(part.approval.id),
      )
    );
  };

  sendMessages: ChatTransport<DurableUIMessage>["sendMessages"] = async (options) => {
    const last = options.messages.at(-1);
    if (!last) throw new DurableChatError(400, "invalid_input", "there is no message to send");
    const signal = options.abortSignal;
    const guard = this.#cancelGuard(signal, last.id);
    try {
      return this.#stream(await this.#send(last, signal), guard);
    } catch (error) {
      guard.finish();
      throw error;
    }
  };

  /** Posts what `useChat` sends (a user message, or approval responses) and opens the answer's stream. */
  async #send(last: DurableUIMessage, signal: AbortSignal | undefined): Promise<Response> {
    if (last.role === "assistant") {
      // A continuation: the approval responses given in the chat go to the server first.
      for (const part of last.parts) {
        if (!isToolPart(part) || part.state !== "approval-responded" || !part.approval) continue;
        if (this.#decided.has(part.approval.id)) continue;
        const { id, approved, reason } = part.approval;
        try {
          await this.#request(
            "POST",
            `/approvals/${encodeURIComponent(id)}/${approved ? "approve" : "reject"}`,
            approved || !reason?.trim() ? {} : { message: reason },
            signal,
          );
        } catch (error) {
          // Decided already (another tab, a retried send): the server has a decision.
          if (!(error instanceof DurableChatError && error.code === "duplicate_resolution")) throw error;
        }
        this.#decided.add(id);
      }
      return this.#request("GET", `/stream?after=${encodeURIComponent(this.#cursor)}`, undefined, signal);
    }
    const text = last.parts
      .filter((part) => part.type === "text")
      .map((part) => (part as { text: string }).text)
      .join("\n");
    return this.#request("POST", "/chat", { text, message_id: last.id, after: this.#cursor }, signal);
  }

  reconnectToStream: ChatTransport<DurableUIMessage>["reconnectToStream"] = async (options) => {
    const signal = options.abortSignal;
    const guard = this.#cancelGuard(signal, null);
    try {
      const response = await this.#request(
        "GET",
        `/stream?after=${encodeURIComponent(this.#cursor)}`,
        undefined,
        signal,
      );
      if (response.status === 204) {
        guard.finish();
        return null;
      }
      return this.#stream(response, guard);
    } catch (error) {
      guard.finish();
      throw error;
    }
  };

  /**
   * Cancels the turn when `signal` aborts before the exchange finished (`stop()`). `messageId`: the
   * message the exchange answers, for the cancellation's request ID while the turn is not known yet.
   */
  #cancelGuard(signal: AbortSignal | undefined, messageId: string | null): CancelGuard {
    const guard: CancelGuard = {
      turnId: null,
      finished: false,
      stop: new AbortController(),
      finish: () => {
        guard.finished = true;
        signal?.removeEventListener("abort", onAbort);
      },
    };
    const onAbort = () => {
      guard.stop.abort();
      if (guard.finished || this.#closed || !this.#cancelOnAbort) return;
      guard.finish();
      const requestId = `stop-${guard.turnId ?? messageId ?? "chat"}`.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 200);
      this.cancelTurn({ requestId, ...(guard.turnId ? { turnId: guard.turnId } : {}) }).catch(() => {
        // The stop happened on this side all the same; the page learns the turn's end from the session.
      });
    };
    if (signal?.aborted) guard.stop.abort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    return guard;
  }

  /**
   * Asks the server to cancel the running turn (or the one about to start); with `turnId`, only that
   * turn. False when it was not running.
   */
  async cancelTurn(options: { reason?: string; requestId?: string; turnId?: string } = {}): Promise<boolean> {
    try {
      await this.#request("POST", "/cancel", {
        reason: options.reason ?? this.#cancelReason,
        ...(options.requestId === undefined ? {} : { request_id: options.requestId }),
        ...(options.turnId === undefined ? {} : { turn_id: options.turnId }),
      });
      return true;
    } catch (error) {
      if (error instanceof DurableChatError && error.code === "session_state") return false;
      throw error;
    }
  }

  /**
   * Waits (a long poll, up to the server's watch timeout) for an event after the position; true
   * when one came. A page that is not streaming uses it to notice turns started elsewhere (another
   * tab): then it loads the messages again and resumes the stream.
   */
  async waitForChange(options: { signal?: AbortSignal } = {}): Promise<boolean> {
    const response = await this.#request("GET", `/watch?after=${this.lastEventSeq}`, undefined, options.signal);
    const body = (await response.json()) as { changed: boolean };
    return body.changed;
  }

  /** After this, an aborted stream no longer cancels its turn (for a chat that is being replaced). */
  close = (): void => {
    this.#closed = true;
  };

  #setCursor(cursor: string): void {
    this.#cursor = cursor;
    this.#onCursor?.(cursor);
  }

  async #request(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = {
      ...(typeof this.#headers === "function" ? this.#headers() : this.#headers),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    };
    const response = await this.#fetch(`${this.#api}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
    });
    if (response.ok) return response;
    let code = "http_error";
    let message = `${method} ${path} answered ${response.status}`;
    try {
      const parsed = (await response.json()) as { error?: { code?: string; message?: string } };
      code = parsed.error?.code ?? code;
      message = parsed.error?.message ?? message;
    } catch {
      // Not a JSON error body.
    }
    throw new DurableChatError(response.status, code, message);
  }

  /**
   * The chunks of `first` and, when it drops before its clean end, of the connections that continue
   * after the last position read.
   */
  #stream(first: Response, guard: CancelGuard): ReadableStream<UIMessageChunk> {
    const stop = guard.stop;

    return new ReadableStream<UIMessageChunk>({
      start: (controller) => {
        void (async () => {
          let response: Response | null = first;
          let connection = 0;
          let failures = 0;
          try {
            while (!stop.signal.aborted) {
              let clean = false;
              if (response !== null) {
                if (response.status === 204) {
                  clean = true;
                } else if (response.body) {
                  let firstFrame = true;
                  try {
                    for await (const message of readSseMessages(response.body)) {
                      if (message.data === "[DONE]") {
                        clean = true;
                        break;
                      }
                      const chunk = JSON.parse(message.data) as UIMessageChunk;
                      const isConnectionStart = firstFrame && message.id === null && chunk.type === "start";
                      firstFrame = false;
                      if (chunk.type === "start" && chunk.messageId?.startsWith("assistant-")) {
                        guard.turnId = chunk.messageId.slice("assistant-".length);
                      }
                      if (chunk.type === "tool-approval-response") this.#decided.add(chunk.approvalId);
                      // A continuing connection repeats the message's start: the reader has it.
                      if (!(connection > 0 && isConnectionStart)) controller.enqueue(chunk);
                      if (message.id !== null) {
                        this.#setCursor(message.id);
                        failures = 0; // progress: the reconnects in a row start over
                      }
                    }
                  } catch (error) {
                    if (stop.signal.aborted) break;
                    if (error instanceof SyntaxError) throw error;
                    // A dropped connection: reconnect below.
                  }
                }
              }
              if (clean) {
                guard.finish();
                controller.close();
                return;
              }
              if (stop.signal.aborted) break;
              failures += 1;
              if (failures > this.#maxAttempts) {
                throw new DurableChatError(
                  0,
                  "stream_lost",
                  `the stream was lost and ${this.#maxAttempts} reconnects failed`,
                );
              }
              await sleep(
                Math.min(this.#maxDelayMs, this.#initialDelayMs * 2 ** Math.min(failures - 1, 10)),
                stop.signal,
              );
              if (stop.signal.aborted) break;
              connection += 1;
              try {
                response = await this.#request(
                  "GET",
                  `/stream?after=${encodeURIComponent(this.#cursor)}`,
                  undefined,
                  stop.signal,
                );
              } catch (error) {
                // Answers that a retry cannot change end the stream; the rest (the server restarting) are retried.
                if (error instanceof DurableChatError && error.status >= 400 && error.status < 500) throw error;
                response = null;
              }
            }
          } catch (error) {
            guard.finish();
            controller.error(error);
          }
        })();
      },
      cancel: () => {
        stop.abort();
      },
    });
  }
}

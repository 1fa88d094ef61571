/**
 * Joins streamed deltas into events of about `maxChars` characters, or whatever arrived when no new
 * delta came for `idleMs` (DESIGN §8).
 */
import type { ModelDelta } from "./runner.js";
import type { EventBody } from "./schemas.js";

export interface CoalescerOptions {
  /** Flush once this many characters are buffered. Default 64. */
  readonly maxChars?: number;
  /** Flush when no delta came for this long. Default 100 ms. */
  readonly idleMs?: number;
  /** Flush when the oldest buffered delta is this old, even while deltas keep coming. Default 100 ms. */
  readonly maxDelayMs?: number;
}

export class DeltaCoalescer {
  private kind: ModelDelta["kind"] | null = null;
  private buffer = "";
  private timer: ReturnType<typeof setTimeout> | null = null;
  private deadline: ReturnType<typeof setTimeout> | null = null;
  private pending: Promise<void> = Promise.resolve();
  private readonly maxChars: number;
  private readonly idleMs: number;
  private readonly maxDelayMs: number;

  constructor(
    private readonly turnId: string,
    private readonly emit: (events: EventBody[]) => Promise<void>,
    options: CoalescerOptions = {},
  ) {
    this.maxChars = options.maxChars ?? 64;
    this.idleMs = options.idleMs ?? 100;
    this.maxDelayMs = options.maxDelayMs ?? 100;
  }

  push(delta: ModelDelta): void {
    if (typeof delta?.text !== "string" || delta.text.length === 0) return;
    if (this.kind !== null && this.kind !== delta.kind) this.flush();
    this.kind = delta.kind;
    this.buffer += delta.text;
    if (this.buffer.length >= this.maxChars) {
      this.flush();
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), this.idleMs);
    this.deadline ??= setTimeout(() => this.flush(), this.maxDelayMs);
  }

  /** Flushes what is buffered and waits until every flushed event was handed over. */
  async close(): Promise<void> {
    this.flush();
    await this.pending;
  }

  /**
   * Waits until every flushed event was handed over, and returns what is still buffered as events
   * instead of emitting it (the caller commits them with the step's result).
   */
  async finish(): Promise<EventBody[]> {
    this.stopTimers();
    await this.pending;
    const rest = this.take();
    return rest ? [rest] : [];
  }

  private stopTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.deadline) clearTimeout(this.deadline);
    this.timer = null;
    this.deadline = null;
  }

  private take(): EventBody | null {
    if (this.buffer.length === 0 || this.kind === null) return null;
    const event: EventBody =
      this.kind === "text"
        ? { type: "text_delta", data: { turnId: this.turnId, text: this.buffer } }
        : { type: "reasoning_delta", data: { turnId: this.turnId, text: this.buffer } };
    this.buffer = "";
    return event;
  }

  private flush(): void {
    this.stopTimers();
    const event = this.take();
    if (!event) return;
    this.pending = this.pending.then(() => this.emit([event])).catch(() => undefined);
  }
}

/**
 * Joins streamed deltas into events of about `maxChars` characters, or whatever arrived when no new
 * delta came for `idleMs` (DESIGN §8).
 */
import type { ModelDelta } from "./runner.js";
import type { EventBody } from "./schemas.js";

export interface CoalescerOptions {
  readonly maxChars?: number;
  readonly idleMs?: number;
}

export class DeltaCoalescer {
  private kind: ModelDelta["kind"] | null = null;
  private buffer = "";
  private timer: ReturnType<typeof setTimeout> | null = null;
  private pending: Promise<void> = Promise.resolve();
  private readonly maxChars: number;
  private readonly idleMs: number;

  constructor(
    private readonly turnId: string,
    private readonly emit: (events: EventBody[]) => Promise<void>,
    options: CoalescerOptions = {},
  ) {
    this.maxChars = options.maxChars ?? 64;
    this.idleMs = options.idleMs ?? 100;
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
  }

  /** Flushes what is buffered and waits until every flushed event was handed over. */
  async close(): Promise<void> {
    this.flush();
    await this.pending;
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer.length === 0 || this.kind === null) return;
    const event: EventBody =
      this.kind === "text"
        ? { type: "text_delta", data: { turnId: this.turnId, text: this.buffer } }
        : { type: "reasoning_delta", data: { turnId: this.turnId, text: this.buffer } };
    this.buffer = "";
    this.pending = this.pending.then(() => this.emit([event])).catch(() => undefined);
  }
}

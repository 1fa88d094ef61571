/**
 * Follows one session's events with `client.followEvents`, as a UI would: tells when a turn ended,
 * and when each piece of streamed text arrived.
 */
import type { SessionClient, SessionEvent } from "@durable-agents/core";
import type { StepClock } from "./step-clock.js";

export interface TurnText {
  text: string;
  /** Cumulative text length after each text event, with its arrival time. */
  readonly arrivals: { end: number; at: number }[];
}

export class TurnFollower {
  private readonly controller = new AbortController();
  private readonly ended = new Map<string, { at: number; failed: string | null }>();
  private readonly waiters = new Map<string, (at: number) => void>();
  private readonly texts = new Map<string, TurnText>();
  private readonly loop: Promise<void>;
  private error: unknown = null;

  constructor(
    client: SessionClient,
    private readonly sessionId: string,
  ) {
    this.loop = this.follow(client).catch((error: unknown) => {
      this.error = error;
    });
  }

  private async follow(client: SessionClient): Promise<void> {
    for await (const event of client.followEvents(this.sessionId, { signal: this.controller.signal }))
      this.onEvent(event);
  }

  private onEvent(event: SessionEvent): void {
    const at = performance.now();
    if (event.type === "text_delta") {
      const entry = this.texts.get(event.data.turnId) ?? { text: "", arrivals: [] };
      entry.text += event.data.text;
      entry.arrivals.push({ end: entry.text.length, at });
      this.texts.set(event.data.turnId, entry);
    } else if (event.type === "turn_completed" || event.type === "turn_failed") {
      const turnId = event.data.turnId;
      this.ended.set(turnId, { at, failed: event.type === "turn_failed" ? event.data.error : null });
      this.waiters.get(turnId)?.(at);
      this.waiters.delete(turnId);
    }
  }

  /** Resolves with the time the turn's end was seen; throws when the turn failed or takes too long. */
  async turnEnd(turnId: string, timeoutMs = 60_000): Promise<number> {
    const known = this.ended.get(turnId);
    const at =
      known?.at ??
      (await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.waiters.delete(turnId);
          reject(
            new Error(
              `turn ${turnId} of ${this.sessionId} did not end within ${timeoutMs} ms (${String(this.error ?? "")})`,
            ),
          );
        }, timeoutMs);
        this.waiters.set(turnId, (time) => {
          clearTimeout(timer);
          resolve(time);
        });
      }));
    const failed = this.ended.get(turnId)?.failed;
    if (failed) throw new Error(`turn ${turnId} of ${this.sessionId} failed: ${failed}`);
    return at;
  }

  /**
   * For every text chunk the model produced in `turnId`: the time from its production to the
   * arrival of the event that completed it at this follower.
   */
  textLatencies(turnId: string, clock: StepClock): number[] {
    const entry = this.texts.get(turnId);
    if (!entry) return [];
    return chunkLatencies(entry, clock, `${this.sessionId} ${turnId}`);
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
  }
}

/**
 * For every chunk the model produced for `entry.text`: from its production to the arrival of the
 * event that completed it. `offsetMs` is added to the production times first (the follower's clock
 * minus the producer's, for a follower in another process).
 */
export function chunkLatencies(entry: TurnText, clock: StepClock, what: string, offsetMs = 0): number[] {
  const produced = clock.produced.get(entry.text);
  if (!produced) throw new Error(`no produced chunks recorded for the answer of ${what}`);
  return produced.map((chunk) => {
    const arrival = entry.arrivals.find((a) => a.end >= chunk.end);
    if (!arrival) throw new Error(`text chunk ending at ${chunk.end} never arrived (${what})`);
    return arrival.at - (chunk.at + offsetMs);
  });
}

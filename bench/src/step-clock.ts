/**
 * Where the benchmark's instruments write: the end of every step (a model call or a tool call) and
 * the moment each streamed text chunk was produced. The phases run one session at a time while they
 * measure, so one clock per phase is enough.
 */
export interface ProducedChunk {
  /** Length of the answer's text up to and including this chunk. */
  readonly end: number;
  /** `performance.now()` when the model handed the chunk to the SDK. */
  readonly at: number;
}

/**
 * The machine's monotonic clock in ms (`process.hrtime`, CLOCK_MONOTONIC on Linux: one clock for
 * every process, unlike `performance.now()`, whose origin is the process's start).
 */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export class StepClock {
  /** End times of the steps since the last `reset()`, in order. */
  marks: number[] = [];
  /** Streamed answers by their full text (unique per turn in this workload), with their chunks. */
  readonly produced = new Map<string, ProducedChunk[]>();
  enabled = true;

  mark(): void {
    if (this.enabled) this.marks.push(performance.now());
  }

  reset(): void {
    this.marks = [];
  }

  recordAnswer(text: string, chunks: ProducedChunk[]): void {
    if (this.enabled) this.produced.set(text, chunks);
  }

  /**
   * The time of each step of one turn: from the turn's start (or the previous step's end) to the
   * step's end, where the last step ends when the turn is seen complete. Throws when the turn did
   * not make `steps` steps.
   */
  stepTimes(start: number, end: number, steps: number): number[] {
    if (this.marks.length !== steps) {
      throw new Error(`a turn made ${this.marks.length} steps, the workload expects ${steps}`);
    }
    const bounds = [start, ...this.marks.slice(0, -1), end];
    const times: number[] = [];
    for (let i = 1; i < bounds.length; i++) times.push(bounds[i]! - bounds[i - 1]!);
    return times;
  }
}

/**
 * Stream positions. Each SSE frame of a session's UI message stream carries the sequence number of
 * the event it came from as its `id`. One event can give several chunks: the last one's `id` is the
 * plain sequence number (`"12"`: event 12 is done), the ones before it add the chunk's index
 * (`"12.0"`, `"12.1"`: event 12 up to that chunk). A reader that reconnects after the last `id` it
 * saw gets exactly the chunks it did not get, whatever frame it stopped at.
 */

export interface StreamCursor {
  /** The event sequence number. */
  readonly seq: number;
  /** The last chunk of event `seq` already read, or null when every chunk of `seq` was read. */
  readonly chunk: number | null;
}

/** Before the first event of a session. */
export const startCursor: StreamCursor = Object.freeze({ seq: 0, chunk: null });

const pattern = /^(\d{1,15})(?:\.(\d{1,6}))?$/;

/** Parses `"12"` or `"12.3"`; null for anything else. */
export function parseCursor(text: string | null | undefined): StreamCursor | null {
  if (text === null || text === undefined) return null;
  const match = pattern.exec(text.trim());
  if (!match) return null;
  return { seq: Number(match[1]), chunk: match[2] === undefined ? null : Number(match[2]) };
}

export function formatCursor(cursor: StreamCursor): string {
  return cursor.chunk === null ? String(cursor.seq) : `${cursor.seq}.${cursor.chunk}`;
}

/** The `id` of chunk `index` of the `count` chunks event `seq` gave. */
export function frameId(seq: number, index: number, count: number): string {
  return index === count - 1 ? String(seq) : `${seq}.${index}`;
}

/** Whether position `a` comes before position `b`. */
export function cursorBefore(a: StreamCursor, b: StreamCursor): boolean {
  if (a.seq !== b.seq) return a.seq < b.seq;
  const ac = a.chunk ?? Number.POSITIVE_INFINITY;
  const bc = b.chunk ?? Number.POSITIVE_INFINITY;
  return ac < bc;
}

/**
 * The session object: one Restate virtual object per session (keyed by session ID) that holds the
 * session as the world reads it (its head, history and events) and runs it: its exclusive `drive`
 * handler applies core's state machine and writes each transition into the object's own state,
 * where the shared handlers (`load`, `status`, `history`, `events`) read it at once, even while the
 * drive runs. What comes from outside while a turn runs (messages, decisions, cancellations,
 * steering, long polls) goes to the inbox object (`inbox-object.ts`), which is never locked by a
 * turn.
 *
 * State layout (lazy state: a handler reads only the entries it needs): `head` (with the meta as
 * of its write: version, last event seq, history length; and the tail of the latest events, those
 * after the last `e:` entry), `meta` (written alone when only it changes; the newer of the two
 * counts), `h:<index>` one history item each, `e:<seq>` events that end at that seq (one event, or
 * an array of up to 16).
 * Nothing is ever rewritten whole: a transition writes the head, its new history items and its new
 * events, so its cost does not grow with the history.
 */
import * as restate from "@restatedev/restate-sdk";
import type { EventBody, HistoryItem, SessionEvent, SessionHead } from "@durable-agents/core";
import type { StoredSession } from "@durable-agents/core/engine";
import { type DriveOptions, driveSession } from "./drive.js";
import { getAll, range } from "./inbox-object.js";
import type { CommitResult, DriveRequest, InitRequest, PollAnswer, PollRequest, SessionMeta } from "./protocol.js";

type Reader = restate.ObjectSharedContext;
type Writer = restate.ObjectContext;

/**
 * The head as the session object stores it: with the meta as of the transition that wrote it, so
 * that a transition writes one entry for both. The `meta` entry is written alone when only the meta
 * changes (events without a new head, a drive's end); the current meta is the newer of the two.
 */
export type StoredHead = SessionHead & {
  readonly $meta?: SessionMeta;
  /**
   * The last events, when the head's meta is the current one: those after the last `e:` entry, up
   * to `$meta.lastEventSeq` (a transition adds its events here instead of an entry of their own,
   * until there are more than `tailLimit`; a write of the meta alone first moves them into `e:`
   * entries).
   */
  readonly $tail?: readonly StoredEvent[];
};

/** The most events a head's tail holds before they go into `e:` entries. */
export const tailLimit = 16;

/**
 * The session's current meta: the `meta` entry's or the head's, whichever is newer (by version,
 * then last event; on a tie the `meta` entry's, which is only ever written after the head).
 */
export function currentMeta(meta: SessionMeta | null, head: StoredHead | null): SessionMeta | null {
  const withHead = head?.$meta ?? null;
  if (withHead === null) return meta;
  if (meta === null) return withHead;
  const newer =
    withHead.version > meta.version || (withHead.version === meta.version && withHead.lastEventSeq > meta.lastEventSeq);
  return newer ? withHead : meta;
}

/** The current meta, the head, and the events of the head's tail that are current (none when the `meta` entry is). */
export interface StoredState {
  readonly meta: SessionMeta | null;
  readonly head: StoredHead | null;
  readonly tail: readonly StoredEvent[];
}

/** The meta, the head and its current tail, in one round trip. */
export async function readState(ctx: Reader): Promise<StoredState> {
  const [entry, stored] = await getAll<unknown>(ctx, ["meta", "head"]);
  const head = stored as StoredHead | null;
  const meta = currentMeta(entry as SessionMeta | null, head);
  const tail = meta !== null && meta === head?.$meta ? (head.$tail ?? []) : [];
  return { meta, head, tail };
}

/** An event as the session object stores it. */
export type StoredEvent = EventBody & { at: string };

/** The most events one `e:` entry holds. */
const eventsPerEntry = 16;

/**
 * Appends events after `after` into `e:` entries; returns the new last seq. The events of one
 * write go into as few state entries as they fit in, each
 * under the seq of its last event: `e:<seq>` holds that one event, or an array of the events
 * that end there (entries written before batches hold one event each).
 */
export function writeEvents(ctx: Writer, after: number, events: readonly EventBody[], at: string): number {
  writeStored(
    ctx,
    after,
    events.map(({ type, data }) => ({ type, data, at }) as StoredEvent),
  );
  return after + events.length;
}

/** Writes stored events after seq `after` into `e:` entries, up to `eventsPerEntry` each. */
export function writeStored(ctx: Writer, after: number, events: readonly StoredEvent[]): void {
  for (let from = 0; from < events.length; from += eventsPerEntry) {
    const chunk = events.slice(from, from + eventsPerEntry);
    ctx.set(`e:${after + from + chunk.length}`, chunk.length === 1 ? chunk[0] : chunk);
  }
}

/**
 * The stored events after `after`, up to `limit` of them: the entries from `after + 1` on, and as
 * many past the limit as the entry holding its last event may end after it.
 */
async function readEvents(ctx: Reader, state: StoredState, after: number, limit: number): Promise<SessionEvent[]> {
  const meta = state.meta!;
  const last = Math.min(meta.lastEventSeq, after + limit);
  // The events up to `flushed` are in `e:` entries, the ones after it in the head's tail.
  const flushed = meta.lastEventSeq - state.tail.length;
  const keys = range(after + 1, Math.min(flushed, last + eventsPerEntry - 1));
  const stored = await getAll<StoredEvent | StoredEvent[]>(
    ctx,
    keys.map((seq) => `e:${seq}`),
  );
  const events: SessionEvent[] = [];
  stored.forEach((entry, index) => {
    if (!entry) return;
    const end = keys[index]!;
    const held = Array.isArray(entry) ? entry : [entry];
    held.forEach((event, i) => {
      const seq = end - held.length + 1 + i;
      if (seq > after && seq <= last) events.push({ ...event, seq } as SessionEvent);
    });
  });
  state.tail.forEach((event, i) => {
    const seq = flushed + 1 + i;
    if (seq > after && seq <= last) events.push({ ...event, seq } as SessionEvent);
  });
  return events;
}

export function sessionObject(options: DriveOptions) {
  return restate.object({
    name: options.names.session,
    description: "A durable agent session: its head, history and events, and the drive that runs it (Durable Agents).",
    handlers: {
      /** Stores a new session's head and first events (called by the inbox object's `create`). */
      init: restate.handlers.object.exclusive(
        { ingressPrivate: true },
        async (ctx: Writer, req: InitRequest): Promise<CommitResult> => {
          const lastEventSeq = writeEvents(ctx, 0, req.events, req.at);
          ctx.set("head", req.head);
          ctx.set<SessionMeta>("meta", {
            version: 1,
            lastEventSeq,
            historyLength: 0,
            inboxCursor: req.head.inboxCursor,
          });
          return { version: 1, lastEventSeq };
        },
      ),

      /** Runs the session's steps until nothing runs and nothing falls due (see `drive.ts`). */
      drive: restate.handlers.object.exclusive(
        { ingressPrivate: true, ...options.serviceOptions },
        async (ctx: Writer, req: DriveRequest | null): Promise<void> => driveSession(ctx, options, req),
      ),

      load: restate.handlers.object.shared(async (ctx: Reader): Promise<StoredSession | null> => {
        const { meta, head } = await readState(ctx);
        if (!meta || !head) return null;
        const { $meta: _meta, $tail: _tail, ...plain } = head;
        return { head: plain, version: meta.version, lastEventSeq: meta.lastEventSeq };
      }),

      status: restate.handlers.object.shared(async (ctx: Reader): Promise<SessionMeta | null> => {
        return (await readState(ctx)).meta;
      }),

      history: restate.handlers.object.shared(async (ctx: Reader, req: { offset: number }): Promise<HistoryItem[]> => {
        const { meta } = await readState(ctx);
        if (!meta) return [];
        const items = await getAll<HistoryItem>(
          ctx,
          range(req.offset, meta.historyLength - 1).map((index) => `h:${index}`),
        );
        return items.filter((item): item is HistoryItem => item !== null);
      }),

      events: restate.handlers.object.shared(
        async (ctx: Reader, req: { after: number; limit: number }): Promise<SessionEvent[]> => {
          const state = await readState(ctx);
          return state.meta ? readEvents(ctx, state, req.after, req.limit) : [];
        },
      ),

      /**
       * A follower's poll while a drive runs: the status and, in the same invocation, the events
       * after `after` (a follower learns what moved and what it is without a second request).
       */
      poll: restate.handlers.object.shared(async (ctx: Reader, req: PollRequest): Promise<PollAnswer | null> => {
        const state = await readState(ctx);
        const meta = state.meta;
        if (!meta) return null;
        const limit = Math.max(1, Math.min(1000, Math.trunc(Number(req?.limit)) || 1));
        const after = Math.trunc(Number(req?.after));
        const events = Number.isFinite(after) && after >= 0 ? await readEvents(ctx, state, after, limit) : [];
        return { meta, events };
      }),
    },
    options: {
      enableLazyState: true,
      // The drive journals one entry or a few per step: once it ended, nothing needs them (a benchmark
      // that measures the journals keeps them with `journalRetention`).
      journalRetention: 0,
    },
  });
}

export type SessionObject = ReturnType<typeof sessionObject>;

/**
 * The session object: one Restate virtual object per session (keyed by session ID) that holds what
 * the outside world reads and writes: the head as last committed, the history, the events and the
 * inbox. Its exclusive handlers are all short (a few state reads and writes), so a message, a
 * decision or a cancellation is accepted at once even while a turn runs: the turn runs in the engine
 * object (`engine-object.ts`), which commits each transition here with a one-way send.
 *
 * State layout (lazy state: a handler reads only the entries it needs):
 * `meta` (counters, the drive's wake-up awakeable, long-poll watchers), `head`, `h:<index>` one
 * history item each, `e:<seq>` one event each, `i:<seq>` one inbox entry each, `d:<dedupe key>` the
 * seq of the entry stored under that key. Nothing is ever rewritten whole: a commit writes the head,
 * its new history items and its new events, so its cost does not grow with the history.
 */
import * as restate from "@restatedev/restate-sdk";
import type { ErrorCode, EventBody, HistoryItem, InboxItem, SessionEvent, SessionHead } from "@durable-agents/core";
import type { StoredSession } from "@durable-agents/core/engine";
import type { ServiceNames } from "./names.js";
import type {
  Answer,
  AppendEventsRequest,
  CommitRequest,
  CommitResult,
  CreateRequest,
  EnqueueRequest,
  EnqueueResult,
  Opened,
  SessionCursor,
  SessionMeta,
  Wake,
  WatchInboxRequest,
  Watcher,
} from "./protocol.js";

/** Long polls kept per session; the oldest is answered at once when one more registers. */
const maxWatchers = 64;

type Reader = restate.ObjectSharedContext;
type Writer = restate.ObjectContext;

const fail = <T>(code: ErrorCode, message: string): Answer<T> => ({ ok: false, error: { code, message } });
const ok = <T>(value: T): Answer<T> => ({ ok: true, value });

/** Reads several state entries in one round trip. */
async function getAll<T>(ctx: Reader, keys: readonly string[]): Promise<(T | null)[]> {
  if (keys.length === 0) return [];
  return restate.RestatePromise.all(keys.map((key) => ctx.get<T>(key) as restate.RestatePromise<T | null>));
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

async function readInbox(ctx: Reader, after: number, last: number): Promise<InboxItem[]> {
  const items = await getAll<InboxItem>(
    ctx,
    range(after + 1, last).map((seq) => `i:${seq}`),
  );
  return items.filter((item): item is InboxItem => item !== null);
}

const cursorOf = (meta: SessionMeta): SessionCursor => ({
  version: meta.version,
  lastEventSeq: meta.lastEventSeq,
  inboxSeq: meta.inboxSeq,
});

const movedPast = (meta: SessionCursor, watcher: SessionCursor): boolean =>
  meta.version > watcher.version || meta.lastEventSeq > watcher.lastEventSeq || meta.inboxSeq > watcher.inboxSeq;

/** Appends events after `meta.lastEventSeq`; returns the new last seq. */
function appendEvents(ctx: Writer, meta: SessionMeta, events: readonly EventBody[], at: string): number {
  let seq = meta.lastEventSeq;
  for (const event of events) {
    seq += 1;
    ctx.set(`e:${seq}`, { type: event.type, data: event.data, at });
  }
  return seq;
}

/** Answers every long poll the new meta moved past, and keeps the others. */
function answerWatchers(ctx: Writer, meta: SessionMeta): SessionMeta {
  const waiting: Watcher[] = [];
  for (const watcher of meta.watchers) {
    if (movedPast(meta, watcher)) ctx.resolveAwakeable(watcher.awakeableId, cursorOf(meta));
    else waiting.push(watcher);
  }
  return { ...meta, watchers: waiting };
}

export function sessionObject(names: ServiceNames) {
  const driveSession = (ctx: Writer) =>
    ctx.genericSend({
      service: names.engine,
      method: "drive",
      key: ctx.key,
      parameter: null,
      inputSerde: restate.serde.json,
    });

  return restate.object({
    name: names.session,
    description: "A durable agent session: its head, history, events and inbox (Durable Agents).",
    handlers: {
      /** Creates the session, with its first events and optionally its first inbox entry. */
      create: restate.handlers.object.exclusive(
        async (ctx: Writer, req: CreateRequest): Promise<Answer<CommitResult>> => {
          const head = req.session.head;
          if (head.sessionId !== ctx.key) return fail("invalid_input", `head is of session "${head.sessionId}"`);
          if ((await ctx.get<SessionMeta>("meta")) !== null) {
            return fail("session_state", `a session with ID "${ctx.key}" already exists`);
          }
          let meta: SessionMeta = {
            version: 1,
            lastEventSeq: 0,
            inboxSeq: 0,
            historyLength: 0,
            driverWake: null,
            watchers: [],
          };
          meta = { ...meta, lastEventSeq: appendEvents(ctx, meta, req.session.events, req.at) };
          const inbox = req.session.inbox;
          if (inbox) {
            ctx.set("i:1", { ...inbox.entry, seq: 1 });
            if (inbox.dedupeKey !== null) ctx.set(`d:${inbox.dedupeKey}`, 1);
            meta = { ...meta, inboxSeq: 1 };
          }
          ctx.set("head", head);
          ctx.set("meta", meta);
          if (inbox) driveSession(ctx);
          return ok({ version: meta.version, lastEventSeq: meta.lastEventSeq });
        },
      ),

      /**
       * Appends an inbox entry (a message, a decision, a cancellation, a steered message) once per
       * dedupe key, wakes the running drive, and sends a drive for the entry in case none runs.
       */
      enqueue: restate.handlers.object.exclusive(
        async (ctx: Writer, req: EnqueueRequest): Promise<Answer<EnqueueResult>> => {
          const [meta, existing] = await getAll<unknown>(ctx, [
            "meta",
            ...(req.dedupeKey === null ? [] : [`d:${req.dedupeKey}`]),
          ]);
          if (!meta) return fail("session_not_found", `no session with ID "${ctx.key}"`);
          if (typeof existing === "number") return ok({ seq: existing, duplicate: true });
          const current = meta as SessionMeta;
          const seq = current.inboxSeq + 1;
          const item = { ...req.entry, seq } as InboxItem;
          ctx.set(`i:${seq}`, item);
          if (req.dedupeKey !== null) ctx.set(`d:${req.dedupeKey}`, seq);
          if (current.driverWake !== null) ctx.resolveAwakeable<Wake>(current.driverWake, { entries: [item] });
          ctx.set("meta", answerWatchers(ctx, { ...current, inboxSeq: seq, driverWake: null }));
          // A drive already running applies the entry now (woken above); this one then finds nothing.
          driveSession(ctx);
          return ok({ seq, duplicate: false });
        },
      ),

      /** One transition of the session, from its drive (a one-way send, applied in the order sent). */
      commit: restate.handlers.object.exclusive(
        { ingressPrivate: true },
        async (ctx: Writer, req: CommitRequest): Promise<void> => {
          const meta = await ctx.get<SessionMeta>("meta");
          if (!meta) return;
          req.appendHistory.forEach((item, index) => {
            ctx.set(`h:${meta.historyLength + index}`, item);
          });
          ctx.set("head", req.head);
          const lastEventSeq = appendEvents(ctx, meta, req.events, req.at);
          ctx.set(
            "meta",
            answerWatchers(ctx, {
              ...meta,
              version: meta.version + 1,
              lastEventSeq,
              historyLength: meta.historyLength + req.appendHistory.length,
            }),
          );
        },
      ),

      /** Events without a head: a streaming model step's text deltas (sent through the ingress). */
      appendEvents: restate.handlers.object.exclusive(
        { idempotencyRetention: { minutes: 10 } },
        async (ctx: Writer, req: AppendEventsRequest): Promise<void> => {
          const meta = await ctx.get<SessionMeta>("meta");
          if (!meta || req.events.length === 0) return;
          const lastEventSeq = appendEvents(ctx, meta, req.events, req.at);
          ctx.set("meta", answerWatchers(ctx, { ...meta, lastEventSeq }));
        },
      ),

      /** Where a drive starts: the committed head and the inbox entries past its cursor. */
      open: restate.handlers.object.exclusive({ ingressPrivate: true }, async (ctx: Writer): Promise<Opened | null> => {
        const [meta, head] = await getAll<unknown>(ctx, ["meta", "head"]);
        if (!meta || !head) return null;
        const current = meta as SessionMeta;
        if (current.driverWake !== null) ctx.set("meta", { ...current, driverWake: null });
        const cursor = (head as SessionHead).inboxCursor;
        return {
          head: head as SessionHead,
          version: current.version,
          inbox: await readInbox(ctx, cursor, current.inboxSeq),
        };
      }),

      /**
       * A drive about to wait: the inbox entries past its cursor, or (none yet) its awakeable is
       * kept, and the next entry resolves it.
       */
      watchInbox: restate.handlers.object.exclusive(
        { ingressPrivate: true },
        async (ctx: Writer, req: WatchInboxRequest): Promise<InboxItem[]> => {
          const meta = await ctx.get<SessionMeta>("meta");
          if (!meta) return [];
          if (meta.inboxSeq > req.cursor) return readInbox(ctx, req.cursor, meta.inboxSeq);
          ctx.set("meta", { ...meta, driverWake: req.awakeableId });
          return [];
        },
      ),

      /**
       * A long poll: the session's cursor when it moved past the given one; else the awakeable is
       * kept and resolved with the cursor by the next change (null: kept, or no such session).
       */
      watchEvents: restate.handlers.object.exclusive(
        { ingressPrivate: true },
        async (ctx: Writer, req: Watcher): Promise<SessionCursor | "waiting" | null> => {
          const meta = await ctx.get<SessionMeta>("meta");
          if (!meta) return null;
          if (movedPast(meta, req)) return cursorOf(meta);
          const watchers = [...meta.watchers, req];
          while (watchers.length > maxWatchers) ctx.resolveAwakeable(watchers.shift()!.awakeableId, cursorOf(meta));
          ctx.set("meta", { ...meta, watchers });
          return "waiting";
        },
      ),

      load: restate.handlers.object.shared(async (ctx: Reader): Promise<StoredSession | null> => {
        const [meta, head] = await getAll<unknown>(ctx, ["meta", "head"]);
        if (!meta || !head) return null;
        const current = meta as SessionMeta;
        return { head: head as SessionHead, version: current.version, lastEventSeq: current.lastEventSeq };
      }),

      status: restate.handlers.object.shared(async (ctx: Reader): Promise<SessionCursor | null> => {
        const meta = await ctx.get<SessionMeta>("meta");
        return meta ? cursorOf(meta) : null;
      }),

      history: restate.handlers.object.shared(async (ctx: Reader, req: { offset: number }): Promise<HistoryItem[]> => {
        const meta = await ctx.get<SessionMeta>("meta");
        if (!meta) return [];
        const items = await getAll<HistoryItem>(
          ctx,
          range(req.offset, meta.historyLength - 1).map((index) => `h:${index}`),
        );
        return items.filter((item): item is HistoryItem => item !== null);
      }),

      inbox: restate.handlers.object.shared(async (ctx: Reader, req: { after: number }): Promise<InboxItem[]> => {
        const meta = await ctx.get<SessionMeta>("meta");
        return meta ? readInbox(ctx, req.after, meta.inboxSeq) : [];
      }),

      events: restate.handlers.object.shared(
        async (ctx: Reader, req: { after: number; limit: number }): Promise<SessionEvent[]> => {
          const meta = await ctx.get<SessionMeta>("meta");
          if (!meta) return [];
          const last = Math.min(meta.lastEventSeq, req.after + req.limit);
          const stored = await getAll<EventBody & { at: string }>(
            ctx,
            range(req.after + 1, last).map((seq) => `e:${seq}`),
          );
          return stored.flatMap((event, index) =>
            event ? [{ ...event, seq: req.after + 1 + index } as SessionEvent] : [],
          );
        },
      ),
    },
    options: {
      enableLazyState: true,
      // Each invocation writes what it changed into the state; its journal is not needed once it ends.
      journalRetention: 0,
    },
  });
}

export type SessionObject = ReturnType<typeof sessionObject>;

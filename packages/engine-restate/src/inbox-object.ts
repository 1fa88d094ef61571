/**
 * The inbox object: one Restate virtual object per session (keyed by session ID) for what comes
 * from outside while a turn may be running: the inbox (messages, decisions, cancellations, steered
 * messages) and the long polls of the clients that follow the session. Its handlers are all short,
 * so an entry is accepted at once, whatever the session's drive is doing: the drive runs in the
 * session object (`session-object.ts`), which stays locked while a turn runs.
 *
 * How an entry reaches the drive: every entry is sent to a new drive invocation of the session
 * object (its parameter), so none is ever lost; and it is signalled (a named signal, `inbox:<seq>`)
 * to every drive sent before and not known to have ended, so the one running applies it at once
 * and the drive sent for it later finds nothing to do. A signal sent to a drive that still waits
 * for the object's lock is lost: when a drive ends leaving entries it did not apply (they came
 * while it was ending), they are signalled again to the drives after it, the next of which then
 * runs.
 *
 * How a long poll is answered: at once when the inbox moved past it, or the session moved past it
 * as of the last drive's end (`known`); with "running" while a drive may be running (the poller
 * then follows the session object's live status, which the drive writes); else it is kept, and
 * answered by the next entry or by the end of the drive that entry starts (`ended`).
 *
 * State (lazy): `meta`, `i:<seq>` one entry each, `d:<dedupe key>` the seq stored under that key.
 */
import * as restate from "@restatedev/restate-sdk";
import type { ErrorCode, InboxItem } from "@durable-agents/core";
import { entrySignal, type ServiceNames } from "./names.js";
import type {
  Answer,
  CommitResult,
  CreateRequest,
  DriveRequest,
  EndedRequest,
  EnqueueRequest,
  EnqueueResult,
  InboxMeta,
  InitRequest,
  SessionCursor,
  SessionMeta,
  Wake,
  WatchAnswer,
  Watcher,
} from "./protocol.js";

/** Long polls kept per session; the oldest is answered at once when one more registers. */
const maxWatchers = 64;

type Reader = restate.ObjectSharedContext;
type Writer = restate.ObjectContext;

const fail = <T>(code: ErrorCode, message: string): Answer<T> => ({ ok: false, error: { code, message } });
const ok = <T>(value: T): Answer<T> => ({ ok: true, value });

/** Reads several state entries in one round trip. */
export async function getAll<T>(ctx: Reader, keys: readonly string[]): Promise<(T | null)[]> {
  if (keys.length === 0) return [];
  return restate.RestatePromise.all(keys.map((key) => ctx.get<T>(key) as restate.RestatePromise<T | null>));
}

export const range = (from: number, to: number): number[] =>
  Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

async function readInbox(ctx: Reader, after: number, last: number): Promise<InboxItem[]> {
  const items = await getAll<InboxItem>(
    ctx,
    range(after + 1, last).map((seq) => `i:${seq}`),
  );
  return items.filter((item): item is InboxItem => item !== null);
}

/** What this object knows of the session's cursor, never behind what the watcher already saw. */
const cursorFor = (meta: InboxMeta, watcher: SessionCursor): SessionCursor => ({
  version: Math.max(meta.known.version, watcher.version),
  lastEventSeq: Math.max(meta.known.lastEventSeq, watcher.lastEventSeq),
  inboxSeq: Math.max(meta.inboxSeq, watcher.inboxSeq),
});

const movedPast = (meta: InboxMeta, watcher: SessionCursor): boolean =>
  meta.inboxSeq > watcher.inboxSeq ||
  meta.known.version > watcher.version ||
  meta.known.lastEventSeq > watcher.lastEventSeq;

/** Answers the watchers the meta moved past; returns the others. */
function answerMoved(ctx: Writer, meta: InboxMeta, watchers: readonly Watcher[]): Watcher[] {
  const waiting: Watcher[] = [];
  for (const watcher of watchers) {
    if (movedPast(meta, watcher)) ctx.resolveAwakeable(watcher.awakeableId, cursorFor(meta, watcher));
    else waiting.push(watcher);
  }
  return waiting;
}

/**
 * Drives kept at most (oldest dropped): more drives than this wait only when entries pile up behind
 * a long turn, and a drive dropped from the list still gets every entry through its own drive.
 */
const maxDrives = 32;

/** Entries signalled again at most when a drive ends leaving entries (each has its own drive anyway). */
const maxSignalledAgain = 64;

/** Sends a drive for `entries` and adds its invocation ID to the meta's drives. */
async function sendDrive(
  ctx: Writer,
  names: ServiceNames,
  meta: InboxMeta,
  entries: readonly InboxItem[],
): Promise<InboxMeta> {
  const drives = meta.drives ?? [];
  const handle = ctx.genericSend({
    service: names.session,
    method: "drive",
    key: ctx.key,
    parameter: { entries } satisfies DriveRequest,
    inputSerde: restate.serde.json,
  });
  const id = await handle.invocationId;
  return { ...meta, drives: [...drives, id].slice(-maxDrives) };
}

/** Hands the entry to the drives that may be running (the one that is receives it; signals to the others are lost). */
function signalDrives(ctx: Writer, meta: InboxMeta, item: InboxItem): void {
  for (const id of meta.drives ?? []) {
    ctx
      .invocation(restate.InvocationIdParser.fromString(id))
      .signal<Wake>(entrySignal(item.seq))
      .resolve({ entries: [item] });
  }
}

export function inboxObject(names: ServiceNames) {
  return restate.object({
    name: names.inbox,
    description: "The inbox and the long polls of a Durable Agents session.",
    handlers: {
      /** Creates the session (its head and first events in the session object), optionally with its first entry. */
      create: restate.handlers.object.exclusive(
        async (ctx: Writer, req: CreateRequest): Promise<Answer<CommitResult>> => {
          const head = req.session.head;
          if (head.sessionId !== ctx.key) return fail("invalid_input", `head is of session "${head.sessionId}"`);
          if ((await ctx.get<InboxMeta>("meta")) !== null) {
            return fail("session_state", `a session with ID "${ctx.key}" already exists`);
          }
          const init: InitRequest = { head, events: req.session.events, at: req.at };
          const created = await ctx.genericCall<InitRequest, CommitResult>({
            service: names.session,
            method: "init",
            key: ctx.key,
            parameter: init,
            inputSerde: restate.serde.json,
            outputSerde: restate.serde.json,
          });
          let meta: InboxMeta = {
            inboxSeq: 0,
            drives: [],
            watchers: [],
            known: { version: created.version, lastEventSeq: created.lastEventSeq },
            active: false,
          };
          const inbox = req.session.inbox;
          if (inbox) {
            const item = { ...inbox.entry, seq: 1 } as InboxItem;
            ctx.set("i:1", item);
            if (inbox.dedupeKey !== null) ctx.set(`d:${inbox.dedupeKey}`, 1);
            meta = await sendDrive(ctx, names, { ...meta, inboxSeq: 1, active: true }, [item]);
          }
          ctx.set("meta", meta);
          return ok(created);
        },
      ),

      /**
       * Appends an entry once per dedupe key, signals it to the drives that may be running, and
       * sends a drive for the entry (which finds nothing to do when the running drive applied it).
       */
      enqueue: restate.handlers.object.exclusive(
        async (ctx: Writer, req: EnqueueRequest): Promise<Answer<EnqueueResult>> => {
          const [stored, existing] = await getAll<unknown>(ctx, [
            "meta",
            ...(req.dedupeKey === null ? [] : [`d:${req.dedupeKey}`]),
          ]);
          if (!stored) return fail("session_not_found", `no session with ID "${ctx.key}"`);
          if (typeof existing === "number") return ok({ seq: existing, duplicate: true });
          let meta = stored as InboxMeta;
          const seq = meta.inboxSeq + 1;
          const item = { ...req.entry, seq } as InboxItem;
          ctx.set(`i:${seq}`, item);
          if (req.dedupeKey !== null) ctx.set(`d:${req.dedupeKey}`, seq);
          meta = { ...meta, inboxSeq: seq, active: true };
          // Every watcher saw an older inbox: answered now.
          meta = { ...meta, watchers: answerMoved(ctx, meta, meta.watchers) };
          signalDrives(ctx, meta, item);
          meta = await sendDrive(ctx, names, meta, [item]);
          ctx.set("meta", meta);
          return ok({ seq, duplicate: false });
        },
      ),

      /** A drive ended: where the session is now; the long polls it moved past are answered. */
      ended: restate.handlers.object.exclusive(
        { ingressPrivate: true },
        async (ctx: Writer, req: EndedRequest): Promise<void> => {
          const stored = await ctx.get<InboxMeta>("meta");
          if (!stored) return;
          let meta: InboxMeta = {
            ...stored,
            known: {
              version: Math.max(stored.known.version, req.version),
              lastEventSeq: Math.max(stored.known.lastEventSeq, req.lastEventSeq),
            },
          };
          // Restate runs a key's drives in the order they were sent: this one and those before it ended.
          const drives = meta.drives ?? [];
          const at = drives.indexOf(req.invocationId);
          meta = { ...meta, drives: [...drives.slice(at + 1), ...(req.next ? [req.next] : [])] };
          // Entries that came while it was ending were signalled to it (too late) and to drives that
          // were still waiting for the object (lost): again, now that the next one runs.
          if (meta.inboxSeq > req.inboxCursor && (meta.drives ?? []).length > 0) {
            const from = Math.max(req.inboxCursor, meta.inboxSeq - maxSignalledAgain);
            for (const item of await readInbox(ctx, from, meta.inboxSeq)) signalDrives(ctx, meta, item);
          }
          // Entries the drive did not apply go to the drives sent for them: the session runs on.
          meta = { ...meta, active: req.handover || meta.inboxSeq > req.inboxCursor };
          meta = { ...meta, watchers: answerMoved(ctx, meta, meta.watchers) };
          ctx.set("meta", meta);
        },
      ),

      /**
       * A long poll (from the watch service): moved (the session moved past it as far as this object
       * knows), running (a drive may be running: follow the session's status), waiting (the
       * awakeable is kept), or null when there is no such session.
       */
      watchEvents: restate.handlers.object.exclusive(
        { ingressPrivate: true },
        async (ctx: Writer, req: Watcher): Promise<WatchAnswer | null> => {
          const stored = await ctx.get<InboxMeta>("meta");
          if (!stored) return null;
          if (movedPast(stored, req)) return { state: "moved", cursor: cursorFor(stored, req) };
          if (stored.active) {
            // The drive's own status says whether it still runs: its end reaches this object a
            // moment after its last write (\`ended\`), and a poller that saw that write asks meanwhile.
            const live = await ctx.genericCall<null, SessionMeta | null>({
              service: names.session,
              method: "status",
              key: ctx.key,
              parameter: null,
              inputSerde: restate.serde.json,
              outputSerde: restate.serde.json,
            });
            const settled =
              live !== null &&
              live.running !== true &&
              live.inboxCursor !== undefined &&
              live.inboxCursor >= stored.inboxSeq;
            if (!settled) return { state: "running", inboxSeq: stored.inboxSeq };
            if (live.version > req.version || live.lastEventSeq > req.lastEventSeq) {
              const cursor = cursorFor(stored, req);
              return {
                state: "moved",
                cursor: {
                  ...cursor,
                  version: Math.max(cursor.version, live.version),
                  lastEventSeq: Math.max(cursor.lastEventSeq, live.lastEventSeq),
                },
              };
            }
          }
          const watchers = [...stored.watchers, req];
          while (watchers.length > maxWatchers) {
            const oldest = watchers.shift()!;
            ctx.resolveAwakeable(oldest.awakeableId, cursorFor(stored, oldest));
          }
          ctx.set("meta", { ...stored, watchers });
          return { state: "waiting" };
        },
      ),

      /** The entries after `after` (a client's read, or a drive that found a gap in what it was handed). */
      inbox: restate.handlers.object.shared(async (ctx: Reader, req: { after: number }): Promise<InboxItem[]> => {
        const meta = await ctx.get<InboxMeta>("meta");
        return meta ? readInbox(ctx, req.after, meta.inboxSeq) : [];
      }),

      /** The seq of the last entry, or null when there is no such session. */
      inboxSeq: restate.handlers.object.shared(async (ctx: Reader): Promise<number | null> => {
        const meta = await ctx.get<InboxMeta>("meta");
        return meta ? meta.inboxSeq : null;
      }),
    },
    options: {
      enableLazyState: true,
      // Each invocation writes what it changed into the state; its journal is not needed once it ends.
      journalRetention: 0,
    },
  });
}

export type InboxObject = ReturnType<typeof inboxObject>;

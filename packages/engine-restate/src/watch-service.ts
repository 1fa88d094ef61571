/**
 * The watch service: a long poll on one session. `next` answers with the session's cursor (version,
 * last event, last inbox entry) as soon as it moved past the one given, or null after `timeoutMs`
 * (and at once for a session that does not exist). A first poll (a cursor of -1) gets the current
 * cursor at once. Otherwise its awakeable is registered with the inbox object, which answers it, or
 * hands it to the running drive, which answers it in the transition that moves the session: nobody
 * polls.
 */
import * as restate from "@restatedev/restate-sdk";
import type { ServiceNames } from "./names.js";
import type { NextRequest, SessionCursor, SessionMeta, Watcher } from "./protocol.js";

export function watchService(names: ServiceNames) {
  return restate.service({
    name: names.watch,
    description: "Long polls on Durable Agents sessions: answers once a session moves.",
    handlers: {
      next: async (ctx: restate.Context, req: NextRequest): Promise<SessionCursor | null> => {
        const call = <T>(service: string, method: string, parameter: unknown) =>
          ctx.genericCall<unknown, T>({
            service,
            method,
            key: req.sessionId,
            parameter,
            inputSerde: restate.serde.json,
            outputSerde: restate.serde.json,
          });
        if (req.version < 0) {
          const [meta, inboxSeq] = await restate.RestatePromise.all([
            call<SessionMeta | null>(names.session, "status", null),
            call<number | null>(names.inbox, "inboxSeq", null),
          ]);
          if (!meta || inboxSeq === null) return null;
          return { version: meta.version, lastEventSeq: meta.lastEventSeq, inboxSeq };
        }
        const awakeable = ctx.awakeable<SessionCursor>();
        const watcher: Watcher = {
          awakeableId: awakeable.id,
          version: req.version,
          lastEventSeq: req.lastEventSeq,
          inboxSeq: req.inboxSeq,
        };
        const now = await call<SessionCursor | "waiting" | null>(names.inbox, "watchEvents", watcher);
        if (now !== "waiting") return now;
        const timeoutMs = Math.max(0, Math.min(60_000, Number(req.timeoutMs) || 0));
        return restate.RestatePromise.race([awakeable.promise, ctx.sleep(timeoutMs).map(() => null)]);
      },
    },
    options: { journalRetention: 0 },
  });
}

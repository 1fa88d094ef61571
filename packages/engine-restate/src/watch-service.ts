/**
 * The watch service: a long poll on one session. `next` answers with the session's cursor (version,
 * last event, last inbox entry) as soon as it moved past the one given, or null after `timeoutMs`
 * (and at once for a session that does not exist). The session object resolves the waiting
 * awakeable in the same handler that moves the session, so nobody polls.
 */
import * as restate from "@restatedev/restate-sdk";
import type { ServiceNames } from "./names.js";
import type { NextRequest, SessionCursor, Watcher } from "./protocol.js";

export function watchService(names: ServiceNames) {
  return restate.service({
    name: names.watch,
    description: "Long polls on Durable Agents sessions: answers once a session moves.",
    handlers: {
      next: async (ctx: restate.Context, req: NextRequest): Promise<SessionCursor | null> => {
        const awakeable = ctx.awakeable<SessionCursor>();
        const watcher: Watcher = {
          awakeableId: awakeable.id,
          version: req.version,
          lastEventSeq: req.lastEventSeq,
          inboxSeq: req.inboxSeq,
        };
        const now = await ctx.genericCall<Watcher, SessionCursor | "waiting" | null>({
          service: names.session,
          method: "watchEvents",
          key: req.sessionId,
          parameter: watcher,
          inputSerde: restate.serde.json,
          outputSerde: restate.serde.json,
        });
        if (now !== "waiting") return now;
        const timeoutMs = Math.max(0, Math.min(60_000, Number(req.timeoutMs) || 0));
        return restate.RestatePromise.race([awakeable.promise, ctx.sleep(timeoutMs).map(() => null)]);
      },
    },
    options: { journalRetention: 0 },
  });
}
